/**
 * Opening a data directory (docs/design.md, "Recovery"): everything a KvStore is built
 * from. Creates the directory when allowed (its name made durable), takes the directory
 * lock, recovers the manifest (or creates the first one), replays the write-ahead logs the
 * manifest still needs into a memtable, and opens the newest of them for appending, cut to
 * its last good record (or a new log).
 */
import { ioError, isKvError, KvError } from "../errors.js";
import type { Memtable } from "../memtable/memtable.js";
import { BlockCache } from "../sstable/block-cache.js";
import { TableCache } from "../sstable/table-cache.js";
import {
  CLUSTER_MEMBER_FILE,
  CURRENT_FILE,
  LOCK_FILE,
  logFilePath,
  parseFileName,
} from "../version/file-names.js";
import { VersionSet } from "../version/version-set.js";
import {
  dirName,
  type FileLock,
  type FileSystem,
  joinPath,
  LockHeldError,
} from "../vfs/file-system.js";
import type { LogWriter } from "../wal/log-writer.js";
import { openLog, settleLog } from "./open-log.js";
import type { ResolvedOptions } from "./options.js";
import { type RecoveryReport, replayLogs } from "./recovery.js";

/** A recovered data directory: what the store is built from. */
export interface RecoveredStore {
  readonly dir: string;
  readonly options: ResolvedOptions;
  readonly lock: FileLock;
  readonly versions: VersionSet;
  readonly tables: TableCache;
  readonly blockCache: BlockCache;
  /** The writes of the logs replayed. */
  readonly memtable: Memtable;
  /** The log writes go to, and its number. */
  readonly log: LogWriter;
  readonly logNumber: number;
  /** Sequence number of the newest entry, in the manifest or in a log. */
  readonly lastSequence: number;
  readonly report: RecoveryReport;
}

/**
 * Opens the directory `dir` (see the module comment). On failure everything taken so far
 * is released; the error is a KvError (INVALID_ARGUMENT, LOCKED, CORRUPTION, IO_ERROR).
 */
export async function recoverStore(dir: string, opts: ResolvedOptions): Promise<RecoveredStore> {
  const fs = opts.fs;
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
    if (names.includes(CLUSTER_MEMBER_FILE)) {
      throw new KvError(
        "FAILED_PRECONDITION",
        `${dir} holds a cluster member's data (${CLUSTER_MEMBER_FILE}), not a store: start it as a cluster member (--initial-cluster)`,
        { file: joinPath(dir, CLUSTER_MEMBER_FILE) },
      );
    }
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
    // Empty logs after the newest one that may hold records were created ahead of a
    // memtable switch that never came (memtable-flushes.ts, prepareNextLog): they hold
    // nothing, and the log before them may still end in an unsynced tail, so writes must
    // resume in that one (cut at its last good record), not after it. They are removed
    // (should the removal be lost in a crash, the next open removes them again).
    try {
      while (live.length > 1 && (await fs.fileSize(logFilePath(dir, live.at(-1)!))) === 0) {
        await fs.remove(logFilePath(dir, live.pop()!));
      }
    } catch (err) {
      throw ioError("remove empty write-ahead logs", err, dir);
    }
    const state = await replayLogs(fs, dir, live, opts.walRecoveryMode);
    const lastSequence = Math.max(versions.lastSequence, state.lastSequence);
    // Writes resume in the newest live log, cut to its last good record first so that
    // no torn or stale bytes can follow new records; the cut is fsynced before any
    // append. After skipCorrupted recovery the damage stays in the old log (cutting
    // there would drop the good records after it), so writes go to a new log; so they do
    // when the newest log holds version 1 records (a version 2 writer does not continue
    // a version 1 block). After pointInTime recovery stopped at damage, writes resume in
    // the log where it stopped, cut there, and the later logs (written after the point)
    // are removed first.
    const stopped = state.stoppedInLog;
    if (stopped !== undefined) {
      const later = live.filter((n) => n > stopped);
      try {
        for (const n of later) await fs.remove(logFilePath(dir, n));
        if (later.length > 0) await fs.syncDir(dir);
      } catch (err) {
        throw ioError("remove write-ahead logs after the recovery point", err, dir);
      }
    }
    const newest = stopped ?? live.at(-1);
    const reuse =
      newest !== undefined && opts.walRecoveryMode !== "skipCorrupted" && state.lastLogFormat !== 1;
    // Every log read and not reused is made durable as read before a newer log gets a
    // record (which proves the older ones synced: src/db/recovery.ts); the newest one is
    // cut to its last good record first, so its torn tail is gone as when it is reused.
    try {
      for (const n of live) {
        if (n > (newest ?? 0) || (reuse && n === newest)) continue;
        await settleLog(fs, dir, n, n === newest ? state.lastLogGoodEnd : undefined);
      }
    } catch (err) {
      throw ioError("sync the write-ahead logs read at open", err, dir);
    }
    const logNumber = reuse ? newest : versions.newFileNumber();
    const reuseAt = reuse ? state.lastLogGoodEnd : undefined;
    const log = await openLog(fs, dir, logNumber, reuseAt, opts.walPreallocateBytes);
    const blockCache = new BlockCache(opts.blockCacheSize);
    tables = new TableCache(fs, dir, {
      maxOpenFiles: opts.maxOpenFiles,
      blockCache,
      verifyChecksums: opts.verifyChecksums,
    });
    return {
      dir,
      options: opts,
      lock,
      versions,
      tables,
      blockCache,
      memtable: state.memtable,
      log,
      logNumber,
      lastSequence,
      report: state.report,
    };
  } catch (err) {
    await releaseRecovered({ lock, versions, tables });
    throw isKvError(err) ? err : ioError(`cannot open store in ${dir}`, err);
  }
}

/**
 * Closes the manifest and the table files and releases the lock of a recovered store that
 * will not be used (an open failing after recovery). Failures are ignored.
 */
export async function releaseRecovered(parts: {
  lock: FileLock;
  versions: VersionSet | undefined;
  tables: TableCache | undefined;
}): Promise<void> {
  await parts.versions?.close().catch(() => {});
  await parts.tables?.close().catch(() => {});
  await parts.lock.release().catch(() => {});
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
