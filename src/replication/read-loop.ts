/**
 * Linearizable reads (docs/cluster.md, "Reads"), as etcd's read loop: every read waiting
 * when no round is in flight joins one round, a single `readIndex` with a unique context;
 * when its ReadState comes out of a Ready, the round's reads wait until this member has
 * applied the ReadState's index, then run against the local store. Raft confirms the
 * index only after a majority acknowledged the leader's heartbeat round (and only once a
 * new leader committed an entry of its term), so a member cut off from the majority never
 * answers: its reads fail with UNAVAILABLE at their deadline.
 *
 * A round lost on the way (a leader change, a dropped message) is retried: after
 * `retryTicks` ticks without its ReadState, or at once when the leader changes, its reads
 * join the next round. Reads that wait while no leader is known stay queued until one is.
 */
import type { AbortSignalLike } from "../db/commit-queue.js";
import type { ReadState } from "../raft/types.js";

interface PendingRead {
  /** The read index once confirmed. */
  index: number | undefined;
  resolve(): void;
  reject(err: unknown): void;
  settled: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  unlisten: (() => void) | undefined;
}

export interface ReadLoopHost {
  /** Asks Raft for a read index with `context`; throws when no leader is known. */
  readIndex(context: Uint8Array): void;
  /** The index this member has applied (visible to reads). */
  applied(): number;
  /** There is work for the driver (a readIndex call was made). */
  poke(): void;
  /** The error of a read that timed out (`waitingFor`: the confirmed index it waited to apply). */
  timeoutError(timeoutMs: number, why: string, waitingFor: number | undefined): unknown;
}

interface Round {
  readonly context: string;
  readonly reads: PendingRead[];
  ticks: number;
}

export class ReadLoop {
  private queue: PendingRead[] = [];
  private round: Round | undefined;
  /** Confirmed rounds waiting for the apply of their index, in confirmation order. */
  private confirmed: Array<{ index: number; reads: PendingRead[] }> = [];
  private serial = 0;
  private readonly prefix = Math.floor(Math.random() * 2 ** 32);
  /** Counters for stats. */
  rounds = 0;
  served = 0;

  constructor(
    private readonly host: ReadLoopHost,
    private readonly retryTicks: number,
  ) {}

  /** Resolves once a read started now may run against the local store (see the module comment). */
  wait(timeoutMs: number, signal: AbortSignalLike | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const r: PendingRead = {
        index: undefined,
        resolve,
        reject,
        settled: false,
        timer: undefined,
        unlisten: undefined,
      };
      const fail = (why: string) => () => {
        if (r.settled) return;
        settle(r);
        reject(this.host.timeoutError(timeoutMs, why, r.index));
      };
      r.timer = setTimeout(fail("timed out"), timeoutMs);
      if (signal !== undefined) {
        if (signal.aborted) {
          fail("was cancelled")();
          return;
        }
        const onAbort = fail("was cancelled");
        signal.addEventListener("abort", onAbort, { once: true });
        r.unlisten = () => signal.removeEventListener("abort", onAbort);
      }
      this.queue.push(r);
      this.pump();
    });
  }

  /** Starts a round if reads are queued and none is in flight. */
  pump(): void {
    if (this.round !== undefined) return;
    const reads = this.queue.filter((r) => !r.settled);
    this.queue = [];
    if (reads.length === 0) return;
    const ctx = Buffer.allocUnsafe(12);
    ctx.writeUInt32BE(this.prefix, 0);
    ctx.writeUIntBE(++this.serial, 4, 6);
    ctx.writeUInt16BE(0, 10);
    try {
      this.host.readIndex(ctx);
    } catch {
      // No leader known: the reads stay queued until one is (or their deadline).
      this.queue = reads;
      return;
    }
    this.rounds++;
    this.round = { context: ctx.toString("hex"), reads, ticks: 0 };
    this.host.poke();
  }

  /** ReadStates from a Ready. */
  onReadStates(states: readonly ReadState[]): void {
    for (const rs of states) {
      const round = this.round;
      if (round === undefined || Buffer.from(rs.context).toString("hex") !== round.context)
        continue;
      this.round = undefined;
      for (const r of round.reads) r.index = rs.index;
      this.confirmed.push({ index: rs.index, reads: round.reads });
    }
    this.onApplied(this.host.applied());
    this.pump();
  }

  /** This member applied through `applied`: serves the confirmed rounds it covers. */
  onApplied(applied: number): void {
    if (this.confirmed.length === 0) return;
    const keep: Array<{ index: number; reads: PendingRead[] }> = [];
    for (const c of this.confirmed) {
      if (c.index > applied) {
        keep.push(c);
        continue;
      }
      for (const r of c.reads) {
        if (r.settled) continue;
        settle(r);
        this.served++;
        r.resolve();
      }
    }
    this.confirmed = keep;
  }

  /** One tick passed: a round in flight too long is retried. */
  onTick(): void {
    const round = this.round;
    if (round === undefined) {
      this.pump();
      return;
    }
    if (++round.ticks >= this.retryTicks) this.retry();
  }

  /** The leader changed: a round in flight may be lost with the old leader; retry it. */
  onLeaderChange(): void {
    if (this.round !== undefined) this.retry();
    else this.pump();
  }

  /** Rejects every read (closing). */
  rejectAll(err: unknown): void {
    const all = [
      ...this.queue,
      ...(this.round?.reads ?? []),
      ...this.confirmed.flatMap((c) => c.reads),
    ];
    this.queue = [];
    this.round = undefined;
    this.confirmed = [];
    for (const r of all) {
      if (r.settled) continue;
      settle(r);
      r.reject(err);
    }
  }

  private retry(): void {
    const round = this.round!;
    this.round = undefined;
    this.queue = [...round.reads, ...this.queue];
    this.pump();
  }
}

function settle(r: PendingRead): void {
  r.settled = true;
  if (r.timer !== undefined) clearTimeout(r.timer);
  r.unlisten?.();
}
