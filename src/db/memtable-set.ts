/**
 * MemtableSet: the store's memtables and the write-ahead logs they were written to: the
 * active memtable (receiving committed writes, in the log the commit queue appends to), the
 * immutable ones waiting for (or in) their flush, newest first, and the read view over
 * them and the current version. No I/O: the log switch and the flushes
 * (memtable-flushes.ts) do the file work and then change the set in one synchronous step.
 *
 * Read views are immutable: every change installs a new one (`installView`), and a get,
 * iterator or snapshot keeps the view it started with (read-view.ts).
 */
import type { BatchRangeVisitor } from "../batch/write-batch.js";
import { ArenaPool } from "../memtable/arena-pool.js";
import { Memtable } from "../memtable/memtable.js";
import type { VersionSet } from "../version/version-set.js";
import type { LogWriter } from "../wal/log-writer.js";
import { ReadView } from "./read-view.js";

export class MemtableSet {
  /** The active memtable. */
  mem: Memtable;
  /** Immutable memtables, newest first (at most maxWriteBufferNumber - 1). */
  imms: readonly Memtable[] = [];
  /**
   * immLogs[i]: the log imms[i] was written to (its last one). Once the oldest immutable
   * memtable is flushed, the logs before the next one's log hold nothing unflushed.
   */
  private immLogs: readonly number[] = [];
  /** The log receiving writes (the active memtable's), and its number. */
  log: LogWriter;
  logNumber: number;
  /** What a read started now sees. */
  view: ReadView;
  /**
   * Arena chunks of flushed memtables, for the next ones (src/memtable/arena-pool.ts): a
   * chunk the pool cannot take is freed only once both threads' collectors drop it.
   */
  readonly arenaPool: ArenaPool;

  /**
   * @param mem the active memtable (recovered from the logs at open)
   * @param log the log `mem`'s writes go to, numbered `logNumber`
   * @param poolBytes bytes of arena chunks the pool keeps
   */
  constructor(
    mem: Memtable,
    log: LogWriter,
    logNumber: number,
    private readonly versions: VersionSet,
    poolBytes: number,
  ) {
    this.mem = mem;
    this.log = log;
    this.logNumber = logNumber;
    this.arenaPool = new ArenaPool(poolBytes);
    this.view = new ReadView(mem, [], versions.current);
  }

  /**
   * Inserts one committed entry into the active memtable: the commit queue's apply, for
   * every entry of every batch (one visitor, not a closure per batch). A batch never spans
   * a memtable switch: switches happen between commit groups.
   */
  readonly addToMemtable: BatchRangeVisitor = (seq, kind, rep, ks, kl, vs, vl) => {
    this.mem.addFrom(seq, kind, rep, ks, kl, vs, vl);
  };

  /** The immutable memtable flushed next (the oldest), if any. */
  get oldestImmutable(): Memtable | undefined {
    return this.imms.at(-1);
  }

  /**
   * The manifest's log number once the oldest immutable memtable is in a table: the log
   * the next memtable (immutable or active) was written to. Not simply the current log:
   * after a failed flush, a newer immutable memtable may wait in an older log.
   */
  get logNumberAfterOldest(): number {
    return this.immLogs.at(-2) ?? this.logNumber;
  }

  /**
   * The logs of the immutable memtables not yet in a table, oldest first, leaving out
   * those below `logNumber` (the version's: their memtable's table is installed already)
   * and the live log.
   */
  unflushedLogs(logNumber: number): number[] {
    const out: number[] = [];
    for (const n of [...this.immLogs].reverse()) {
      if (n >= logNumber && n !== this.logNumber && !out.includes(n)) out.push(n);
    }
    return out;
  }

  /** Swaps in a new read view (after any change of the memtables or the version). */
  installView(): void {
    const old = this.view;
    this.view = new ReadView(this.mem, this.imms, this.versions.current);
    old.unref();
  }

  /**
   * Makes the active memtable immutable, recorded as written to log `previousLogNumber`
   * (the number of `log` when its switch began), and starts a new, empty one whose writes
   * go to `log` (numbered `logNumber`), then installs the view. The new log and the old
   * memtable with its log among the immutable ones change in one step: a flush finishing
   * meanwhile computes logNumberAfterOldest from both, and with the new log number but not
   * yet the old log among immLogs it would record the old log, whose writes are in no
   * table yet, as obsolete. REQUIRES: between commit groups.
   */
  switchTo(log: LogWriter, logNumber: number, previousLogNumber: number): void {
    this.imms = [this.mem, ...this.imms];
    this.immLogs = [previousLogNumber, ...this.immLogs];
    this.log = log;
    this.logNumber = logNumber;
    this.mem = new Memtable(this.arenaPool);
    this.installView();
  }

  /**
   * Moves writes to `log` (numbered `logNumber`) without a memtable switch: for an empty
   * active memtable (after a failed log, no-space-recovery.ts). REQUIRES: between commit
   * groups; `mem` empty.
   */
  replaceLog(log: LogWriter, logNumber: number): void {
    if (this.mem.count !== 0) throw new Error("MemtableSet.replaceLog: the memtable is not empty");
    this.log = log;
    this.logNumber = logNumber;
  }

  /**
   * Drops the oldest immutable memtable once its table is in the current version, and
   * installs the view. The set's own reference goes: its arena is reused once no read view
   * lists it either.
   */
  removeOldest(): void {
    const flushed = this.imms.at(-1);
    if (flushed === undefined) throw new Error("MemtableSet.removeOldest: no immutable memtable");
    this.imms = this.imms.slice(0, -1);
    this.immLogs = this.immLogs.slice(0, -1);
    this.installView();
    flushed.unref();
  }

  /** Releases the set's reference on the current view (at close). */
  close(): void {
    this.view.unref();
  }
}
