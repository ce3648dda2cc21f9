/**
 * KvStore: the embedded store, a facade over its parts (store-parts.ts; docs/design.md):
 *
 * - open: store-open.ts (directory, lock, manifest, log replay), then the tables opened,
 *   obsolete files swept and compactions scheduled;
 * - write path: check and encode one batch -> CommitQueue (commit-queue.ts: room check,
 *   WAL append, group fdatasync, insert into the active memtable, memtable-set.ts). The
 *   room check is write-stalls.ts; a full memtable is switched and flushed to a level-0
 *   table by memtable-flushes.ts; writers wait only when the memtables allowed are all
 *   full or level 0 has too many files;
 * - read path: the current ReadView (memtables and version) or a snapshot's; gets:
 *   point-get.ts; iterators: view-iterator.ts under a DbIterator and a KvIterator;
 * - background: compaction-scheduler.ts, obsolete-files.ts, background-error.ts,
 *   no-space-recovery.ts;
 * - stats: store-stats.ts; checkpoints: checkpoint.ts.
 */
import { type BytesLike, checkKey, toBytes } from "../batch/bytes.js";
import { encodeSingleDelete, encodeSinglePut, WriteBatch } from "../batch/write-batch.js";
import { ioError, isKvError, KvError } from "../errors.js";
import type { VersionSet } from "../version/version-set.js";
import type { AdminBackend, AdminCompactOptions } from "./admin-backend.js";
import {
  type CheckpointCapture,
  type CheckpointLog,
  type CheckpointOptions,
  type CheckpointResult,
  writeCheckpoint,
} from "./checkpoint.js";
import type { CommitQueue } from "./commit-queue.js";
import type { CompactionScheduler } from "./compaction-scheduler.js";
import { DbIterator } from "./db-iterator.js";
import { compareAndSwap, writeDecided } from "./decided-write.js";
import { emitEvent, type StoreEventListener } from "./events.js";
import type { CasResult, KvBackend } from "./kv-backend.js";
import { KvIterator } from "./kv-iterator.js";
import { compactRange } from "./manual-compaction.js";
import type { MemtableSet } from "./memtable-set.js";
import { type OpenOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { MISSING_TABLE, type PointGet } from "./point-get.js";
import {
  boundBytes,
  checkSnapshot,
  dbIteratorOptions,
  type IteratorOptions,
  type ReadOptions,
} from "./read-options.js";
import type { RecoveryReport } from "./recovery.js";
import { Snapshot } from "./snapshot.js";
import { type RecoveredStore, recoverStore, releaseRecovered } from "./store-open.js";
import { assembleStore, type StoreParts } from "./store-parts.js";
import { type StoreStats, storeStats } from "./store-stats.js";
import { viewIterator } from "./view-iterator.js";
import { type WriteOptions, writeIsSynced } from "./write-options.js";

export class KvStore implements KvBackend, AdminBackend {
  /** The data directory. */
  readonly dir: string;
  /** What recovery found at open: logs replayed, torn tails dropped, damage skipped. */
  readonly recovery: RecoveryReport;
  private closing: Promise<void> | undefined;
  private readonly parts: StoreParts;
  private readonly options: ResolvedOptions;
  private readonly versions: VersionSet;
  private readonly memtables: MemtableSet;
  private readonly commits: CommitQueue;
  private readonly compactions: CompactionScheduler;
  private readonly reads: PointGet;
  private readonly iterators = new Set<KvIterator>();
  private readonly snapshots = new Set<Snapshot>();
  /** Listeners of the calls running now (compactRange's onCompaction), beside onEvent. */
  private readonly eventTaps = new Set<StoreEventListener>();

  private constructor(recovered: RecoveredStore) {
    this.parts = assembleStore(recovered, {
      liveSequences: () => [...this.snapshots].map((s) => s.sequence),
      closing: () => this.closing !== undefined,
      emit: (event) => {
        emitEvent(recovered.options.onEvent, event);
        for (const tap of this.eventTaps) emitEvent(tap, event);
      },
    });
    // The parts the calls use, as fields of their own.
    ({
      dir: this.dir,
      report: this.recovery,
      options: this.options,
      versions: this.versions,
      memtables: this.memtables,
      commits: this.commits,
      compactions: this.compactions,
      reads: this.reads,
    } = this.parts);
  }

  /** Opens (creating when allowed) the store in `dir`. See `open`. */
  static async open(dir: string, options?: OpenOptions): Promise<KvStore> {
    if (typeof dir !== "string" || dir.length === 0) {
      throw new KvError("INVALID_ARGUMENT", "dir must be a non-empty string");
    }
    const opts = resolveOptions(options);
    const started = performance.now();
    const recovered = await recoverStore(dir, opts);
    try {
      const store = new KvStore(recovered);
      await store.start(started);
      return store;
    } catch (err) {
      await releaseRecovered(recovered);
      throw isKvError(err) ? err : ioError(`cannot open store in ${dir}`, err);
    }
  }

  /**
   * The end of open: opens the readers of every live table (so the first gets need no I/O
   * to open one), sweeps obsolete files, schedules compactions, reports the open.
   */
  private async start(started: number): Promise<void> {
    const { tables } = this.parts;
    for (const { file } of this.versions.current.allFiles()) {
      if (tables.get(file.number) === undefined) await tables.open(file.number);
    }
    await this.parts.sweeper.sweep();
    this.compactions.maybeSchedule();
    const report = this.recovery;
    emitEvent(this.options.onEvent, {
      type: "open",
      logsReplayed: report.logs.length,
      batchesReplayed: report.batches,
      entriesReplayed: report.entries,
      tornTailBytes: report.tornTailBytes,
      regionsDropped: report.dropped.length - report.tornTails,
      lastSequence: this.commits.sequence,
      durationMs: performance.now() - started,
    });
  }

  /** A new, empty batch for `write`. */
  batch(): WriteBatch {
    return new WriteBatch();
  }

  /** Stores `value` under `key`. Strings are taken as UTF-8. */
  put(key: BytesLike, value: BytesLike, options?: WriteOptions): Promise<void> {
    try {
      this.checkOpen();
      return this.commit(encodeSinglePut(key, value), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Removes `key` (a no-op if absent; still a logged write). */
  delete(key: BytesLike, options?: WriteOptions): Promise<void> {
    try {
      this.checkOpen();
      return this.commit(encodeSingleDelete(key), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Applies every operation of `batch` atomically: one log record, consecutive sequence
   * numbers, all or nothing after a crash. The batch may be reused once this is called.
   */
  write(batch: WriteBatch, options?: WriteOptions): Promise<void> {
    try {
      this.checkOpen();
      if (!(batch instanceof WriteBatch)) {
        throw new KvError("INVALID_ARGUMENT", "write() takes a WriteBatch from db.batch()");
      }
      if (batch.count === 0) return Promise.resolve();
      return this.commit(batch.encode(), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Compare-and-swap, atomic against every other write: iff the newest value of `key` is
   * `expected` (undefined: iff the key is absent or deleted), stores `next` (undefined:
   * deletes the key). Resolves to whether it applied and the key's value once it took
   * effect (`next` iff applied, else the value that failed the comparison). The comparison
   * is made in the commit path, when the write's turn comes (see commit-queue.ts, "Decided
   * writes"); a swap that does not apply writes nothing. Strings are taken as UTF-8.
   */
  compareAndSwap(
    key: BytesLike,
    expected: BytesLike | undefined,
    next: BytesLike | undefined,
    options?: WriteOptions,
  ): Promise<CasResult> {
    try {
      this.checkOpen();
      const sync = writeIsSynced(options, this.options.sync);
      return compareAndSwap(this.parts, key, expected, next, sync, options?.signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * A write decided in the commit path (decided-write.ts): `decide` runs when the write's
   * turn comes, after every earlier write is applied and visible and before any later one
   * is, and returns the encoded batch to commit (from `encodeBatch`) or undefined to write
   * nothing. `read` gives a key's newest value as of that moment (synchronously; a copy).
   * Resolves to whether a batch was committed. What `decide` throws rejects this write
   * alone. The building block of compareAndSwap and of a replicated store's conditional
   * apply.
   */
  writeDecided(
    decide: (read: (key: Uint8Array) => Uint8Array | undefined) => Uint8Array | undefined,
    options?: WriteOptions,
  ): Promise<boolean> {
    try {
      this.checkOpen();
      const sync = writeIsSynced(options, this.options.sync);
      return writeDecided(this.parts, decide, sync, options?.signal);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The newest value of `key` (as of `options.snapshot` if given), or undefined when it is
   * absent or deleted. The result is a copy (a Buffer) the caller may keep and change.
   */
  get(key: BytesLike, options?: ReadOptions): Promise<Uint8Array | undefined> {
    try {
      this.checkOpen();
      checkKey(key);
      const snapshot = checkSnapshot(options?.snapshot);
      const view = snapshot?.view ?? this.memtables.view;
      const seq = snapshot?.sequence ?? this.commits.sequence;
      const k = toBytes(key);
      const found = this.reads.fromView(view, k, seq);
      if (found !== MISSING_TABLE) return Promise.resolve(found);
      return this.reads.openingTables(view, k, seq);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * `get`, synchronously: the same answer, without a promise. A table not open yet is
   * opened on this thread (a blocking open and a few reads; normally every live table is
   * open already, up to maxOpenFiles). Throws what `get` rejects with.
   */
  getSync(key: BytesLike, options?: ReadOptions): Uint8Array | undefined {
    this.checkOpen();
    checkKey(key);
    const snapshot = checkSnapshot(options?.snapshot);
    const view = snapshot?.view ?? this.memtables.view;
    const seq = snapshot?.sequence ?? this.commits.sequence;
    const found = this.reads.fromView(view, toBytes(key), seq, true);
    if (found === MISSING_TABLE) throw new Error("getSync: a table was not opened");
    return found;
  }

  /**
   * Pins the current state: reads given `{ snapshot }` see it until `release()`, whatever
   * is written, flushed or compacted meanwhile.
   */
  snapshot(): Snapshot {
    this.checkOpen();
    const view = this.memtables.view.ref();
    const s = new Snapshot(this.commits.sequence, view, (x) => this.snapshots.delete(x));
    this.snapshots.add(s);
    return s;
  }

  /**
   * An async iterator over `[key, value]` in key order (or reverse), each live key once with
   * its newest value, deleted keys hidden, within the bounds. It reads the state as of its
   * creation (or `options.snapshot`): later writes, flushes and compactions do not change
   * what it yields. Close it with `close()` or by leaving `for await` early.
   */
  iterator(options: IteratorOptions = {}): KvIterator {
    this.checkOpen();
    const snapshot = checkSnapshot(options.snapshot);
    const dbOptions = dbIteratorOptions(options);
    const view = (snapshot?.view ?? this.memtables.view).ref();
    const seq = snapshot?.sequence ?? this.commits.sequence;
    const fillCache = options.fillCache !== false;
    const it: KvIterator = new KvIterator(
      async () =>
        new DbIterator(await viewIterator(this.parts.tables, view, fillCache), seq, dbOptions),
      () => {
        view.unref();
        this.iterators.delete(it);
      },
    );
    this.iterators.add(it);
    return it;
  }

  /**
   * Entries with `start <= key < end` (either bound may be omitted), at most `limit`
   * (0 or omitted: no limit), in key order, from one consistent view.
   */
  async scan(
    start?: BytesLike,
    end?: BytesLike,
    limit = 0,
    options: { snapshot?: Snapshot; keysOnly?: boolean } = {},
  ): Promise<Array<[Buffer, Buffer]>> {
    const opts: IteratorOptions = { ...options };
    if (start !== undefined) opts.gte = start;
    if (end !== undefined) opts.lt = end;
    if (limit > 0) opts.limit = limit;
    return this.iterator(opts).all();
  }

  stats(): StoreStats {
    return storeStats(this.parts, this.iterators.size, this.snapshots.size);
  }

  /**
   * Turns the current memtable into a table now (and waits for it). Mostly for tests and
   * tools; the store flushes on its own when the memtable fills.
   */
  async flush(): Promise<void> {
    this.checkOpen();
    await this.parts.flushes.flushAll();
  }

  /**
   * Writes a checkpoint into `targetDir`, which must not exist: a directory that opens as a
   * store holding every write acknowledged before this call, its table files hard-linked
   * where the file system allows (else copied), with a fresh manifest. The memtable is
   * flushed first, unless `options.logSizeForFlush` is above the bytes of the live log:
   * then the checkpoint copies that log instead (nothing is flushed, the store's writes do
   * not wait). Durable when this resolves. See checkpoint.ts.
   */
  async checkpoint(targetDir: string, options: CheckpointOptions = {}): Promise<CheckpointResult> {
    this.checkOpen();
    if (typeof targetDir !== "string" || targetDir.length === 0) {
      throw new KvError("INVALID_ARGUMENT", "checkpoint directory must be a non-empty string");
    }
    const capture = await this.captureCheckpoint(options);
    try {
      return await capture.write(targetDir);
    } finally {
      capture.release();
    }
  }

  /**
   * The first half of `checkpoint`: fixes what the checkpoint holds (every write
   * acknowledged before this call) and keeps its files from deletion. Resolves once that
   * is fixed: with `options.logSizeForFlush` above the bytes of the logs the tables lack,
   * once the queued commits are written (nothing is flushed, no flush is waited for);
   * else after a memtable flush. The returned capture's `write` then copies those files
   * while the store takes further writes; its `release` (REQUIRED, once written or given
   * up) lets them go.
   */
  async captureCheckpoint(options: CheckpointOptions = {}): Promise<CheckpointCapture> {
    this.checkOpen();
    const logSizeForFlush = options.logSizeForFlush ?? 0;
    if (!Number.isSafeInteger(logSizeForFlush) || logSizeForFlush < 0) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `logSizeForFlush must be a non-negative integer, got ${String(logSizeForFlush)}`,
      );
    }
    if (logSizeForFlush > 0) {
      const { background, commits, memtables } = this.parts;
      if (background.error) throw background.error;
      await commits.whenIdle();
      if (background.error) throw background.error;
      // Taken together, synchronously: the version, and the logs of the memtables its
      // tables lack (a flush running or waiting: whole; the live one: its written prefix).
      const log = memtables.log;
      const bytes = log.size - log.pendingBytes;
      const older = memtables.unflushedLogs(this.versions.logNumber);
      const estimate = bytes + older.length * this.options.writeBufferSize;
      if (estimate < logSizeForFlush) {
        return this.holdCheckpoint([
          ...older.map((number) => ({ number, bytes: undefined })),
          { number: memtables.logNumber, bytes },
        ]);
      }
    }
    await this.flush();
    // Taken at once: the tables of this version hold every entry up to this sequence
    // number that any table holds.
    return this.holdCheckpoint([]);
  }

  /** Refs the current version and pins `logs`, synchronously: captureCheckpoint's result. */
  private holdCheckpoint(logs: readonly CheckpointLog[]): CheckpointCapture {
    const version = this.versions.current;
    const lastSequence = this.versions.lastSequence;
    const { pinnedLogs } = this.parts;
    version.ref();
    for (const { number } of logs) pinnedLogs.set(number, (pinnedLogs.get(number) ?? 0) + 1);
    let held = true;
    return {
      write: (targetDir) => {
        if (!held) throw new KvError("INVALID_ARGUMENT", "the checkpoint capture was released");
        const { fs } = this.options;
        return writeCheckpoint(fs, this.dir, targetDir, this.versions, version, lastSequence, logs);
      },
      release: () => {
        if (!held) return;
        held = false;
        for (const { number } of logs) {
          const n = (pinnedLogs.get(number) ?? 1) - 1;
          if (n === 0) pinnedLogs.delete(number);
          else pinnedLogs.set(number, n);
        }
        version.unref();
      },
    };
  }

  /**
   * Compacts every table overlapping [start, end] (either bound may be omitted) down to
   * the last level, after flushing the memtable: overwritten and deleted data in the range
   * is dropped (unless a snapshot still needs it). Resolves once the obsolete files are
   * deleted and closed, so their space is free: all of them except those an open iterator
   * or snapshot still reads, which go when it is closed or released.
   * `options.onCompaction` is told of each compaction that finishes meanwhile (background
   * ones too), synchronously; it must not call into the store; what it throws is ignored.
   */
  async compactRange(
    start?: BytesLike,
    end?: BytesLike,
    options: AdminCompactOptions = {},
  ): Promise<void> {
    this.checkOpen();
    const s = boundBytes(start, "start");
    const e = boundBytes(end, "end");
    await compactRange(this.parts, this.eventTaps, () => this.flush(), s, e, options);
  }

  /**
   * Waits for queued writes and a running flush, makes the log durable (so writes made
   * with sync: false are kept too), closes files and releases the directory lock.
   * Calling it again returns the same promise. Operations after close fail with CLOSED;
   * open iterators and snapshots are released.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    const { flushes, lock, recovery, sweeper, tables } = this.parts;
    await recovery.stop();
    await this.commits.whenIdle();
    await flushes.done();
    await flushes.discardNextLog();
    await this.compactions.close();
    for (const it of [...this.iterators]) it.close();
    for (const s of [...this.snapshots]) s.release();
    let failure: unknown;
    const note = (what: string) => (err: unknown) => {
      failure ??= ioError(what, err);
    };
    const log = this.memtables.log;
    if (this.commits.error === undefined) {
      await log.seal().catch(note("final sync of the write-ahead log failed"));
    }
    await log.close().catch(note("closing the write-ahead log failed"));
    await sweeper.idle();
    this.memtables.close();
    await tables.close().catch(note("closing table files failed"));
    await this.versions.close().catch(note("closing the manifest failed"));
    await lock.release().catch(note("releasing the lock failed"));
    if (failure !== undefined) throw failure;
  }

  /** Queues an encoded batch; `options` are checked here (INVALID_ARGUMENT). */
  private commit(rep: Uint8Array, options: WriteOptions | undefined): Promise<void> {
    return this.commits.submit(rep, writeIsSynced(options, this.options.sync), options?.signal);
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new KvError("CLOSED", `store ${this.dir} is closed`);
  }
}

/**
 * Opens the store in `dir`, creating the directory when absent (unless
 * `createIfMissing: false`). Takes the directory lock, recovers the manifest, replays the
 * write-ahead logs and resumes writing.
 *
 * ```ts
 * const db = await open("./data");
 * await db.put("apple", "red");
 * const v = await db.get("apple"); // Buffer "red"
 * await db.close();
 * ```
 */
export function open(dir: string, options?: OpenOptions): Promise<KvStore> {
  return KvStore.open(dir, options);
}
