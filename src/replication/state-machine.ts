/**
 * The state machine seam: what a member applies its committed entries to (docs/cluster.md,
 * "Apply"). The member (replicated-store.ts and its parts) runs Raft, the log, the peers
 * and the snapshot files; the machine decides what an entry means, how its state is
 * stored, how it is checkpointed and how a received one replaces it. kv-state-machine.ts
 * is the key-value machine the replicated store serves.
 *
 * Order of calls, all from the member's Ready cycle (node-driver.ts), one at a time:
 * `install` (a snapshot from the leader, before the Ready is persisted), `apply`
 * (committed entries), `captureSnapshot` (the snapshot policy, after apply; its `finish`
 * runs beside later cycles, and `install` waits for it). Reads come at
 * any time: a linearizable read runs once the read loop confirmed index i and
 * `appliedIndex >= i`; its machine-specific read calls wait for `ready()` themselves.
 */
import type { HashKVResponse } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { ConfChange, Entry } from "../raft/types.js";
import type { PendingSnapshot } from "./local-snapshots.js";
import type { MemberInfo, Membership } from "./members.js";
import type { SnapshotDescriptor } from "./snapshot-descriptor.js";

/** What a machine has applied: the last entry's index and term, and the membership then. */
export interface AppliedState {
  readonly index: number;
  readonly term: number;
  readonly membership: Membership;
}

/** An applied membership change, for the member. */
export interface AppliedChange {
  readonly index: number;
  readonly change: ConfChange;
  /** False iff Raft refused it (it would have left no voter). */
  readonly applied: boolean;
  readonly membership: Membership;
  readonly member: MemberInfo | undefined;
}

/** What a machine tells its member while applying. */
export interface StateMachineHost {
  /** RawNode.applyConfChange: a membership change takes effect in Raft as it is applied. */
  applyConfChange(cc: ConfChange): void;
  /** Entry `index` is visible to reads. */
  onApplied(index: number): void;
  /** A membership change (or a member's published attributes) is visible. */
  onMembership(change: AppliedChange | undefined, membership: Membership): void;
  /** The leader's corruption check (mvcc-request.ts kind "hashCheck") is applied. */
  onHashCheck?(check: HashKVResponse): void;
}

/** A snapshot received from the leader, complete and durable (incoming-snapshot.ts). */
export interface ReceivedSnapshot {
  /** Its directory, holding the descriptor's files. */
  readonly path: string;
  readonly descriptor: SnapshotDescriptor;
  /** The machine took the directory over (renamed it): the sink must not remove it. */
  handedOver(): void;
}

export interface StateMachine {
  /** The last entry visible to reads, and its term. */
  readonly appliedIndex: number;
  readonly appliedTerm: number;
  /** Data bytes of the entries applied since open (for the snapshot policy). */
  readonly appliedBytes: number;
  /** The membership as of the last entry handed to `apply`. */
  readonly membership: Membership;
  /**
   * Applies committed `entries` in log order (those at or below the applied index are
   * skipped; a gap throws); resolves when all are visible to reads. This member's
   * proposals among them are settled with their results (proposals.ts, Settlement). A
   * rejection means the state may be damaged: the member must stop.
   */
  apply(entries: readonly Entry[]): Promise<void>;
  /** Makes the state durable through `appliedIndex`. */
  persist(): Promise<void>;
  /**
   * Takes a snapshot of the state at `index` (the applied index, term `term`) into the
   * member's local snapshots, in two halves: resolves once the snapshot's content is fixed
   * and the state durable through `index` (REQUIRES: no `apply` runs meanwhile); applies
   * may then run while the returned `finish` (REQUIRED, once) writes the snapshot. The
   * Raft log may be compacted behind `index` once `finish` resolves.
   */
  captureSnapshot(index: number, term: number): Promise<PendingSnapshot>;
  /**
   * Replaces the state with `snapshot`'s, durably (a crash leaves the old state or the
   * new); resolves with what the new state has applied, which is the snapshot's index and
   * term (else CORRUPTION). Reads wait (`ready`) meanwhile.
   */
  install(snapshot: ReceivedSnapshot): Promise<AppliedState>;
  /** Resolves once no `install` runs. */
  ready(): Promise<void>;
  /** Closes the state (the member's driver has stopped). */
  close(): Promise<void>;
}
