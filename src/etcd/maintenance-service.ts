/**
 * etcd's Maintenance service (etcdserverpb.Maintenance) on the lean gRPC path, over an
 * EtcdMaintenanceBackend (a cluster member's, or a single node's), and the Auth service's
 * refusal. Per call (docs/etcd.md, "Cluster and Maintenance"):
 * - Status: ETCD_API_VERSION, the store's size (dbSize = dbSizeInUse: the table files
 *   plus the memtables; an LSM has no free pages), leader, Raft index, term and applied
 *   index, learner, and the alarms as `errors`.
 * - HashKV: hash-kv.ts over the member's multi-version store, with its compacted revision.
 * - Hash (etcd: testing only): the HashKV of the current revision.
 * - Defragment: a compaction of the whole store (AdminBackend.compactRange).
 * - Snapshot: a checkpoint of the store packed as snapshot-archive.ts, streamed in chunks
 *   with the bytes remaining after each.
 * - MoveLeader: the backend's leadership transfer.
 * - Alarm: GET lists the alarms, ACTIVATE and DEACTIVATE change them through the backend.
 * Failures are etcd's statuses (etcd-errors.ts).
 */
import { tmpdir } from "node:os";
import { create, type DescMessage } from "@bufbuild/protobuf";
import type { AdminBackend } from "../db/admin-backend.js";
import { KvError } from "../errors.js";
import type { GrpcServer } from "../grpc/grpc-server.js";
import { type MethodKind, protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import type { ServerCall } from "../grpc/server-call.js";
import { GrpcError, Status } from "../grpc/status.js";
import {
  AlarmMemberSchema,
  AlarmRequest_AlarmAction,
  AlarmRequestSchema,
  AlarmResponseSchema,
  AlarmType,
  Auth,
  DefragmentRequestSchema,
  DefragmentResponseSchema,
  file_etcd_api_etcdserverpb_rpc,
  HashKVRequestSchema,
  HashKVResponseSchema,
  HashRequestSchema,
  HashResponseSchema,
  Maintenance,
  MoveLeaderRequestSchema,
  MoveLeaderResponseSchema,
  SnapshotRequestSchema,
  type SnapshotResponse,
  SnapshotResponseSchema,
  StatusRequestSchema,
  StatusResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { type FileSystem, joinPath } from "../vfs/file-system.js";
import {
  type EtcdClusterBackend,
  etcdUnary,
  headerOf,
  registerEtcdCluster,
} from "./cluster-service.js";
import type { EtcdCallOptions, EtcdHeaderIds } from "./etcd-backend.js";
import { toEtcdGrpcError } from "./etcd-errors.js";
import { type HashableMvcc, hashKv } from "./hash-kv.js";
import { packSnapshot, removeTree } from "./snapshot-archive.js";

/** "etcdserverpb.Maintenance". */
export const ETCD_MAINTENANCE_SERVICE_NAME = Maintenance.typeName;

/**
 * The version Status reports: the etcd API level served (etcd 3.4's semantics), a plain
 * semantic version as etcd's clients parse it.
 */
export const ETCD_API_VERSION = "3.4.0";

/** A member's Raft state as Status shows it (a single node: leader itself, 0s). */
export interface EtcdRaftStatus {
  readonly leader: bigint;
  readonly raftIndex: bigint;
  readonly raftTerm: bigint;
  readonly raftAppliedIndex: bigint;
  readonly isLearner: boolean;
}

/** One raised alarm. */
export interface EtcdAlarm {
  readonly memberId: bigint;
  readonly alarm: AlarmType;
}

/**
 * The alarms (alarms.ts: a single node's; src/cluster/etcd-alarms.ts: a cluster's, through
 * the log, the same on every member).
 */
export interface EtcdAlarmBackend {
  /** The raised alarms, sorted by member and type. */
  list(): Promise<EtcdAlarm[]>;
  /** `list`, possibly as read a moment ago (what the quota check asks before every write). */
  recent(): Promise<EtcdAlarm[]>;
  /** Raises `alarm` for `memberId`; resolves once applied here. */
  activate(memberId: bigint, alarm: AlarmType, options?: EtcdCallOptions): Promise<void>;
  /**
   * Clears `alarm` for `memberId` (NONE: every alarm of the member); resolves with the
   * alarms cleared, once applied here.
   */
  deactivate(memberId: bigint, alarm: AlarmType, options?: EtcdCallOptions): Promise<EtcdAlarm[]>;
}

/** What the Maintenance service needs of a member. */
export interface EtcdMaintenanceBackend {
  ids(): EtcdHeaderIds;
  raftStatus(): EtcdRaftStatus;
  /** The multi-version store (undefined: the store predates revisions). */
  mvcc(): HashableMvcc | undefined;
  /** The store's admin operations (checkpoint, compactRange, stats). */
  readonly admin: AdminBackend;
  /** The file system `admin.checkpoint` writes to (Snapshot's scratch copy). */
  readonly fs: FileSystem;
  /** Hands leadership to `target`; throws NOT_LEADER when this member does not lead. */
  moveLeader(target: bigint, options: EtcdCallOptions): Promise<void>;
  readonly alarms: EtcdAlarmBackend;
}

/** The bytes the store takes: its table files and memtables. */
export function storeBytes(admin: Pick<AdminBackend, "stats">): number {
  const s = admin.stats();
  let bytes = s.memtableBytes;
  for (const b of s.levelBytes) bytes += b;
  return bytes;
}

/** etcd's text for an alarm in Status.errors (its AlarmMember.String(): zero fields left out). */
export function alarmText(a: EtcdAlarm): string {
  const id = a.memberId === 0n ? "" : `memberID:${a.memberId} `;
  return `${id}alarm:${AlarmType[a.alarm] ?? a.alarm} `;
}

function method<I extends DescMessage, O extends DescMessage, K extends MethodKind>(
  name: string,
  kind: K,
  input: I,
  output: O,
) {
  return protobufMethod(ETCD_MAINTENANCE_SERVICE_NAME, name, kind, input, output);
}

/** Snapshots served by this process (names their scratch directories). */
let snapshots = 0;

/** etcdserverpb.Maintenance for the lean path. */
export const etcdMaintenanceService = {
  name: ETCD_MAINTENANCE_SERVICE_NAME,
  file: file_etcd_api_etcdserverpb_rpc,
  methods: {
    Alarm: method("Alarm", "unary", AlarmRequestSchema, AlarmResponseSchema),
    Status: method("Status", "unary", StatusRequestSchema, StatusResponseSchema),
    Defragment: method("Defragment", "unary", DefragmentRequestSchema, DefragmentResponseSchema),
    Hash: method("Hash", "unary", HashRequestSchema, HashResponseSchema),
    HashKV: method("HashKV", "unary", HashKVRequestSchema, HashKVResponseSchema),
    Snapshot: method("Snapshot", "server_streaming", SnapshotRequestSchema, SnapshotResponseSchema),
    MoveLeader: method("MoveLeader", "unary", MoveLeaderRequestSchema, MoveLeaderResponseSchema),
  },
} satisfies ServiceDescriptor;

/** Registers etcdserverpb.Maintenance over `backend` on `server` (behind its token and TLS). */
export function registerEtcdMaintenance(
  server: Pick<GrpcServer, "addService">,
  backend: EtcdMaintenanceBackend,
): void {
  const header = (revision = 0n) => headerOf(backend.ids(), revision);
  const mvcc = (): HashableMvcc => {
    const m = backend.mvcc();
    if (m === undefined) {
      throw new KvError(
        "FAILED_PRECONDITION",
        "the store predates revisions: etcd's API is not served (kv-engine upgrade)",
      );
    }
    return m;
  };

  async function snapshot(_req: unknown, call: ServerCall<SnapshotResponse>): Promise<void> {
    const fs = backend.fs;
    const dir = joinPath(tmpdir(), `kv-engine-snapshot-${process.pid}-${++snapshots}`);
    try {
      await fs.mkdir(dir);
      const copy = joinPath(dir, "store");
      await backend.admin.checkpoint(copy);
      const revision = BigInt(backend.mvcc()?.revision ?? 0);
      const packed = await packSnapshot(fs, copy);
      let left = packed.totalBytes;
      let first = true;
      for await (const blob of packed.chunks()) {
        if (call.ended) return;
        left -= blob.length;
        const msg = create(SnapshotResponseSchema, {
          remainingBytes: BigInt(left),
          blob,
          ...(first ? { header: header(revision) } : {}),
        });
        first = false;
        if (!call.write(msg)) await call.whenWritable();
      }
    } catch (err) {
      throw toEtcdGrpcError(err);
    } finally {
      await removeTree(fs, dir).catch(() => {});
    }
  }

  server.addService(etcdMaintenanceService, {
    Status: etcdUnary(async () => {
      const r = backend.raftStatus();
      const alarms = await backend.alarms.list();
      const bytes = BigInt(storeBytes(backend.admin));
      return create(StatusResponseSchema, {
        header: header(BigInt(backend.mvcc()?.revision ?? 0)),
        version: ETCD_API_VERSION,
        dbSize: bytes,
        dbSizeInUse: bytes,
        ...r,
        errors: alarms.map(alarmText),
      });
    }),
    HashKV: etcdUnary(async (req) => {
      const h = await hashKv(mvcc(), Number(req.revision));
      return create(HashKVResponseSchema, {
        header: header(BigInt(h.current)),
        hash: h.hash,
        compactRevision: BigInt(h.compactRevision),
      });
    }),
    Hash: etcdUnary(async () => {
      const h = await hashKv(mvcc(), 0);
      return create(HashResponseSchema, { header: header(BigInt(h.current)), hash: h.hash });
    }),
    Defragment: etcdUnary(async () => {
      await backend.admin.compactRange(undefined, undefined);
      return create(DefragmentResponseSchema, { header: header() });
    }),
    MoveLeader: etcdUnary(async (req, o) => {
      await backend.moveLeader(req.targetID, o);
      return create(MoveLeaderResponseSchema, { header: header() });
    }),
    Alarm: etcdUnary(async (req, o) => {
      let alarms: EtcdAlarm[];
      switch (req.action) {
        case AlarmRequest_AlarmAction.ACTIVATE:
          if (req.alarm === AlarmType.NONE) {
            throw new GrpcError(Status.INVALID_ARGUMENT, "etcdserver: no alarm to activate");
          }
          await backend.alarms.activate(req.memberID, req.alarm, o);
          alarms = [{ memberId: req.memberID, alarm: req.alarm }];
          break;
        case AlarmRequest_AlarmAction.DEACTIVATE:
          alarms = await backend.alarms.deactivate(req.memberID, req.alarm, o);
          break;
        default:
          alarms = (await backend.alarms.list()).filter(
            (a) =>
              (req.memberID === 0n || a.memberId === req.memberID) &&
              (req.alarm === AlarmType.NONE || a.alarm === req.alarm),
          );
      }
      return create(AlarmResponseSchema, {
        header: header(),
        alarms: alarms.map((a) =>
          create(AlarmMemberSchema, { memberID: a.memberId, alarm: a.alarm }),
        ),
      });
    }),
    Snapshot: snapshot,
  });
}

/** What every call of etcd's Auth service is answered (UNIMPLEMENTED). */
export const AUTH_UNIMPLEMENTED =
  "etcd's auth (users, roles, Authenticate) is not served by kv-engine: start the server with --auth-token-file FILE and send metadata 'authorization: Bearer <token>' (docs/etcd.md)";

/** Registers etcdserverpb.Auth with every method answering UNIMPLEMENTED, naming our token option. */
export function registerEtcdAuth(server: Pick<GrpcServer, "addService">): void {
  const methods: Record<string, ReturnType<typeof protobufMethod>> = {};
  const handlers: Record<string, () => never> = {};
  for (const m of Auth.methods) {
    methods[m.name] = protobufMethod(Auth.typeName, m.name, "unary", m.input, m.output);
    handlers[m.name] = () => {
      throw new GrpcError(Status.UNIMPLEMENTED, AUTH_UNIMPLEMENTED);
    };
  }
  const service = { name: Auth.typeName, file: file_etcd_api_etcdserverpb_rpc, methods };
  server.addService(service as ServiceDescriptor, handlers as never);
}

/** Registers etcd's Cluster, Maintenance and (refusing) Auth services over `backend`. */
export function registerEtcdMaintenanceServices(
  server: Pick<GrpcServer, "addService">,
  backend: EtcdClusterBackend & EtcdMaintenanceBackend,
): void {
  registerEtcdCluster(server, backend);
  registerEtcdMaintenance(server, backend);
  registerEtcdAuth(server);
}
