/**
 * KvStore: the embedded store. Write path: validate -> encode one batch -> CommitQueue
 * (WAL append, group fdatasync, memtable insert). Read path: the memtable at the last
 * published sequence. See docs/design.md.
 */
import { type BytesLike, checkKey, toBytes } from "../batch/bytes.js";
import {
  decodeBatch,
  encodeSingleDelete,
  encodeSinglePut,
  WriteBatch,
} from "../batch/write-batch.js";
import { ioError, isKvError, KvError } from "../errors.js";
import { KIND_PUT } from "../key/internal-key.js";
import type { Memtable } from "../memtable/memtable.js";
import {
  dirName,
  type FileLock,
  type FileSystem,
  joinPath,
  LockHeldError,
} from "../vfs/file-system.js";
import { LogWriter } from "../wal/log-writer.js";
import { CommitQueue, type CommitStats } from "./commit-queue.js";
import { LOCK_FILE, logFilePath, parseFileName } from "./filenames.js";
import { type OpenOptions, type ResolvedOptions, resolveOptions } from "./options.js";
import { type RecoveryReport, replayLogs } from "./recovery.js";

export interface WriteOptions {
  /** Durable before the promise resolves (default: the store's `sync` option). */
  sync?: boolean;
}

/** A snapshot of counters for tests, benchmarks and operators. */
export interface StoreStats {
  /** Sequence number of the newest visible entry. */
  lastSequence: number;
  memtableBytes: number;
  memtableEntries: number;
  /** Number of the write-ahead log that receives writes. */
  logNumber: number;
  commit: CommitStats;
}

export class KvStore {
  private closing: Promise<void> | undefined;

  private constructor(
    /** The data directory. */
    readonly dir: string,
    private readonly options: ResolvedOptions,
    private readonly lock: FileLock,
    private readonly memtable: Memtable,
    private readonly log: LogWriter,
    private readonly logNumber: number,
    private readonly commits: CommitQueue,
    /** What recovery found at open: logs replayed, torn tails dropped, damage skipped. */
    readonly recovery: RecoveryReport,
  ) {}

  /** Opens (creating when allowed) the store in `dir`. See `open`. */
  static async open(dir: string, options?: OpenOptions): Promise<KvStore> {
    if (typeof dir !== "string" || dir.length === 0) {
      throw new KvError("INVALID_ARGUMENT", "dir must be a non-empty string");
    }
    const opts = resolveOptions(options);
    const fs = opts.fs;
    await prepareDirectory(fs, dir, opts);
    const lock = await takeLock(fs, dir);
    try {
      const logs = (await fs.list(dir))
        .map(parseFileName)
        .filter((p) => p?.type === "log")
        .map((p) => (p as { number: number }).number)
        .sort((a, b) => a - b);
      if (logs.length > 0 && opts.errorIfExists) {
        throw new KvError("INVALID_ARGUMENT", `${dir} already holds a store (errorIfExists)`);
      }
      const state = await replayLogs(fs, dir, logs, opts.walRecoveryMode);
      // Writes resume in the newest log, cut to its last good record first so that no
      // torn or stale bytes can follow new records; the cut is fsynced before any append.
      // After skipCorrupted recovery the damage stays in the old log (it is evidence, and
      // cutting there would drop the good records after it), so writes go to a new log.
      const reuse = logs.length > 0 && opts.walRecoveryMode !== "skipCorrupted";
      const logNumber = reuse ? logs.at(-1)! : (logs.at(-1) ?? 0) + 1;
      const logPath = logFilePath(dir, logNumber);
      const file = reuse
        ? await fs.openWritable(logPath, state.lastLogGoodEnd)
        : await fs.createWritable(logPath);
      try {
        if (reuse) {
          await file.truncate(state.lastLogGoodEnd);
          await file.sync();
        } else {
          await file.sync();
          await fs.syncDir(dir);
        }
      } catch (err) {
        await file.close().catch(() => {});
        throw err;
      }
      const log = new LogWriter(file, { preallocateBytes: opts.walPreallocateBytes });
      const memtable = state.memtable;
      const commits = new CommitQueue(
        log,
        (rep) => {
          decodeBatch(rep, (seq, kind, key, value) => memtable.add(seq, kind, key, value));
        },
        state.lastSequence,
        logPath,
      );
      return new KvStore(dir, opts, lock, memtable, log, logNumber, commits, state.report);
    } catch (err) {
      await lock.release().catch(() => {});
      throw isKvError(err) ? err : ioError(`cannot open store in ${dir}`, err);
    }
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
   * The newest value of `key`, or undefined when it is absent or deleted. The result is
   * a copy (a Buffer) the caller may keep and change.
   */
  get(key: BytesLike): Promise<Uint8Array | undefined> {
    try {
      this.checkOpen();
      checkKey(key);
      const entry = this.memtable.get(toBytes(key), this.commits.sequence);
      if (entry === undefined || entry.kind !== KIND_PUT) return Promise.resolve(undefined);
      return Promise.resolve(Buffer.from(entry.value));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  stats(): StoreStats {
    return {
      lastSequence: this.commits.sequence,
      memtableBytes: this.memtable.approximateBytes,
      memtableEntries: this.memtable.count,
      logNumber: this.logNumber,
      commit: { ...this.commits.stats },
    };
  }

  /**
   * Waits for queued writes, makes the log durable (so writes made with sync: false are
   * kept too), closes files and releases the directory lock. Calling it again returns the
   * same promise. Operations after close fail with CLOSED.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    await this.commits.whenIdle();
    let failure: unknown;
    try {
      if (this.commits.error === undefined) {
        this.log.flush();
        await this.log.sync();
      }
    } catch (err) {
      failure = ioError("final sync of the write-ahead log failed", err);
    }
    await this.log.close().catch((err: unknown) => {
      failure ??= ioError("closing the write-ahead log failed", err);
    });
    await this.lock.release().catch((err: unknown) => {
      failure ??= ioError("releasing the lock failed", err);
    });
    if (failure !== undefined) throw failure;
  }

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
    }
    return this.commits.submit(rep, sync);
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new KvError("CLOSED", `store ${this.dir} is closed`);
  }
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
 * `createIfMissing: false`). Takes the directory lock, replays the write-ahead log and
 * resumes writing it.
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
