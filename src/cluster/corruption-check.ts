/**
 * etcd's corruption check (its leader's periodic HashKV comparison, raising CORRUPT), run
 * through the log: every `intervalMs` the leader hashes its multi-version store
 * (src/etcd/hash-kv.ts) at its revision R and proposes the result (mvcc-request.ts kind
 * "hashCheck"). Every member, once it applied that entry (so it is at R or past it),
 * hashes its own store at R off the apply path and compares: a different hash with the
 * same compacted revision raises CORRUPT for itself through the log (every member then
 * lists it, and etcd's API refuses writes: quota.ts). A member that cannot hash R (a
 * compaction passed it) or whose compacted revision differs skips that round.
 */
import { create } from "@bufbuild/protobuf";
import { hashKv } from "../etcd/hash-kv.js";
import type { EtcdAlarmBackend } from "../etcd/maintenance-service.js";
import {
  AlarmType,
  HashKVResponseSchema,
  ResponseHeaderSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { ReplicationEvent } from "../replication/events.js";
import type { ReplicatedStore } from "../replication/replicated-store.js";

/** What a check found on this member. */
export interface CorruptionFound {
  readonly revision: number;
  readonly leader: number;
  readonly leaderHash: number;
  readonly hash: number;
}

export class CorruptionCheck {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly store: ReplicatedStore,
    private readonly alarms: EtcdAlarmBackend,
    private readonly onCorruption: (found: CorruptionFound) => void = () => {},
  ) {}

  /** Proposes a check every `intervalMs` while this member leads (0: never). */
  start(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.timer = setInterval(() => void this.propose(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Leader: hashes the store now and proposes the check (one at a time; failures skip a round). */
  async propose(): Promise<void> {
    const mvcc = this.store.localMvcc();
    if (this.running || mvcc === undefined || this.store.status().role !== "leader") return;
    this.running = true;
    try {
      const h = await hashKv(mvcc, 0);
      const request = create(HashKVResponseSchema, {
        header: create(ResponseHeaderSchema, {
          memberId: BigInt(this.store.memberId),
          revision: BigInt(h.revision),
        }),
        hash: h.hash,
        compactRevision: BigInt(h.compactRevision),
      });
      await this.store.request({ kind: "hashCheck", request });
    } catch {
      // A leader change, a compaction meanwhile: the next round checks.
    } finally {
      this.running = false;
    }
  }

  /** The member's event listener: a check applied here is compared. */
  onEvent(e: ReplicationEvent): void {
    if (e.type !== "hash-check" || e.leader === this.store.memberId) return;
    void this.verify(e);
  }

  private async verify(e: Extract<ReplicationEvent, { type: "hash-check" }>): Promise<void> {
    const mvcc = this.store.localMvcc();
    if (mvcc === undefined) return;
    let mine: Awaited<ReturnType<typeof hashKv>>;
    try {
      mine = await hashKv(mvcc, e.revision);
    } catch {
      return;
    }
    if (mine.compactRevision !== e.compactRevision || mine.hash === e.hash) return;
    this.onCorruption({
      revision: e.revision,
      leader: e.leader,
      leaderHash: e.hash,
      hash: mine.hash,
    });
    await this.alarms.activate(BigInt(this.store.memberId), AlarmType.CORRUPT).catch(() => {});
  }
}
