/**
 * Checkpoints: a consistent copy of a store that opens as a store, made of hard links to
 * its table files (immutable, so sharing them is safe) plus a fresh manifest and CURRENT.
 * RocksDB's Checkpoint, and the shape a Raft snapshot needs.
 *
 * What it holds: every write acknowledged before `checkpoint` was called, and possibly
 * some later ones, always as a prefix of the store's history. Either the memtable is
 * flushed first and the checkpoint is the files of one version, without logs; or (when
 * the logs are small, RocksDB's `log_size_for_flush`) nothing is flushed: the checkpoint
 * is the files of the version current at the call, plus copies of the logs of the
 * memtables not yet in its tables (those being flushed, whole; the live one's prefix
 * written by then), which opening the checkpoint replays. The copy
 * is durable when the call resolves: each copied file and the manifest are synced, then
 * the directory.
 */
import { yieldToEventLoop } from "../compaction/event-loop-yield.js";
import { ioError, KvError } from "../errors.js";
import { logFilePath, tableFilePath } from "../version/file-names.js";
import type { Version } from "../version/version.js";
import type { VersionSet } from "../version/version-set.js";
import {
  dirName,
  type FileSystem,
  type ReadableFile,
  type WritableFile,
} from "../vfs/file-system.js";

const COPY_CHUNK = 1 << 20;

/** How the table files reached the checkpoint. */
export interface CheckpointResult {
  /** Table files hard-linked. */
  linked: number;
  /** Table files copied (hard links failed, e.g. another device). */
  copied: number;
  /** Bytes of the table files. */
  bytes: number;
}

export interface CheckpointOptions {
  /**
   * When the live log holds fewer bytes than this, copy it into the checkpoint instead of
   * flushing the memtable first (RocksDB's `log_size_for_flush`). Default 0: always flush.
   * The copy costs its bytes once more on disk and a replay when the checkpoint opens; the
   * flush costs a table write that the store's writes may wait behind.
   */
  logSizeForFlush?: number;
}

/** What KvStore.captureCheckpoint fixed: a checkpoint yet to be written. */
export interface CheckpointCapture {
  /**
   * Writes the captured checkpoint into `targetDir` (which must not exist); durable when it
   * resolves. Throws INVALID_ARGUMENT once released.
   */
  write(targetDir: string): Promise<CheckpointResult>;
  /** Lets the captured files go (they may be deleted from then on). Idempotent. */
  release(): void;
}

/** A log that a checkpoint copies (the live log's written prefix, or a whole older one). */
export interface CheckpointLog {
  /** The log's file number (the copy keeps it). */
  number: number;
  /**
   * Bytes of it to copy: for the live log, what had been written when the checkpoint's
   * version was taken; undefined for an older log (no longer written to): all of it.
   */
  bytes: number | undefined;
}

/**
 * Copies file `from` (its first `limit` bytes, when given) to a new file `to`, yielding to
 * the event loop between chunks; syncs it.
 */
async function copyFile(fs: FileSystem, from: string, to: string, limit = Infinity): Promise<void> {
  let src: ReadableFile | undefined;
  let dst: WritableFile | undefined;
  try {
    src = await fs.openReadable(from);
    dst = await fs.createWritable(to);
    const buf = new Uint8Array(COPY_CHUNK);
    for (let at = 0; at < limit; ) {
      const n = src.read(buf.subarray(0, Math.min(buf.length, limit - at)), at);
      if (n === 0) break;
      dst.append(buf.subarray(0, n));
      at += n;
      // The reads are synchronous: a large copy would hold the event loop.
      await yieldToEventLoop();
    }
    await dst.sync();
  } finally {
    await src?.close().catch(() => {});
    await dst?.close();
  }
}

/**
 * Puts the table files of `version` (kept referenced by the caller) and a manifest naming
 * them into `targetDir`, which must not exist yet; with `logs` (kept from deletion by the
 * caller; ascending numbers), also copies of them, which the manifest names as the logs to
 * replay (from the first one's number on). REQUIRES `lastSequence` >= every sequence number
 * in those files, and `logs` to be exactly the logs holding writes that `version`'s tables
 * do not (the live log's prefix last).
 */
export async function writeCheckpoint(
  fs: FileSystem,
  dir: string,
  targetDir: string,
  versions: VersionSet,
  version: Version,
  lastSequence: number,
  logs: readonly CheckpointLog[] = [],
): Promise<CheckpointResult> {
  if (await fs.exists(targetDir)) {
    throw new KvError("INVALID_ARGUMENT", `checkpoint directory ${targetDir} already exists`);
  }
  try {
    await fs.mkdir(targetDir);
    // The directory's own name must be durable too, or a power loss could lose it all.
    await fs.syncDir(dirName(targetDir));
  } catch (err) {
    throw ioError(`create checkpoint directory ${targetDir}`, err, targetDir);
  }
  const result: CheckpointResult = { linked: 0, copied: 0, bytes: 0 };
  for (const log of logs) {
    const from = logFilePath(dir, log.number);
    const to = logFilePath(targetDir, log.number);
    try {
      await copyFile(fs, from, to, log.bytes);
    } catch (err) {
      throw ioError(`copy ${from} to the checkpoint`, err, to);
    }
  }
  for (const { file } of version.allFiles()) {
    const from = tableFilePath(dir, file.number);
    const to = tableFilePath(targetDir, file.number);
    try {
      await fs.link(from, to);
      result.linked++;
    } catch {
      try {
        await copyFile(fs, from, to);
      } catch (err) {
        throw ioError(`copy ${from} to the checkpoint`, err, to);
      }
      result.copied++;
    }
    result.bytes += file.size;
  }
  // The manifest's sync and the directory sync that follows CURRENT's rename make the
  // links durable too.
  await versions.writeCheckpointManifest(targetDir, version, lastSequence, logs[0]?.number);
  return result;
}
