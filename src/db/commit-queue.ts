/**
 * Group commit: the one ordered path by which writes enter the store.
 *
 * Writers call `submit` with an encoded batch. Batches queue in call order. Whenever no
 * group is in flight, the queue head takes every queued batch (up to MAX_GROUP_BYTES),
 * gives them consecutive sequence numbers, writes them as one log append (one record per
 * batch), fdatasyncs once if any of them asked for durability, applies them to the
 * memtable, publishes the new last sequence, and only then resolves their promises.
 * Writers that arrive while a group syncs form the next group, so N concurrent durable
 * writers cost far fewer than N fdatasyncs.
 *
 * Failure: if the append or the sync fails, the log's on-disk state is unknown (after a
 * failed fsync the kernel may have dropped the dirty pages, and a retry can falsely
 * succeed). Every writer of the group gets the error (IO_ERROR, or NO_SPACE when the disk
 * is full) and `onLogFailure` is told; every queued writer and every later one is refused,
 * with READ_ONLY (NO_SPACE while the failure is a no-space one) until `resume` (after a
 * no-space failure, once the store has moved to a new log: no-space-recovery.ts) or a
 * reopen. Nothing of a failed group is applied to the memtable, so readers never see an
 * unacknowledged write, and its sequence numbers are never used again.
 *
 * Decided writes (compare-and-swap): a writer may pass, instead of a batch, a function
 * that decides the batch when its turn comes (`submitDecided`). It runs when the write's
 * group forms, after every earlier write is in the memtable and visible and before any
 * later write gets a sequence number, so what it reads and what it writes are one atomic
 * step in the store's order. A decided write always starts a group of its own (a later
 * write may join it), so that no earlier write of the same group is still unapplied when
 * it decides. A decision of "nothing" resolves the writer without a write.
 *
 * Cancellation: a writer may pass an AbortSignal. If it fires while the batch still waits
 * in the queue (e.g. behind a write stall), the batch is dropped and its promise rejects
 * with ABORTED: nothing of it is written, then or later. Once its group is formed, the
 * signal is ignored and the write completes (or fails) like any other.
 */

import { batchCount, setBatchSequence } from "../batch/write-batch.js";
import { ioError, KvError } from "../errors.js";
import type { LogWriter } from "../wal/log-writer.js";

/**
 * What a write's cancellation signal must offer: an AbortSignal does; so may a lighter
 * object (the server makes one per call, cheaper than an AbortController).
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** True iff `v` looks like an AbortSignalLike. */
export function isAbortSignalLike(v: unknown): v is AbortSignalLike {
  const s = v as Partial<AbortSignalLike> | null;
  return (
    typeof s === "object" &&
    s !== null &&
    typeof s.aborted === "boolean" &&
    typeof s.addEventListener === "function" &&
    typeof s.removeEventListener === "function"
  );
}

/** Upper bound of one group's payload, so one slow writer cannot make a huge group. */
const MAX_GROUP_BYTES = 1 << 20;
/**
 * Runs that `submit` may start on its caller's stack (lone unsynced writes) before one goes
 * through the event loop again (see CommitQueue.submit): a bound on how long a loop of
 * awaited unsynced puts keeps I/O callbacks (a finished flush, a worker's reply) waiting.
 */
const MAX_INLINE_RUNS = 16;
/** Largest batch committed on its caller's stack (see CommitQueue.submit). */
const MAX_INLINE_BYTES = 16 << 10;
/** Slots of the queue's array kept once it is empty again (see CommitQueue.queue). */
const QUEUE_KEEP = 1024;

/**
 * Decides a write at its turn (see the module comment): returns the encoded batch to
 * commit, or undefined to write nothing. What it throws rejects that writer alone.
 */
export type DecideBatch = () => Uint8Array | undefined;

interface PendingWrite {
  rep: Uint8Array;
  /** Set for a decided write: `rep` is empty until it runs. */
  decide: DecideBatch | undefined;
  sync: boolean;
  resolve: () => void;
  reject: (err: unknown) => void;
  /** Set when the writer's signal fired before its group formed: skipped, already rejected. */
  cancelled: boolean;
  /** Removes the abort listener (undefined without a signal). */
  unlisten: (() => void) | undefined;
}

/** Which log operation failed: an append or sync of a group, or a log switch. */
export type LogFailureOp = "append" | "sync" | "switch";

/** Applies a committed batch (to the memtable); its header holds its first sequence number. */
export type ApplyBatch = (rep: Uint8Array) => void;

export interface CommitStats {
  /** Batches committed. */
  batches: number;
  /** Groups written (log appends). */
  groups: number;
  /** fdatasyncs of the log issued by the write path. */
  syncs: number;
  /** Largest group so far, in batches. */
  maxGroupSize: number;
  /** Of `syncs`, those done on the event-loop thread for a lone writer. */
  blockingSyncs: number;
  /**
   * fdatasyncs started in the background because `bytesPerSync` unsynced bytes had
   * accumulated (not counted in `syncs`: no writer waits for them).
   */
  backgroundSyncs: number;
}

export class CommitQueue {
  /**
   * Queued writes in queue[head, tail); the other slots are empty. The array is kept from
   * one group to the next (no allocation per group), unless a burst made it longer than
   * QUEUE_KEEP.
   */
  private queue: Array<PendingWrite | undefined> = [];
  private tail = 0;
  private head = 0;
  /** The group being committed (see takeGroup). */
  private readonly group: PendingWrite[] = [];
  /** setImmediate's callback, made once. */
  private readonly startRun = (): void => {
    this.inlineRuns = MAX_INLINE_RUNS;
    this.run();
  };
  /** Runs `submit` may still start on its caller's stack (see MAX_INLINE_RUNS). */
  private inlineRuns = MAX_INLINE_RUNS;
  private running = false;
  private idleWaiters: Array<() => void> = [];
  private failure: KvError | undefined;
  /**
   * Told of every failure of the log's append or sync (op "append" or "sync") and of a
   * log switch (op "switch"); assigned once when the store is assembled.
   */
  onLogFailure: ((err: KvError, op: LogFailureOp) => void) | undefined;
  readonly stats: CommitStats = {
    batches: 0,
    groups: 0,
    syncs: 0,
    maxGroupSize: 0,
    blockingSyncs: 0,
    backgroundSyncs: 0,
  };

  /**
   * @param log the log writer of the current write-ahead log
   * @param apply inserts a committed batch into the memtable
   * @param lastSequence the sequence number of the newest committed entry
   * @param beforeGroup runs before each group is formed (the store makes room there: it
   *   may switch to a new memtable and log, or wait for a flush). It returns undefined
   *   when there is nothing to wait for. If it rejects, the writers of the group are
   *   rejected with that error; the queue turns read-only only if `fail` is called.
   * @param blockingLoneSync sync a group of one writer, with nobody queued behind it, on
   *   the event-loop thread (see the store option `blockingLoneSync`)
   * @param bytesPerSync once this many bytes of the log are written and not synced, start
   *   an fdatasync in the background that no writer waits for (0: never; see the store
   *   option `walBytesPerSync`)
   */
  constructor(
    private log: LogWriter,
    private readonly apply: ApplyBatch,
    private lastSequence: number,
    private logPath: string,
    private readonly beforeGroup?: () => Promise<void> | undefined,
    private readonly blockingLoneSync = false,
    private readonly bytesPerSync = 0,
  ) {}

  /** Switches to a new log; called (by beforeGroup) between groups only. */
  setLog(log: LogWriter, path: string): void {
    this.log = log;
    this.logPath = path;
  }

  /** Sequence number of the newest entry visible to readers. */
  get sequence(): number {
    return this.lastSequence;
  }

  /** The error that put the queue in read-only state, if any. */
  get error(): KvError | undefined {
    return this.failure;
  }

  /**
   * Queues an encoded batch (owned by the queue from now on). Resolves once the batch is
   * in the log (and synced when `sync`) and visible to readers. When nothing is queued or
   * in flight, an unsynced batch of at most MAX_INLINE_BYTES is committed before submit
   * returns (up to MAX_INLINE_RUNS times in a row); otherwise the queue starts in the
   * event loop's check phase, so that the writers of this turn share a group and its
   * fdatasync.
   */
  submit(rep: Uint8Array, sync: boolean, signal?: AbortSignalLike): Promise<void> {
    return this.enqueue(rep, undefined, sync, signal);
  }

  /**
   * Queues a decided write (see the module comment): `decide` runs at the write's turn;
   * resolves as `submit` does once the batch it returned is committed, or at once when it
   * returned undefined. Never committed on the caller's stack.
   */
  submitDecided(decide: DecideBatch, sync: boolean, signal?: AbortSignalLike): Promise<void> {
    return this.enqueue(NO_BATCH, decide, sync, signal);
  }

  private enqueue(
    rep: Uint8Array,
    decide: DecideBatch | undefined,
    sync: boolean,
    signal: AbortSignalLike | undefined,
  ): Promise<void> {
    if (this.failure) return Promise.reject(this.readOnlyError());
    if (signal?.aborted) return Promise.reject(abortedError(signal));
    const promise = new Promise<void>(captureSettlers);
    const w: PendingWrite = {
      rep,
      decide,
      sync,
      resolve: capturedResolve,
      reject: capturedReject,
      cancelled: false,
      unlisten: undefined,
    };
    capturedResolve = capturedReject = noop;
    if (signal !== undefined) {
      const onAbort = () => {
        w.cancelled = true;
        w.unlisten = undefined;
        w.reject(abortedError(signal));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      w.unlisten = () => signal.removeEventListener("abort", onAbort);
    }
    this.queue[this.tail++] = w;
    if (!this.running) {
      this.running = true;
      if (!sync && decide === undefined && rep.length <= MAX_INLINE_BYTES && this.inlineRuns > 0) {
        // A lone unsynced write has no fdatasync to share: commit it now, on the caller's
        // stack (the promise is settled when submit returns, unless the write must wait
        // for room), without a turn of the event loop (docs/design.md, "Write path").
        this.inlineRuns--;
        this.run();
      } else {
        // Start in the event loop's check phase, after the I/O callbacks of this turn: the
        // writers submitted by them (requests that arrived together) share the group.
        setImmediate(this.startRun);
      }
    }
    return promise;
  }

  /** Resolves when nothing is queued or in flight. */
  whenIdle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Marks the queue failed so later writes are refused: with `err` if none is recorded, or
   * if the one recorded is NO_SPACE and `err` is not (a fatal failure outranks a no-space
   * one).
   */
  fail(err: KvError): void {
    if (
      this.failure === undefined ||
      (this.failure.code === "NO_SPACE" && err.code !== "NO_SPACE")
    ) {
      this.failure = err;
    }
  }

  /**
   * A log operation outside the queue failed (`op` "switch": creating the next log, or
   * syncing the old one at a switch): the queue fails with `err` and onLogFailure is told.
   */
  logFailure(err: KvError, op: LogFailureOp): void {
    this.fail(err);
    this.onLogFailure?.(err, op);
  }

  /**
   * Accepts writes again after a no-space failure, once the store moved to a new log (or
   * found the current one intact) and made every acknowledged write durable. REQUIRES:
   * no group in flight (`whenIdle`); the failure recorded is NO_SPACE.
   */
  resume(): void {
    if (this.running) throw new Error("CommitQueue.resume: a group is in flight");
    if (this.failure?.code !== "NO_SPACE") {
      throw new Error(
        `CommitQueue.resume: the failure is not a no-space one (${this.failure?.message})`,
      );
    }
    this.failure = undefined;
  }

  /**
   * Commits groups until the queue is empty. Synchronous while nothing must be waited for
   * (an unsynced group, a blocking lone sync): a lone unsynced put then costs no promise
   * and no async frame here. A room wait or a log sync on the thread pool ends this call;
   * its continuation resumes the run. `running` stays true throughout, so only one run is
   * ever in progress.
   */
  private run(): void {
    while (this.head < this.tail) {
      const room = this.beforeGroup?.();
      if (room !== undefined) {
        room.then(this.afterRoom, this.roomFailed);
        return;
      }
      if (!this.commitGroup()) return;
    }
    this.endRun();
  }

  /** The run's continuation once beforeGroup's wait is over. */
  private readonly afterRoom = (): void => {
    if (this.failure) {
      this.rejectQueued();
      this.endRun();
      return;
    }
    if (this.commitGroup()) this.run();
  };

  /** beforeGroup's wait failed: nothing of the group was written; reject what is queued. */
  private readonly roomFailed = (err: unknown): void => {
    for (const w of this.takeQueued()) {
      w.unlisten?.();
      w.reject(err);
    }
    this.run();
  };

  /**
   * Takes the next group and writes it to the log. Returns true when the group was
   * committed (or empty: every write taken had been cancelled) and the caller goes on;
   * false when the run continues later (after a log sync on the thread pool) or ended (a
   * log failure).
   */
  private commitGroup(): boolean {
    const group = this.takeGroup();
    if (group.length === 0) return true;
    const head = group[0]!;
    if (head.decide !== undefined && !this.decideHead(head)) {
      group.shift();
      if (group.length === 0) return true;
    }
    let seq = this.lastSequence;
    let sync = false;
    for (const w of group) {
      setBatchSequence(w.rep, seq + 1);
      seq += batchCount(w.rep);
      this.log.addRecord(w.rep);
      if (w.sync) sync = true;
    }
    try {
      this.log.flush();
    } catch (err) {
      this.logFailed(group, "append", seq, err);
      return false;
    }
    try {
      if (sync) {
        this.stats.syncs++;
        if (
          this.blockingLoneSync &&
          group.length === 1 &&
          this.head === this.tail &&
          !this.log.syncing
        ) {
          // A lone durable writer: fdatasync on this thread saves the thread-pool round
          // trip (docs/design.md, "Write path"). Nobody is waiting to join the group, and
          // writers that arrive meanwhile are queued by the event loop and form the next.
          this.stats.blockingSyncs++;
          this.log.syncBlocking();
        } else {
          this.log.sync().then(
            () => {
              this.applyGroup(group, seq);
              this.run();
            },
            (err: unknown) => this.logFailed(group, "sync", seq, err),
          );
          return false;
        }
      }
    } catch (err) {
      this.logFailed(group, "sync", seq, err);
      return false;
    }
    this.applyGroup(group, seq);
    if (this.bytesPerSync > 0) this.maybeSyncInBackground();
    return true;
  }

  /**
   * Starts an fdatasync of the log that nobody waits for, when `bytesPerSync` bytes of it
   * are not yet synced and no sync is in flight: so unsynced writes reach the disk as they
   * go, and the sync that a memtable switch waits for (memtable-flushes.ts) finds little
   * left to write (RocksDB's wal_bytes_per_sync). A failure is a log failure, as a failed
   * group sync is: every later write is refused.
   */
  private maybeSyncInBackground(): void {
    const log = this.log;
    if (log.syncing || log.size - log.syncedEnd < this.bytesPerSync) return;
    this.stats.backgroundSyncs++;
    log.backgroundSync().catch((err: unknown) => {
      if (log !== this.log || this.failure !== undefined) return; // reported by its successor
      this.logFailure(ioError("write-ahead log sync failed", err, this.logPath), "sync");
    });
  }

  /**
   * Runs the decision of a decided write at the head of its group. Returns true iff it
   * has a batch to commit; otherwise the writer is settled already (resolved when the
   * decision was "nothing", rejected when deciding threw).
   */
  private decideHead(w: PendingWrite): boolean {
    let rep: Uint8Array | undefined;
    try {
      rep = w.decide!();
    } catch (err) {
      w.reject(err);
      return false;
    }
    if (rep === undefined) {
      w.resolve();
      return false;
    }
    w.rep = rep;
    return true;
  }

  /** Applies a group written to the log (ending at sequence `last`) and resolves its writers. */
  private applyGroup(group: PendingWrite[], last: number): void {
    for (const w of group) this.apply(w.rep);
    this.lastSequence = last;
    this.stats.groups++;
    this.stats.batches += group.length;
    if (group.length > this.stats.maxGroupSize) this.stats.maxGroupSize = group.length;
    for (const w of group) w.resolve();
  }

  /**
   * The log append or sync of `group` (ending at sequence `last`) failed: its writers get
   * the error, the queue turns read-only, onLogFailure is told; the run ends. The group's
   * sequence numbers are skipped: were any of its records on disk after all, no later
   * write could share a number with them.
   */
  private logFailed(
    group: PendingWrite[],
    op: "append" | "sync",
    last: number,
    err: unknown,
  ): void {
    const error = ioError(`write-ahead log ${op} failed`, err, this.logPath);
    this.fail(error);
    this.lastSequence = last;
    for (const w of group) w.reject(error);
    this.rejectQueued();
    this.endRun();
    this.onLogFailure?.(error, op);
  }

  private endRun(): void {
    this.running = false;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * The next group: queued writes not cancelled, up to MAX_GROUP_BYTES. May be empty. The
   * array is the queue's own, reused: valid until the next call.
   */
  private takeGroup(): PendingWrite[] {
    let bytes = 0;
    const group = this.group;
    let n = 0;
    let end = this.head;
    while (end < this.tail) {
      const w = this.queue[end]!;
      // A decided write heads a group of its own (see the module comment).
      if (w.decide !== undefined && n > 0 && !w.cancelled) break;
      this.queue[end] = undefined;
      end++;
      if (w.cancelled) continue;
      w.unlisten?.();
      w.unlisten = undefined;
      group[n++] = w;
      bytes += w.rep.length;
      if (bytes >= MAX_GROUP_BYTES) break;
    }
    // Not length = 0 before filling: V8 frees the backing store of an array emptied so.
    group.length = n;
    this.head = end;
    if (end === this.tail) this.resetQueue();
    return group;
  }

  /** Removes and returns every queued write. */
  private takeQueued(): PendingWrite[] {
    const rest = this.queue.slice(this.head, this.tail) as PendingWrite[];
    this.queue.fill(undefined, this.head, this.tail);
    this.resetQueue();
    return rest;
  }

  /** Empties the queue (REQUIRES every slot already cleared). */
  private resetQueue(): void {
    this.head = 0;
    this.tail = 0;
    if (this.queue.length > QUEUE_KEEP) this.queue = [];
  }

  private rejectQueued(): void {
    for (const w of this.takeQueued()) {
      w.unlisten?.();
      w.reject(this.readOnlyError());
    }
  }

  private readOnlyError(): KvError {
    if (this.failure?.code === "NO_SPACE") {
      return new KvError(
        "NO_SPACE",
        `the disk is full: the store refuses writes until space is freed, then resumes by itself (${this.failure.message})`,
        { cause: this.failure },
      );
    }
    return new KvError(
      "READ_ONLY",
      `the store refuses writes after an earlier write-ahead log failure (${this.failure?.message}); reopen it`,
      { cause: this.failure },
    );
  }
}

/** The placeholder batch of a decided write before it decides. */
const NO_BATCH = new Uint8Array(0);

// The settling functions of the promise `submit` just made, handed over by captureSettlers:
// one executor for every write instead of a new closure (and its context) per write.
function noop(): void {}
let capturedResolve: () => void = noop;
let capturedReject: (err: unknown) => void = noop;
function captureSettlers(resolve: () => void, reject: (err: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/** The error of a write whose signal fired before it was committed. */
function abortedError(signal: AbortSignalLike): KvError {
  const reason: unknown = signal.reason;
  const detail = reason instanceof Error ? `: ${reason.message}` : "";
  return new KvError("ABORTED", `write cancelled before it was committed${detail}`, {
    cause: reason,
  });
}
