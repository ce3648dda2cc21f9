/**
 * KvStore: the embedded store.
 *
 * Write path: validate -> encode one batch -> CommitQueue (make room, WAL append, group
 * fdatasync, memtable insert). Making room: when the memtable passes `writeBufferSize`
 * it becomes immutable, a new log starts, and a background flush writes it to a level-0
 * table; writers wait only if the new memtable fills up before that flush is done.
 *
 * Read path: the current ReadView (memtable, immutable memtables, version), then tables
 * newest to oldest; the first entry for the key decides. See docs/design.md.
 */
import { type BytesLike, checkKey, toBytes } from "../batch/bytes.js";
import {
  type BatchRangeVisitor,
  encodeSingleDelete,
  encodeSinglePut,
  visitBatch,
  WriteBatch,
} from "../batch/write-batch.js";
import { writeLevel0Table } from "../compaction/level0-table.js";
import { maxBytesForLevel } from "../compaction/options.js";
import { ioError, isKvError, KvError } from "../errors.js";
import { LevelIterator } from "../iterator/level-iterator.js";
import { MergingIterator } from "../iterator/merging-iterator.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes, KIND_PUT } from "../key/internal-key.js";
import { ArenaPool } from "../memtable/arena-pool.js";
import { Memtable } from "../memtable/memtable.js";
import { BlockCache, type BlockCacheStats } from "../sstable/block-cache.js";
import { bloomHash } from "../sstable/bloom.js";
import type { TableOptions } from "../sstable/table-builder.js";
import { TableCache } from "../sstable/table-cache.js";
import type { TableReader } from "../sstable/table-reader.js";
import type { FileMetadata } from "../version/file-metadata.js";
import {
  CURRENT_FILE,
  LOCK_FILE,
  logFilePath,
  parseFileName,
  tableFilePath,
} from "../version/file-names.js";
import type { Version } from "../version/version.js";
import { VersionEdit } from "../version/version-edit.js";
import { VersionSet } from "../version/version-set.js";
import {
  dirName,
  type FileLock,
  type FileSystem,
  joinPath,
  LockHeldError,
} from "../vfs/file-system.js";
import { LogWriter } from "../wal/log-writer.js";
import { type CheckpointResult, writeCheckpoint } from "./checkpoint.js";
import {
  type AbortSignalLike,
  CommitQueue,
  type CommitStats,
  isAbortSignalLike,
} from "./commit-queue.js";
import { CompactionScheduler, type CompactionStats } from "./compaction-scheduler.js";
import { DbIterator, type DbIteratorOptions } from "./db-iterator.js";
import { emitEvent, type StallCause, type StallState, type StoreEvent } from "./events.js";
import { KvIterator } from "./kv-iterator.js";
import { deleteObsoleteFiles } from "./obsolete-files.js";
import { type OpenOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { ReadView } from "./read-view.js";
import { type RecoveryReport, replayLogs } from "./recovery.js";
import { Snapshot } from "./snapshot.js";

export interface WriteOptions {
  /** Durable before the promise resolves (default: the store's `sync` option). */
  sync?: boolean;
  /**
   * Cancels the write if it fires while the write still waits to be committed (e.g. in a
   * write stall): the promise rejects with ABORTED and nothing of the write is stored.
   * Once the write's commit group has formed, it completes regardless.
   */
  signal?: AbortSignalLike;
}

export interface ReadOptions {
  /** Read as of this snapshot (default: the latest committed state). */
  snapshot?: Snapshot;
}

/** Options of `db.iterator()`. Bounds are keys (bytes or UTF-8 strings). */
export interface IteratorOptions {
  gt?: BytesLike;
  gte?: BytesLike;
  lt?: BytesLike;
  lte?: BytesLike;
  /** Iterate from the largest key down. */
  reverse?: boolean;
  /** At most this many entries (default: no limit). */
  limit?: number;
  /** Read as of this snapshot (default: the state when the iterator is created). */
  snapshot?: Snapshot;
  /** Yield empty values (saves copying them). */
  keysOnly?: boolean;
  /** Put blocks read by this iterator into the block cache (default true). */
  fillCache?: boolean;
}

/** A snapshot of counters for tests, benchmarks and operators. */
export interface StoreStats {
  /** Sequence number of the newest visible entry. */
  lastSequence: number;
  memtableBytes: number;
  memtableEntries: number;
  /** Immutable memtables waiting for (or in) a flush. */
  immutableMemtables: number;
  /** Number of the write-ahead log that receives writes. */
  logNumber: number;
  commit: CommitStats;
  /** Table files per level. */
  levelFiles: number[];
  /** Bytes of table files per level. */
  levelBytes: number[];
  flushes: number;
  /** Bytes written by flushes. */
  flushBytes: number;
  /** Milliseconds spent in flushes (from start to the table installed). */
  flushMillis: number;
  /**
   * Times writers waited: for a flush because the next memtable filled up first, or for
   * compaction because level 0 reached l0StopTrigger files.
   */
  writeStalls: number;
  /** Write groups delayed by 1 ms because level 0 reached l0SlowdownTrigger files. */
  writeSlowdowns: number;
  /** Total milliseconds writers spent waiting in stalls. */
  stallMillis: number;
  /** The write-stall state now: "delayed" from l0SlowdownTrigger on, "stopped" while writers wait. */
  stallState: StallState;
  /** What caused a state other than "normal". */
  stallCause: StallCause | undefined;
  openIterators: number;
  openSnapshots: number;
  blockCache: BlockCacheStats;
  /** Table lookups that consulted a Bloom filter, and those it answered "absent". */
  bloomFilter: { checked: number; useful: number };
  /** The background error that stopped writes, if any. */
  backgroundError: string | undefined;
  compaction: CompactionStats;
  /**
   * Bytes written to tables (flushes and compactions) per byte flushed from memtables:
   * how many times each byte reaching a table is rewritten by compaction, plus one.
   */
  writeAmplification: number;
  /** Estimated bytes compaction must rewrite to bring every level under its target. */
  pendingCompactionBytes: number;
}

interface MutableStats {
  flushes: number;
  flushBytes: number;
  flushMillis: number;
  writeStalls: number;
  writeSlowdowns: number;
  stallMillis: number;
}

export class KvStore {
  private closing: Promise<void> | undefined;
  private view: ReadView;
  private mem: Memtable;
  /** Immutable memtables, newest first (at most one is kept; see makeRoomForWrite). */
  private imms: Memtable[] = [];
  /**
   * immLogs[i]: the log imms[i] was written to (its last one). Once the oldest immutable
   * memtable is flushed, the logs before the next one's log hold nothing unflushed.
   */
  private immLogs: number[] = [];
  private flushing: Promise<void> | undefined;
  /**
   * Arena chunks of flushed memtables, for the next ones (one write buffer's worth): the
   * flush worker shares the chunks, so without reuse they would wait for both threads'
   * collectors (src/memtable/arena-pool.ts).
   */
  private readonly arenaPool: ArenaPool;
  private backgroundError: KvError | undefined;
  /** File numbers being written (not yet in a version): never treated as obsolete. */
  private readonly pendingOutputs = new Set<number>();
  private readonly iterators = new Set<KvIterator>();
  private readonly snapshots = new Set<Snapshot>();
  private readonly counters: MutableStats = {
    flushes: 0,
    flushBytes: 0,
    flushMillis: 0,
    writeStalls: 0,
    writeSlowdowns: 0,
    stallMillis: 0,
  };
  private readonly compactions: CompactionScheduler;
  /**
   * Memtable bytes below which a write needs no room check (makeRoomForWrite): a quarter of
   * writeBufferSize until the flush worker thread is started, then all of it.
   */
  private roomBytes: number;
  private readonly commits: CommitQueue;
  private readonly tableOptions: TableOptions;
  private sweeping: Promise<void> | undefined;
  private sweepAgain = false;
  private readonly probe: TableProbe;
  /** Write-stall state as last reported (see events.ts), and since when. */
  private stallState: StallState = "normal";
  private stallCause: StallCause | undefined;
  /** Level-0 slowdown: delays owed, in write groups (see makeRoomSlow). */
  private slowdownCredit = 0;
  private stallSince = performance.now();

  private constructor(
    /** The data directory. */
    readonly dir: string,
    private readonly options: ResolvedOptions,
    private readonly lock: FileLock,
    private readonly versions: VersionSet,
    private readonly tables: TableCache,
    private readonly blockCache: BlockCache,
    mem: Memtable,
    private log: LogWriter,
    private logNumber: number,
    lastSequence: number,
    /** What recovery found at open: logs replayed, torn tails dropped, damage skipped. */
    readonly recovery: RecoveryReport,
  ) {
    this.mem = mem;
    // Room for every memtable that can be released while the next one fills, so that the
    // arenas stay within maxWriteBufferNumber buffers' worth: a chunk the pool cannot take
    // is freed only once both threads' collectors drop it, and the worker's seldom run
    // (1M-key batched load: peak RSS ~139 -> ~132 MiB with 2 buffers' room instead of 1).
    this.arenaPool = new ArenaPool((options.maxWriteBufferNumber - 1) * options.writeBufferSize);
    this.probe = new TableProbe(tables);
    this.view = new ReadView(mem, [], versions.current);
    this.tableOptions = {
      blockSize: options.blockSize,
      bloomBitsPerKey: options.bloomBitsPerKey,
      compression: options.compression,
    };
    this.commits = new CommitQueue(
      log,
      // One visitor for every batch (not a closure per batch): the memtable is read per
      // entry, and a batch never spans a memtable switch (switches happen between groups).
      (rep) => visitBatch(rep, this.addToMemtable),
      lastSequence,
      logFilePath(dir, logNumber),
      () => this.makeRoomForWrite(),
      options.blockingLoneSync,
    );
    this.compactions = new CompactionScheduler(
      {
        fs: options.fs,
        dir,
        versions,
        pendingOutputs: this.pendingOutputs,
        liveSequences: () => [...this.snapshots].map((s) => s.sequence),
        installed: () => {
          this.installView();
          this.scheduleSweep();
        },
        fatal: (err) => this.setBackgroundError(err),
        closing: () => this.closing !== undefined,
        event: (event) => this.emit(event),
      },
      options.compaction,
      this.tableOptions,
      options.verifyChecksums,
      options.compactionMode === "worker",
    );
    this.roomBytes = this.compactions.runsInWorker
      ? options.writeBufferSize / 4
      : options.writeBufferSize;
  }

  /** Opens (creating when allowed) the store in `dir`. See `open`. */
  static async open(dir: string, options?: OpenOptions): Promise<KvStore> {
    if (typeof dir !== "string" || dir.length === 0) {
      throw new KvError("INVALID_ARGUMENT", "dir must be a non-empty string");
    }
    const opts = resolveOptions(options);
    const fs = opts.fs;
    const started = performance.now();
    await prepareDirectory(fs, dir, opts);
    const lock = await takeLock(fs, dir);
    let versions: VersionSet | undefined;
    let tables: TableCache | undefined;
    try {
      const names = await fs.list(dir);
      const logs: number[] = [];
      for (const name of names) {
        const parsed = parseFileName(name);
        if (parsed?.type === "log") logs.push(parsed.number);
      }
      logs.sort((a, b) => a - b);
      const exists = names.includes(CURRENT_FILE);
      if (exists && opts.errorIfExists) {
        throw new KvError("INVALID_ARGUMENT", `${dir} already holds a store (errorIfExists)`);
      }
      if (!exists && logs.length > 0) {
        throw new KvError(
          "CORRUPTION",
          `${dir} has write-ahead logs but no CURRENT file: the manifest is missing`,
          { file: joinPath(dir, CURRENT_FILE) },
        );
      }
      const versionOptions = { numLevels: opts.numLevels };
      versions = exists
        ? await VersionSet.recover(fs, dir, versionOptions)
        : await VersionSet.create(fs, dir, versionOptions);
      for (const n of logs) versions.markFileNumberUsed(n);
      const live = logs.filter((n) => n >= versions!.logNumber);
      const state = await replayLogs(fs, dir, live, opts.walRecoveryMode);
      const lastSequence = Math.max(versions.lastSequence, state.lastSequence);
      // Writes resume in the newest live log, cut to its last good record first so that
      // no torn or stale bytes can follow new records; the cut is fsynced before any
      // append. After skipCorrupted recovery the damage stays in the old log (cutting
      // there would drop the good records after it), so writes go to a new log.
      const reuse = live.length > 0 && opts.walRecoveryMode !== "skipCorrupted";
      const logNumber = reuse ? live.at(-1)! : versions.newFileNumber();
      const log = await openLog(fs, dir, logNumber, reuse ? state.lastLogGoodEnd : undefined, opts);
      const blockCache = new BlockCache(opts.blockCacheSize);
      tables = new TableCache(fs, dir, {
        maxOpenFiles: opts.maxOpenFiles,
        blockCache,
        verifyChecksums: opts.verifyChecksums,
      });
      const store = new KvStore(
        dir,
        opts,
        lock,
        versions,
        tables,
        blockCache,
        state.memtable,
        log,
        logNumber,
        lastSequence,
        state.report,
      );
      versions.onVersionReleased = () => store.scheduleSweep();
      await store.openTables(versions.current.allFiles().map((f) => f.file));
      await store.sweepObsoleteFiles();
      store.compactions.maybeSchedule();
      const report = state.report;
      store.emit({
        type: "open",
        logsReplayed: report.logs.length,
        batchesReplayed: report.batches,
        entriesReplayed: report.entries,
        tornTailBytes: report.tornTailBytes,
        regionsDropped: report.dropped.length,
        lastSequence,
        durationMs: performance.now() - started,
      });
      return store;
    } catch (err) {
      await versions?.close().catch(() => {});
      await tables?.close().catch(() => {});
      await lock.release().catch(() => {});
      throw isKvError(err) ? err : ioError(`cannot open store in ${dir}`, err);
    }
  }

  /** Inserts one committed entry into the active memtable (the commit queue's apply). */
  private readonly addToMemtable: BatchRangeVisitor = (seq, kind, rep, ks, kl, vs, vl) => {
    this.mem.addFrom(seq, kind, rep, ks, kl, vs, vl);
  };

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
   * The newest value of `key` (as of `options.snapshot` if given), or undefined when it is
   * absent or deleted. The result is a copy (a Buffer) the caller may keep and change.
   */
  get(key: BytesLike, options?: ReadOptions): Promise<Uint8Array | undefined> {
    try {
      this.checkOpen();
      checkKey(key);
      const snapshot = checkSnapshot(options?.snapshot);
      const view = snapshot?.view ?? this.view;
      const seq = snapshot?.sequence ?? this.commits.sequence;
      const k = toBytes(key);
      const found = this.getFromView(view, k, seq);
      if (found !== MISSING_TABLE) return Promise.resolve(found);
      return this.getOpeningTables(view, k, seq);
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
    const view = snapshot?.view ?? this.view;
    const seq = snapshot?.sequence ?? this.commits.sequence;
    const found = this.getFromView(view, toBytes(key), seq, true);
    if (found === MISSING_TABLE) throw new Error("getSync: a table was not opened");
    return found;
  }

  /**
   * Pins the current state: reads given `{ snapshot }` see it until `release()`, whatever
   * is written, flushed or compacted meanwhile.
   */
  snapshot(): Snapshot {
    this.checkOpen();
    const s = new Snapshot(this.commits.sequence, this.view.ref(), (x) => this.snapshots.delete(x));
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
    const dbOptions = iteratorOptions(options);
    const view = (snapshot?.view ?? this.view).ref();
    const seq = snapshot?.sequence ?? this.commits.sequence;
    const fillCache = options.fillCache !== false;
    const it: KvIterator = new KvIterator(
      async () => {
        const inner = await this.internalIterator(view, fillCache);
        return new DbIterator(inner, seq, dbOptions);
      },
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
    const version = this.view.version;
    const levelFiles: number[] = [];
    const levelBytes: number[] = [];
    for (let l = 0; l < version.numLevels; l++) {
      levelFiles.push(version.numFiles(l));
      levelBytes.push(version.levelBytes(l));
    }
    return {
      lastSequence: this.commits.sequence,
      memtableBytes: this.mem.approximateBytes,
      memtableEntries: this.mem.count,
      immutableMemtables: this.imms.length,
      logNumber: this.logNumber,
      commit: { ...this.commits.stats },
      levelFiles,
      levelBytes,
      ...this.counters,
      stallState: this.stallState,
      stallCause: this.stallCause,
      openIterators: this.iterators.size,
      openSnapshots: this.snapshots.size,
      blockCache: this.blockCache.stats(),
      bloomFilter: this.tables.filterStats(),
      backgroundError: this.backgroundError?.message,
      compaction: {
        ...this.compactions.stats,
        perLevel: this.compactions.stats.perLevel.map((l) => ({ ...l })),
      },
      writeAmplification:
        this.counters.flushBytes === 0
          ? 0
          : (this.counters.flushBytes + this.compactions.stats.bytesWritten) /
            this.counters.flushBytes,
      pendingCompactionBytes: pendingCompactionBytes(version, this.options),
    };
  }

  /**
   * Turns the current memtable into a table now (and waits for it). Mostly for tests and
   * tools; the store flushes on its own when the memtable fills.
   */
  async flush(): Promise<void> {
    this.checkOpen();
    if (this.backgroundError) throw this.backgroundError;
    await this.commits.whenIdle();
    await this.flushesDone();
    if (this.mem.count === 0) return;
    await this.switchMemtable();
    await this.flushesDone();
    if (this.backgroundError) throw this.backgroundError;
  }

  /**
   * Writes a checkpoint into `targetDir`, which must not exist: a directory that opens as a
   * store holding every write acknowledged before this call (the memtable is flushed
   * first), its table files hard-linked where the file system allows (else copied), with a
   * fresh manifest. Durable when this resolves. See checkpoint.ts.
   */
  async checkpoint(targetDir: string): Promise<CheckpointResult> {
    this.checkOpen();
    if (typeof targetDir !== "string" || targetDir.length === 0) {
      throw new KvError("INVALID_ARGUMENT", "checkpoint directory must be a non-empty string");
    }
    await this.flush();
    // Taken together, synchronously: the tables of this version hold every entry up to
    // this sequence number that any table holds.
    const version = this.versions.current;
    const lastSequence = this.versions.lastSequence;
    version.ref();
    try {
      return await writeCheckpoint(
        this.options.fs,
        this.dir,
        targetDir,
        this.versions,
        version,
        lastSequence,
      );
    } finally {
      version.unref();
    }
  }

  /**
   * Compacts every table overlapping [start, end] (either bound may be omitted) down to
   * the last level, after flushing the memtable: overwritten and deleted data in the range
   * is dropped (unless a snapshot still needs it) and its space reclaimed once no reader
   * holds the old files.
   */
  async compactRange(start?: BytesLike, end?: BytesLike): Promise<void> {
    this.checkOpen();
    const s = boundBytes(start, "start");
    const e = boundBytes(end, "end");
    await this.flush();
    await this.compactions.compactRange(s, e);
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
    await this.commits.whenIdle();
    await this.flushesDone();
    await this.compactions.close();
    for (const it of [...this.iterators]) it.close();
    for (const s of [...this.snapshots]) s.release();
    let failure: unknown;
    const note = (what: string) => (err: unknown) => {
      failure ??= ioError(what, err);
    };
    if (this.commits.error === undefined) {
      await this.log.sync().catch(note("final sync of the write-ahead log failed"));
    }
    await this.log.close().catch(note("closing the write-ahead log failed"));
    if (this.sweeping) await this.sweeping.catch(() => {});
    this.view.unref();
    await this.tables.close().catch(note("closing table files failed"));
    await this.versions.close().catch(note("closing the manifest failed"));
    await this.lock.release().catch(note("releasing the lock failed"));
    if (failure !== undefined) throw failure;
  }

  // ---- write path ----

  private commit(rep: Uint8Array, options: WriteOptions | undefined): Promise<void> {
    let sync = this.options.sync;
    if (options !== undefined) {
      if (typeof options !== "object" || options === null) {
        throw new KvError("INVALID_ARGUMENT", "write options must be an object");
      }
      if (options.sync !== undefined) {
        if (typeof options.sync !== "boolean") {
          throw new KvError("INVALID_ARGUMENT", "sync must be a boolean");
        }
        sync = options.sync;
      }
      if (options.signal !== undefined && !isAbortSignalLike(options.signal)) {
        throw new KvError("INVALID_ARGUMENT", "signal must be an AbortSignal");
      }
    }
    return this.commits.submit(rep, sync, options?.signal);
  }

  /**
   * Runs before each commit group (serialized by the commit queue). Returns undefined
   * when the memtable has room, so the common case costs no promise.
   */
  private makeRoomForWrite(): Promise<void> | undefined {
    if (this.backgroundError) return Promise.reject(this.backgroundError);
    if (
      this.mem.approximateBytes < this.roomBytes &&
      this.versions.current.numFiles(0) < this.options.compaction.l0SlowdownTrigger
    ) {
      if (this.stallState !== "normal") this.setStall("normal", undefined);
      return undefined;
    }
    return this.makeRoomSlow();
  }

  /**
   * Records the write-stall state and its cause (stats); a change of state is reported
   * once, as an event.
   */
  private setStall(state: StallState, cause: StallCause | undefined): void {
    this.stallCause = cause;
    if (state === this.stallState) return;
    const now = performance.now();
    const previousMs = now - this.stallSince;
    this.stallState = state;
    this.stallSince = now;
    this.emit({ type: "stall", state, cause, previousMs });
  }

  private emit(event: StoreEvent): void {
    emitEvent(this.options.onEvent, event);
  }

  /** The first background failure stops writes until the store is reopened. */
  private setBackgroundError(err: KvError): void {
    if (this.backgroundError !== undefined) return;
    this.backgroundError = err;
    this.commits.fail(err);
    this.emit({ type: "background-error", code: err.code, message: err.message });
  }

  private async makeRoomSlow(): Promise<void> {
    if (this.roomBytes < this.options.writeBufferSize) {
      // The first memtable is a quarter full: start the flush worker now, so that loading
      // it (tens of milliseconds) is done before the memtable fills and writers need it.
      this.roomBytes = this.options.writeBufferSize;
      this.compactions.prestartWorker();
    }
    const { l0SlowdownTrigger, l0StopTrigger } = this.options.compaction;
    let slowed = false;
    for (;;) {
      if (this.backgroundError) throw this.backgroundError;
      const l0 = this.versions.current.numFiles(0);
      if (!slowed && l0 >= l0SlowdownTrigger && l0 < l0StopTrigger) {
        // Level 0 is filling faster than compaction drains it: delay write groups by 1 ms,
        // a share of them that grows with level 0, from 1 / (stop - slowdown + 1) at the
        // slowdown trigger to every group just below the stop trigger. Writes give way more
        // as level 0 nears the stop, instead of all being stopped there. (LevelDB delays
        // every write by 1 ms from its trigger on; the compaction worker has a core of its
        // own here, so a delay helps it only through the CPU it frees, and a 1 ms delay of
        // every 1,000-entry batch cost a 1M-key load ~15% of its throughput.)
        slowed = true;
        this.setStall("delayed", "level0");
        this.slowdownCredit +=
          (l0 - l0SlowdownTrigger + 1) / (l0StopTrigger - l0SlowdownTrigger + 1);
        if (this.slowdownCredit < 1) continue;
        this.slowdownCredit -= 1;
        this.counters.writeSlowdowns++;
        const started = performance.now();
        await new Promise((resolve) => setTimeout(resolve, 1));
        this.counters.stallMillis += performance.now() - started;
        continue;
      }
      if (l0 >= l0StopTrigger) {
        this.setStall("stopped", "level0");
        this.counters.writeStalls++;
        const started = performance.now();
        this.compactions.maybeSchedule();
        await this.compactions.whenIdle();
        if (this.versions.current.numFiles(0) >= l0StopTrigger) {
          // Nothing ran (e.g. waiting for a retry): check again shortly.
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        this.counters.stallMillis += performance.now() - started;
        continue;
      }
      if (this.mem.approximateBytes < this.options.writeBufferSize) {
        this.setStall(slowed ? "delayed" : "normal", slowed ? "level0" : undefined);
        return;
      }
      if (this.imms.length >= this.options.maxWriteBufferNumber - 1 && this.flushing) {
        // The memtables allowed are all full, the older ones waiting for their flushes:
        // writers wait for the oldest to be flushed.
        this.setStall("stopped", "memtable");
        this.counters.writeStalls++;
        const started = performance.now();
        await this.flushing.catch(() => {});
        this.counters.stallMillis += performance.now() - started;
        continue;
      }
      await this.switchMemtable();
      this.setStall(slowed ? "delayed" : "normal", slowed ? "level0" : undefined);
      return;
    }
  }

  /**
   * Makes the memtable immutable, starts a new log and memtable, and starts the flush.
   * REQUIRES: called between commit groups (from makeRoomForWrite, or when idle).
   */
  private async switchMemtable(): Promise<void> {
    if (this.backgroundError) throw this.backgroundError;
    const number = this.versions.newFileNumber();
    const oldLogNumber = this.logNumber;
    const old = this.log;
    // Sync the old log before any write goes to the new one: it may hold sync: false
    // writes, and the new log will soon hold durable ones. Were the old log's tail lost in
    // a power failure while a later write in the new log survived, recovery would show a
    // hole in history. The sync runs while the new log is created (both before writes
    // resume): a switch then costs the longer of the two, not their sum.
    const oldSynced = old.sync();
    oldSynced.catch(() => {}); // awaited below; this keeps an early failure from going unhandled
    let log: LogWriter;
    try {
      log = await openLog(this.options.fs, this.dir, number, undefined, this.options);
    } catch (err) {
      const e = ioError("cannot create a new write-ahead log", err, logFilePath(this.dir, number));
      this.commits.fail(e);
      await oldSynced.catch(() => {});
      throw e;
    }
    try {
      await oldSynced;
    } catch (err) {
      const e = ioError("sync of the write-ahead log failed", err, old.file.path);
      this.commits.fail(e);
      await log.close().catch(() => {});
      throw e;
    }
    // The new log, and the old memtable with its log among the immutable ones, in one step:
    // a flush finishing meanwhile computes the oldest live log from both (flushImmutable),
    // and with the new log number but not yet the old log among immLogs it would record
    // the old log, whose writes are in no table yet, as obsolete.
    this.log = log;
    this.logNumber = number;
    this.commits.setLog(log, logFilePath(this.dir, number));
    this.imms = [this.mem, ...this.imms];
    this.immLogs = [oldLogNumber, ...this.immLogs];
    this.mem = new Memtable(this.arenaPool);
    this.installView();
    await old.close().catch(() => {});
    // One flush at a time, oldest memtable first: a running flush starts the next one
    // when it is done (flushImmutable's finally).
    this.flushing ??= this.flushImmutable();
  }

  /**
   * Waits until no flush runs: each flush starts the next immutable memtable's when it is
   * done, so `flushing` may name a new one after the current one settles. Never throws
   * (a failed flush is the background error).
   */
  private async flushesDone(): Promise<void> {
    while (this.flushing) await this.flushing.catch(() => {});
  }

  private async flushImmutable(): Promise<void> {
    const imm = this.imms.at(-1)!;
    const number = this.versions.newFileNumber();
    this.pendingOutputs.add(number);
    const started = performance.now();
    try {
      const path = tableFilePath(this.dir, number);
      // With compactions in the worker, the table is built there from an image of the
      // memtable (a copy of its arena), so the event loop keeps serving writes and reads.
      const inWorker = this.compactions.runsInWorker
        ? this.compactions.flushInWorker({
            dir: this.dir,
            path,
            number,
            options: this.tableOptions,
            image: imm.image(),
          })
        : undefined;
      const meta = await (inWorker ??
        writeLevel0Table(
          this.options.fs,
          this.dir,
          path,
          number,
          imm.iterator(),
          this.tableOptions,
        ));
      await this.tables.open(number);
      const edit = new VersionEdit();
      edit.addFile(0, meta);
      // Logs before the one the next memtable (immutable or not) was written to hold
      // nothing that is not in a table now. Not simply the current log: after a failed
      // flush, a newer immutable memtable may wait in an older log than the current one.
      edit.logNumber = this.immLogs.at(-2) ?? this.logNumber;
      edit.lastSequence = this.commits.sequence;
      await this.versions.logAndApply(edit);
      this.counters.flushes++;
      this.counters.flushBytes += meta.size;
      this.counters.flushMillis += performance.now() - started;
      this.imms = this.imms.slice(0, -1);
      this.immLogs = this.immLogs.slice(0, -1);
      this.installView();
      // The store's own reference: the arena is reused once no read view lists it either.
      imm.unref();
      this.emit({
        type: "flush",
        fileNumber: number,
        entries: meta.entries,
        bytes: meta.size,
        durationMs: performance.now() - started,
      });
      this.compactions.maybeSchedule();
    } catch (err) {
      this.setBackgroundError(
        new KvError(
          isKvError(err, "CORRUPTION") ? "CORRUPTION" : "IO_ERROR",
          `flush failed, the store refuses writes until reopened: ${(err as Error).message}`,
          { cause: err },
        ),
      );
    } finally {
      this.pendingOutputs.delete(number);
      this.flushing =
        this.imms.length > 0 && !this.backgroundError ? this.flushImmutable() : undefined;
    }
    this.scheduleSweep();
  }

  private installView(): void {
    const old = this.view;
    this.view = new ReadView(this.mem, this.imms, this.versions.current);
    old.unref();
  }

  // ---- read path ----

  /** The value, undefined when absent, or MISSING_TABLE when a table must be opened. */
  private getFromView(
    view: ReadView,
    key: Uint8Array,
    seq: number,
    openTables = false,
  ): Uint8Array | undefined | typeof MISSING_TABLE {
    let e = view.mem.count > 0 ? view.mem.get(key, seq) : undefined;
    if (e === undefined) {
      for (const imm of view.imms) {
        e = imm.get(key, seq);
        if (e !== undefined) break;
      }
    }
    if (e !== undefined) return e.kind === KIND_PUT ? Buffer.from(e.value) : undefined;
    const probe = this.probe;
    probe.key = key;
    probe.seq = seq;
    probe.hash = -1;
    probe.result = undefined;
    probe.openTables = openTables;
    view.version.forEachCandidate(key, probe.visit, seq);
    const result = probe.result;
    probe.key = EMPTY_KEY;
    probe.result = undefined;
    return result;
  }

  /**
   * The table part of a get whose candidate tables are not all open: walks the candidates
   * in read order, holding each reader while it is used (opening one may evict another).
   * The memtables were already checked by getFromView.
   */
  private async getOpeningTables(
    view: ReadView,
    key: Uint8Array,
    seq: number,
  ): Promise<Uint8Array | undefined> {
    view.ref();
    try {
      const candidates: FileMetadata[] = [];
      view.version.forEachCandidate(
        key,
        (file) => {
          candidates.push(file);
          return false;
        },
        seq,
      );
      const hash = bloomHash(key);
      for (const file of candidates) {
        const reader = await this.tables.acquire(file.number);
        try {
          const r = reader.getCopy(key, seq, hash);
          if (r !== undefined) return r.kind === KIND_PUT ? r.value : undefined;
        } finally {
          this.tables.release(reader);
        }
      }
      return undefined;
    } finally {
      view.unref();
    }
  }

  /** Opens the readers of `files` (at open, so the first gets need no I/O to open). */
  private async openTables(files: readonly FileMetadata[]): Promise<void> {
    for (const f of files)
      if (this.tables.get(f.number) === undefined) await this.tables.open(f.number);
  }

  /**
   * The merged internal iterator over a view: one child per memtable, one per level-0
   * table (or one for all of level 0 when its files happen not to overlap), and one
   * LevelIterator per deeper level. The table readers are held until it is closed.
   */
  private async internalIterator(view: ReadView, fillCache: boolean): Promise<InternalIterator> {
    const children: InternalIterator[] = [
      view.mem.iterator(),
      ...view.imms.map((m) => m.iterator()),
    ];
    const held: TableReader[] = [];
    const release = () => {
      for (const r of held) this.tables.release(r);
      held.length = 0;
    };
    const options = { fillCache };
    try {
      for (let level = 0; level < view.version.numLevels; level++) {
        const files = view.version.levels[level]!;
        if (files.length === 0) continue;
        const readers: TableReader[] = [];
        for (const f of files) {
          const reader = await this.tables.acquire(f.number);
          held.push(reader);
          readers.push(reader);
        }
        const sorted = level > 0 ? files.map((_, i) => i) : disjointOrder(files);
        if (sorted === undefined) {
          for (const r of readers) children.push(r.iterator(options));
        } else {
          children.push(
            new LevelIterator(
              sorted.map((i) => files[i]!),
              (i) => readers[sorted[i]!]!.iterator(options),
            ),
          );
        }
      }
    } catch (err) {
      for (const c of children) c.close();
      release();
      throw err;
    }
    return new MergingIterator(children, release);
  }

  // ---- obsolete files ----

  private scheduleSweep(): void {
    if (this.sweeping) {
      this.sweepAgain = true;
      return;
    }
    this.sweeping = this.sweepObsoleteFiles()
      .catch(() => {})
      .finally(() => {
        this.sweeping = undefined;
        if (this.sweepAgain && this.closing === undefined) {
          this.sweepAgain = false;
          this.scheduleSweep();
        }
      });
  }

  /**
   * Deletes files no version needs: tables no live version lists (and no flush is
   * writing), logs older than the manifest's log number, old manifests and temp files.
   * Runs only after the manifest edit that dropped them is durable.
   */
  private async sweepObsoleteFiles(): Promise<void> {
    const removed = await deleteObsoleteFiles(this.options.fs, this.dir, () => ({
      liveTables: this.versions.liveFileNumbers(),
      pendingOutputs: this.pendingOutputs,
      minLogNumber: this.versions.logNumber,
      currentLogNumber: this.logNumber,
      manifestNumber: this.versions.manifestNumber,
    }));
    for (const n of removed.tables) this.tables.evict(n);
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new KvError("CLOSED", `store ${this.dir} is closed`);
  }
}

/** Marker: a candidate table is not open yet (the get goes async to open it). */
const MISSING_TABLE: unique symbol = Symbol("missing table");

const EMPTY_KEY = new Uint8Array(0);

/**
 * The table part of a synchronous get (getFromView): the candidate visitor and its state
 * live in one object per store, so a get allocates no closure. Not reentrant: a get runs
 * to completion before the next starts.
 */
class TableProbe {
  key: Uint8Array = EMPTY_KEY;
  seq = 0;
  /** bloomHash(key), computed at the first candidate (-1 before). */
  hash = -1;
  result: Uint8Array | undefined | typeof MISSING_TABLE = undefined;
  /** Open a table that is not open yet, synchronously (getSync), instead of giving up. */
  openTables = false;
  /** forEachCandidate's callback: true (stop) once a table decided or one is not open. */
  readonly visit: (file: FileMetadata) => boolean;

  constructor(tables: TableCache) {
    this.visit = (file) => {
      const reader = this.openTables ? tables.openSync(file.number) : tables.get(file.number);
      if (reader === undefined) {
        this.result = MISSING_TABLE;
        return true;
      }
      if (this.hash < 0) this.hash = bloomHash(this.key);
      const r = reader.getCopy(this.key, this.seq, this.hash);
      if (r === undefined) return false;
      this.result = r.kind === KIND_PUT ? r.value : undefined;
      return true;
    };
  }
}

/** Bytes above target per level (level 0: all of it once at the trigger), summed. */
function pendingCompactionBytes(version: Version, opts: ResolvedOptions): number {
  let pending = 0;
  if (version.numFiles(0) >= opts.compaction.l0CompactionTrigger) pending += version.levelBytes(0);
  for (let level = 1; level < version.numLevels - 1; level++) {
    const excess = version.levelBytes(level) - maxBytesForLevel(level, opts.compaction);
    if (excess > 0) pending += excess;
  }
  return pending;
}

/**
 * Indexes of level-0 files sorted by smallest key if no two of them overlap (then they
 * can be read like a deeper level), else undefined.
 */
function disjointOrder(files: readonly FileMetadata[]): number[] | undefined {
  const order = files.map((_, i) => i);
  order.sort((a, b) => compareBytes(files[a]!.smallestKey, files[b]!.smallestKey));
  for (let k = 1; k < order.length; k++) {
    if (compareBytes(files[order[k - 1]!]!.largestKey, files[order[k]!]!.smallestKey) >= 0) {
      return undefined;
    }
  }
  return order;
}

function checkSnapshot(snapshot: unknown): Snapshot | undefined {
  if (snapshot === undefined) return undefined;
  if (!(snapshot instanceof Snapshot)) {
    throw new KvError("INVALID_ARGUMENT", "snapshot must come from db.snapshot()");
  }
  snapshot.check();
  return snapshot;
}

function boundBytes(v: unknown, name: string): Uint8Array | undefined {
  if (v === undefined) return undefined;
  if (v instanceof Uint8Array) return v;
  if (typeof v === "string") return Buffer.from(v, "utf8");
  throw new KvError("INVALID_ARGUMENT", `${name} must be a Uint8Array or a string`);
}

function iteratorOptions(options: IteratorOptions): DbIteratorOptions {
  if (typeof options !== "object" || options === null) {
    throw new KvError("INVALID_ARGUMENT", "iterator options must be an object");
  }
  const out: DbIteratorOptions = {};
  const gt = boundBytes(options.gt, "gt");
  const gte = boundBytes(options.gte, "gte");
  const lt = boundBytes(options.lt, "lt");
  const lte = boundBytes(options.lte, "lte");
  if (gt !== undefined) out.gt = gt;
  else if (gte !== undefined) out.gte = gte;
  if (lt !== undefined) out.lt = lt;
  else if (lte !== undefined) out.lte = lte;
  if (options.reverse !== undefined) out.reverse = options.reverse === true;
  if (options.keysOnly !== undefined) out.keysOnly = options.keysOnly === true;
  if (options.limit !== undefined) {
    const l = options.limit;
    if (typeof l !== "number" || Number.isNaN(l)) {
      throw new KvError("INVALID_ARGUMENT", "limit must be a number");
    }
    out.limit = l < 0 || l === Number.POSITIVE_INFINITY ? -1 : Math.floor(l);
  }
  return out;
}

async function openLog(
  fs: FileSystem,
  dir: string,
  number: number,
  reuseAt: number | undefined,
  opts: ResolvedOptions,
): Promise<LogWriter> {
  const path = logFilePath(dir, number);
  const file =
    reuseAt !== undefined ? await fs.openWritable(path, reuseAt) : await fs.createWritable(path);
  try {
    if (reuseAt !== undefined) {
      await file.truncate(reuseAt);
      await file.sync();
    } else {
      await file.sync();
      await fs.syncDir(dir);
    }
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
  return new LogWriter(file, { preallocateBytes: opts.walPreallocateBytes });
}

async function prepareDirectory(fs: FileSystem, dir: string, opts: ResolvedOptions): Promise<void> {
  try {
    if (await fs.exists(dir)) return;
    if (!opts.createIfMissing) {
      throw new KvError("INVALID_ARGUMENT", `${dir} does not exist (createIfMissing is false)`);
    }
    await fs.mkdir(dir);
    // The new directory's own name is durable only once its parent is synced.
    await fs.syncDir(dirName(dir));
  } catch (err) {
    throw isKvError(err) ? err : ioError(`cannot create ${dir}`, err, dir);
  }
}

async function takeLock(fs: FileSystem, dir: string): Promise<FileLock> {
  const path = joinPath(dir, LOCK_FILE);
  try {
    return await fs.lock(path);
  } catch (err) {
    if (err instanceof LockHeldError) {
      throw new KvError(
        "LOCKED",
        `${dir} is in use by another open store (in this process or another); close it first`,
        { file: path, cause: err },
      );
    }
    throw ioError("cannot take the data-directory lock", err, path);
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
