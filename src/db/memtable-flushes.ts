/**
 * MemtableFlushes: turning memtables into level-0 tables (docs/design.md, "Flush").
 *
 * The switch (`switchMemtable`): the active memtable becomes immutable and writes go to a
 * new log and an empty memtable; then its flush starts. The flushes: one at a time, oldest
 * memtable first; each writes the table (on the compaction worker thread when compactions
 * run there, from an image of the memtable, else on this thread), fsyncs it and the
 * directory, opens it, logs the manifest edit that adds it and advances the log number,
 * and only then drops the memtable. A running flush starts the next one when it is done.
 *
 * Failure: a failed flush is the store's background error (writes refused; the memtable
 * stays, its writes still in their logs): NO_SPACE when the disk is full (recoverable),
 * else fatal until reopened. A failed log creation or sync of the old log at a switch
 * turns the commit queue read-only (the log's state is unknown) and is a log failure
 * (CommitQueue.logFailure).
 *
 * Recovery after no space (no-space-recovery.ts): `switchForRecovery` moves writes to a new
 * log without syncing the old one (whose sync may have failed: it is never synced again),
 * and `flushForRecovery` flushes every immutable memtable, throwing the first failure
 * instead of recording it.
 */
import { writeLevel0Table } from "../compaction/level0-table.js";
import { ioError, isKvError, isNoSpace, KvError } from "../errors.js";
import type { TableOptions } from "../sstable/table-builder.js";
import type { TableCache } from "../sstable/table-cache.js";
import { logFilePath, tableFilePath } from "../version/file-names.js";
import { VersionEdit } from "../version/version-edit.js";
import type { VersionSet } from "../version/version-set.js";
import type { FileSystem } from "../vfs/file-system.js";
import type { LogWriter } from "../wal/log-writer.js";
import type { BackgroundError } from "./background-error.js";
import type { CommitQueue } from "./commit-queue.js";
import type { CompactionScheduler } from "./compaction-scheduler.js";
import type { StoreEvent } from "./events.js";
import type { MemtableSet } from "./memtable-set.js";
import { openLog } from "./open-log.js";
import type { FlushCounters } from "./store-stats.js";

/** What the flushes work with: the store's parts, shared. */
export interface FlushHost {
  readonly fs: FileSystem;
  readonly dir: string;
  readonly memtables: MemtableSet;
  readonly commits: CommitQueue;
  readonly versions: VersionSet;
  readonly tables: TableCache;
  readonly compactions: CompactionScheduler;
  readonly tableOptions: TableOptions;
  /** The store's walPreallocateBytes, for new logs. */
  readonly walPreallocateBytes: number;
  /** File numbers being written: the obsolete-file sweep leaves them alone. */
  readonly pendingOutputs: Set<number>;
  readonly background: BackgroundError;
  emit(event: StoreEvent): void;
  /** A flush ended (installed or failed): obsolete files may be swept. */
  flushEnded(): void;
}

/** A log created for a switch: its writer, file number and path. */
interface NextLog {
  readonly log: LogWriter;
  readonly number: number;
  readonly path: string;
}

export class MemtableFlushes {
  readonly counters: FlushCounters = { flushes: 0, flushBytes: 0, flushMillis: 0 };
  private flushing: Promise<void> | undefined;
  /** The log prepared for the next switch, ready or being created (prepareNextLog). */
  private nextLog: Promise<NextLog> | undefined;

  constructor(private readonly host: FlushHost) {}

  /** The flush running now, if any (it never rejects: a failure is the background error). */
  get running(): Promise<void> | undefined {
    return this.flushing;
  }

  /**
   * Waits until no flush runs: each flush starts the next immutable memtable's when it is
   * done, so `running` may name a new one after the current one settles. Never throws.
   */
  async done(): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => {});
  }

  /**
   * Flushes every committed write: waits for queued writes and running flushes, switches
   * the active memtable if it holds anything, and waits for its flush. Throws the
   * background error if there is one (before or after).
   */
  async flushAll(): Promise<void> {
    const { background, commits, memtables } = this.host;
    if (background.error) throw background.error;
    await commits.whenIdle();
    await this.done();
    if (memtables.mem.count === 0) return;
    await this.switchMemtable();
    await this.done();
    if (background.error) throw background.error;
  }

  /**
   * Makes the active memtable immutable, starts a new log and memtable, and starts the
   * flush. REQUIRES: called between commit groups (from the commit queue's room check, or
   * when idle).
   */
  async switchMemtable(): Promise<void> {
    const { background, commits, memtables } = this.host;
    if (background.error) throw background.error;
    const oldLogNumber = memtables.logNumber;
    const old = memtables.log;
    // Sync the old log before any write goes to the new one: it may hold sync: false
    // writes, and the new log will soon hold durable ones. Were the old log's tail lost in
    // a power failure while a later write in the new log survived, recovery would show a
    // hole in history. The new log is usually ready (prepareNextLog), and the background
    // syncs (walBytesPerSync) leave this one little to write.
    const oldSynced = old.sync();
    oldSynced.catch(() => {}); // awaited below; this keeps an early failure from going unhandled
    let next: NextLog;
    try {
      next = await this.takeNextLog();
    } catch (err) {
      await oldSynced.catch(() => {});
      commits.logFailure(err as KvError, "switch");
      throw err;
    }
    try {
      await oldSynced;
    } catch (err) {
      const e = ioError("sync of the write-ahead log failed", err, old.file.path);
      await next.log.close().catch(() => {});
      commits.logFailure(e, "switch");
      throw e;
    }
    commits.setLog(next.log, next.path);
    memtables.switchTo(next.log, next.number, oldLogNumber);
    this.prepareNextLog();
    await old.close().catch(() => {});
    this.flushing ??= this.flushOldest();
  }

  /**
   * Starts creating the log the next switch moves writes to (created, synced, its name
   * made durable: src/db/open-log.ts), so that the switch does not wait for it. Does
   * nothing when one is ready or being made, or once writes are refused. Never throws: a
   * failure is left for the switch, which then creates a log itself.
   */
  prepareNextLog(): void {
    if (this.nextLog !== undefined || this.host.background.error) return;
    const made = this.createLog();
    made.catch(() => {}); // the switch that takes it sees the failure
    this.nextLog = made;
  }

  /**
   * Closes and removes the log prepared for the next switch, if any (at close: it holds
   * no record). A failure is ignored: an empty log left behind is replayed as empty and
   * written to at the next open.
   */
  async discardNextLog(): Promise<void> {
    const ready = this.nextLog;
    this.nextLog = undefined;
    if (ready === undefined) return;
    try {
      const { log, path } = await ready;
      await log.close();
      await this.host.fs.remove(path);
    } catch {
      // See above.
    }
  }

  /**
   * The log for a switch: the prepared one, or (none prepared, or its creation failed) a
   * new one. Throws IO_ERROR (NO_SPACE when the disk is full) when it cannot be created.
   * Logs are numbered in the order writes move to them, which recovery relies on: every
   * switch takes its log from here.
   */
  private async takeNextLog(): Promise<NextLog> {
    const ready = this.nextLog;
    this.nextLog = undefined;
    if (ready !== undefined) {
      try {
        return await ready;
      } catch {
        // Created again below (its error may be stale: the disk may have room now).
      }
    }
    return await this.createLog();
  }

  /** Creates log file number next in line; throws as takeNextLog does. */
  private async createLog(): Promise<NextLog> {
    const { dir, fs, walPreallocateBytes } = this.host;
    const number = this.host.versions.newFileNumber();
    const path = logFilePath(dir, number);
    try {
      return { number, path, log: await openLog(fs, dir, number, undefined, walPreallocateBytes) };
    } catch (err) {
      throw ioError("cannot create a new write-ahead log", err, path);
    }
  }

  /**
   * After a no-space failure: makes the active memtable immutable (when it holds anything)
   * and moves writes to a new log, without syncing the old one: its writes reach a synced
   * table (flushForRecovery) before any write is accepted again. Throws what creating the
   * log throws (nothing changed then). REQUIRES: writes refused, no group in flight.
   */
  async switchForRecovery(): Promise<void> {
    const { commits, memtables } = this.host;
    const oldLogNumber = memtables.logNumber;
    const old = memtables.log;
    const next = await this.takeNextLog();
    commits.setLog(next.log, next.path);
    if (memtables.mem.count > 0) memtables.switchTo(next.log, next.number, oldLogNumber);
    else memtables.replaceLog(next.log, next.number);
    await old.close().catch(() => {});
  }

  /**
   * After a no-space failure: flushes every immutable memtable, oldest first, one at a
   * time, after any flush running; throws the first failure (not recorded as the
   * background error: the caller decides).
   */
  async flushForRecovery(): Promise<void> {
    await this.done();
    while (this.host.memtables.imms.length > 0) {
      const run = this.flushOne();
      this.flushing = run.then(
        () => {},
        () => {},
      );
      try {
        await run;
      } finally {
        this.flushing = undefined;
        this.host.flushEnded();
      }
    }
  }

  /** Flushes the oldest immutable memtable; a failure is the background error. */
  private async flushOldest(): Promise<void> {
    const { background, memtables } = this.host;
    try {
      await this.flushOne();
    } catch (err) {
      background.set(flushError(err));
    } finally {
      this.flushing =
        memtables.imms.length > 0 && !background.error ? this.flushOldest() : undefined;
    }
    this.host.flushEnded();
  }

  /**
   * Writes the oldest immutable memtable to a level-0 table and installs it; throws what
   * fails (the memtable then stays).
   */
  private async flushOne(): Promise<void> {
    const { compactions, dir, memtables, tableOptions, versions } = this.host;
    const imm = memtables.oldestImmutable!;
    const number = versions.newFileNumber();
    this.host.pendingOutputs.add(number);
    const started = performance.now();
    try {
      const path = tableFilePath(dir, number);
      // With compactions in the worker, the table is built there from an image of the
      // memtable (its arena, shared), so the event loop keeps serving writes and reads.
      const image = imm.image();
      const meta = await (compactions.flushInWorker({
        dir,
        path,
        number,
        options: tableOptions,
        image,
      }) ?? writeLevel0Table(this.host.fs, dir, path, number, image, tableOptions));
      await this.host.tables.open(number);
      const edit = new VersionEdit();
      edit.addFile(0, meta);
      edit.logNumber = memtables.logNumberAfterOldest;
      edit.lastSequence = this.host.commits.sequence;
      await versions.logAndApply(edit);
      this.counters.flushes++;
      this.counters.flushBytes += meta.size;
      this.counters.flushMillis += performance.now() - started;
      memtables.removeOldest();
      this.host.emit({
        type: "flush",
        fileNumber: number,
        entries: meta.entries,
        bytes: meta.size,
        durationMs: performance.now() - started,
      });
      compactions.maybeSchedule();
    } finally {
      this.host.pendingOutputs.delete(number);
    }
  }
}

/** The background error of a failed flush. */
function flushError(err: unknown): KvError {
  const message = (err as Error).message;
  if (isNoSpace(err)) {
    return new KvError(
      "NO_SPACE",
      `flush failed, the disk is full: the store refuses writes until space is freed: ${message}`,
      { cause: err },
    );
  }
  return new KvError(
    isKvError(err, "CORRUPTION") ? "CORRUPTION" : "IO_ERROR",
    `flush failed, the store refuses writes until reopened: ${message}`,
    { cause: err },
  );
}
