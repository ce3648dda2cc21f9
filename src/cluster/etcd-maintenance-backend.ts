/**
 * etcd's Cluster and Maintenance services (src/etcd/) over a cluster member: membership
 * through the ReplicatedStore's changes, with etcd's checks and errors first; Status from
 * the member's Raft state; MoveLeader through transferLeadership (only the leader moves
 * leadership, as etcd); the store's admin operations for Defragment and Snapshot.
 *
 * MemberAdd with is_learner adds a learner that stays one until MemberPromote (etcd allows
 * one such learner: "too many learner members"); without it, our add: a learner the leader
 * promotes once caught up. MemberPromote checks readiness as etcd (the learner's match
 * index at least 90% of the leader's last index) when it reaches the leader; a follower,
 * which does not know the learner's progress (etcd forwards the call to the leader),
 * refuses a learner that has not published its name and client address (not started)
 * and otherwise proposes the promotion.
 */
import type { AdminBackend } from "../db/admin-backend.js";
import type { EtcdClusterBackend, EtcdMemberRecord } from "../etcd/cluster-service.js";
import type { EtcdCallOptions, EtcdHeaderIds } from "../etcd/etcd-backend.js";
import { EtcdError } from "../etcd/etcd-errors.js";
import type { HashableMvcc } from "../etcd/hash-kv.js";
import type {
  EtcdAlarmBackend,
  EtcdMaintenanceBackend,
  EtcdRaftStatus,
} from "../etcd/maintenance-service.js";
import type { MemberId, MemberInfo } from "../replication/members.js";
import type { ReplicatedStore } from "../replication/replicated-store.js";
import type { FileSystem } from "../vfs/file-system.js";

/** etcd's readyPercent: a learner is promotable once its match is 90% of the leader's. */
const READY_FRACTION = 0.9;
/** etcd's maxLearners. */
const MAX_LEARNERS = 1;

function record(m: MemberInfo): EtcdMemberRecord {
  return {
    id: BigInt(m.id),
    name: m.name,
    peerAddress: m.peerAddress,
    clientAddress: m.clientAddress,
    learner: m.learner,
  };
}

function signalOf(o: EtcdCallOptions) {
  return o.signal === undefined ? {} : { signal: o.signal };
}

export interface ReplicatedMaintenanceOptions {
  /** "https" when peers use TLS. */
  readonly peerScheme: string;
  /** "https" when the client port has TLS. */
  readonly clientScheme: string;
  readonly alarms: EtcdAlarmBackend;
  /** The member's file system. */
  readonly fs: FileSystem;
}

export class ReplicatedEtcdMaintenance implements EtcdClusterBackend, EtcdMaintenanceBackend {
  readonly peerScheme: string;
  readonly clientScheme: string;
  readonly admin: AdminBackend;
  readonly alarms: EtcdAlarmBackend;
  readonly fs: FileSystem;

  constructor(
    private readonly store: ReplicatedStore,
    o: ReplicatedMaintenanceOptions,
  ) {
    this.peerScheme = o.peerScheme;
    this.clientScheme = o.clientScheme;
    this.alarms = o.alarms;
    this.fs = o.fs;
    this.admin = store.admin();
  }

  ids(): EtcdHeaderIds {
    return {
      clusterId: BigInt(this.store.clusterId),
      memberId: BigInt(this.store.memberId),
      raftTerm: BigInt(this.store.term),
    };
  }

  members(): EtcdMemberRecord[] {
    return this.store.members().map(record);
  }

  /** The member `id` names; throws MEMBER_NOT_FOUND. */
  private member(id: bigint): MemberInfo {
    const n = Number(id);
    const m = this.store.members().find((x) => x.id === n);
    if (m === undefined) throw new EtcdError("MEMBER_NOT_FOUND");
    return m;
  }

  private checkPeerAddress(peerAddress: string, except?: MemberId): void {
    if (this.store.members().some((x) => x.id !== except && x.peerAddress === peerAddress))
      throw new EtcdError("PEER_URL_EXIST");
  }

  async add(peerAddress: string, learner: boolean, o: EtcdCallOptions): Promise<EtcdMemberRecord> {
    this.checkPeerAddress(peerAddress);
    if (learner && this.store.members().filter((x) => x.learner).length >= MAX_LEARNERS)
      throw new EtcdError("TOO_MANY_LEARNERS");
    const added = await this.store.addMember(
      { name: "", peerAddress, awaitPromote: learner },
      signalOf(o),
    );
    return record(added);
  }

  async remove(id: bigint, o: EtcdCallOptions): Promise<void> {
    await this.store.removeMember(this.member(id).id, signalOf(o));
  }

  async update(id: bigint, peerAddress: string, o: EtcdCallOptions): Promise<void> {
    const m = this.member(id);
    this.checkPeerAddress(peerAddress, m.id);
    if (m.peerAddress === peerAddress) return;
    await this.store.updateMember(m.id, peerAddress, signalOf(o));
  }

  async promote(id: bigint, o: EtcdCallOptions): Promise<void> {
    const m = this.member(id);
    if (!m.learner) throw new EtcdError("MEMBER_NOT_LEARNER");
    const s = this.store.status();
    if (s.role === "leader") {
      const match = this.store.members().find((x) => x.id === m.id)?.progress?.match ?? 0;
      if (match < s.lastIndex * READY_FRACTION) throw new EtcdError("LEARNER_NOT_READY");
    } else if (m.name === "" || m.clientAddress === "") {
      // A follower does not know the learner's progress; one that never published its
      // name and address has not started (nor caught up with its own addition).
      throw new EtcdError("LEARNER_NOT_READY");
    }
    await this.store.promoteMember(m.id, signalOf(o));
  }

  raftStatus(): EtcdRaftStatus {
    const s = this.store.status();
    return {
      leader: BigInt(s.leader),
      raftIndex: BigInt(s.commit),
      raftTerm: BigInt(s.term),
      raftAppliedIndex: BigInt(s.applied),
      isLearner: s.role === "learner",
    };
  }

  mvcc(): HashableMvcc | undefined {
    return this.store.localMvcc();
  }

  async moveLeader(target: bigint): Promise<void> {
    if (this.store.status().role !== "leader") throw new EtcdError("NOT_LEADER");
    const n = Number(target);
    const m = this.store.members().find((x) => x.id === n);
    if (m === undefined || m.learner) throw new EtcdError("BAD_LEADER_TRANSFEREE");
    await this.store.transferLeadership(n);
  }
}
