/**
 * The Cluster and Maintenance backends of a single node (`kv-engine serve` without
 * --initial-cluster): MemberList answers the node itself (ID 0 as in the headers, name
 * "default" as etcd's default --name, no peer URL, its client URL); every membership
 * change is refused (FAILED_PRECONDITION, our words: a single node has no Raft log to
 * change; etcd's single member would add one). Status shows it as its own leader at Raft
 * index and term 0. MoveLeader to itself does nothing, to any other ID fails "bad leader
 * transferee".
 */
import type { AdminBackend } from "../db/admin-backend.js";
import { GrpcError, Status } from "../grpc/status.js";
import type { FileSystem } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import type { EtcdClusterBackend, EtcdMemberRecord } from "./cluster-service.js";
import type { EtcdHeaderIds } from "./etcd-backend.js";
import { EtcdError } from "./etcd-errors.js";
import type { HashableMvcc } from "./hash-kv.js";
import type {
  EtcdAlarmBackend,
  EtcdMaintenanceBackend,
  EtcdRaftStatus,
} from "./maintenance-service.js";

export const SINGLE_NODE_CHANGE_REFUSED =
  "kv-engine serve without --initial-cluster is a single node: it has no membership to change (start a cluster to add members: docs/cluster.md)";

export interface LocalMaintenanceOptions {
  readonly ids?: Partial<EtcdHeaderIds>;
  /** Where clients reach the node (`host:port`), once known. */
  readonly clientAddress: () => string;
  /** "https" when the server has TLS. */
  readonly clientScheme?: string;
  readonly admin: AdminBackend;
  /** The file system the store is on (default: the real one). */
  readonly fs?: FileSystem;
  readonly mvcc: () => HashableMvcc | undefined;
  readonly alarms: EtcdAlarmBackend;
}

export class LocalEtcdMaintenance implements EtcdClusterBackend, EtcdMaintenanceBackend {
  readonly peerScheme = "http";
  readonly clientScheme: string;
  readonly admin: AdminBackend;
  readonly fs: FileSystem;
  readonly alarms: EtcdAlarmBackend;
  private readonly headerIds: EtcdHeaderIds;

  constructor(private readonly o: LocalMaintenanceOptions) {
    this.clientScheme = o.clientScheme ?? "http";
    this.admin = o.admin;
    this.fs = o.fs ?? new RealFileSystem();
    this.alarms = o.alarms;
    this.headerIds = { clusterId: 0n, memberId: 0n, raftTerm: 0n, ...o.ids };
  }

  ids(): EtcdHeaderIds {
    return this.headerIds;
  }

  members(): EtcdMemberRecord[] {
    return [
      {
        id: this.headerIds.memberId,
        name: "default",
        peerAddress: "",
        clientAddress: this.o.clientAddress(),
        learner: false,
      },
    ];
  }

  add(): Promise<EtcdMemberRecord> {
    return Promise.reject(new GrpcError(Status.FAILED_PRECONDITION, SINGLE_NODE_CHANGE_REFUSED));
  }

  remove(): Promise<void> {
    return Promise.reject(new GrpcError(Status.FAILED_PRECONDITION, SINGLE_NODE_CHANGE_REFUSED));
  }

  update(): Promise<void> {
    return this.remove();
  }

  promote(): Promise<void> {
    return this.remove();
  }

  raftStatus(): EtcdRaftStatus {
    return {
      leader: this.headerIds.memberId,
      raftIndex: 0n,
      raftTerm: 0n,
      raftAppliedIndex: 0n,
      isLearner: false,
    };
  }

  mvcc(): HashableMvcc | undefined {
    return this.o.mvcc();
  }

  async moveLeader(target: bigint): Promise<void> {
    if (target !== this.headerIds.memberId) throw new EtcdError("BAD_LEADER_TRANSFEREE");
  }
}
