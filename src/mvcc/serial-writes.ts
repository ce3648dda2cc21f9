/**
 * The write queue of a multi-version store served without Raft (a single node): write
 * transactions run one at a time in arrival order, each begun once the previous one's
 * `end` was called (so their batches still reach the store together, group-committed),
 * each answered once it is visible, so that a read that starts after an answer sees it.
 */
import type { Mvcc, MvccWrite } from "./types.js";

export class SerialWrites {
  /** Resolves when the last queued write may begin the next. */
  private tail: Promise<void> = Promise.resolve();

  /**
   * `recover`, when given, runs in each write's turn before it begins: after a failed
   * write it may make the store accept writes again (MvccStore.recover).
   */
  constructor(
    private readonly mvcc: Mvcc,
    private readonly recover?: () => Promise<boolean>,
  ) {}

  /**
   * Runs `op` in a write transaction of its own, after every earlier one; resolves with
   * its result once the transaction is visible. An `op` that throws must have written
   * nothing (its transaction is ended, empty or not, and the error rethrown).
   */
  async run<T>(op: (w: MvccWrite) => Promise<T>): Promise<T> {
    const release = await this.turn();
    let w: MvccWrite;
    try {
      await this.recover?.();
      w = this.mvcc.write();
    } catch (err) {
      release();
      throw err;
    }
    let result: T | undefined;
    let failure: { err: unknown } | undefined;
    try {
      result = await op(w);
    } catch (err) {
      failure = { err };
    }
    const ended = w.end();
    release();
    await ended;
    if (failure !== undefined) throw failure.err;
    return result as T;
  }

  /**
   * Runs `op` on the store in turn, no write transaction open (a compaction:
   * Mvcc.compact; several write transactions one after another: a lease Tick); resolves
   * with what it returned once it settled. The next write begins after that: `op` must
   * have ended every write it began.
   */
  async exclusive<T>(op: (mvcc: Mvcc) => T | Promise<T>): Promise<T> {
    const release = await this.turn();
    try {
      await this.recover?.();
      return await op(this.mvcc);
    } finally {
      release();
    }
  }

  /** Waits for the earlier writes; call the function returned when the next may begin. */
  private async turn(): Promise<() => void> {
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise((resolve) => {
      release = resolve;
    });
    await previous;
    return release;
  }
}
