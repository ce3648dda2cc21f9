/**
 * Checkpoints: a consistent copy of a store that opens as a store, made of hard links to
 * its table files (immutable, so sharing them is safe) plus a fresh manifest and CURRENT.
 * RocksDB's Checkpoint, and the shape a Raft snapshot needs.
 *
 * What it holds: every write acknowledged before `checkpoint` was called (the memtable is
 * flushed first), and possibly some later ones, always as a prefix of the store's history
 * (the files of one version). It has no logs. The copy is durable when the call resolves:
 * each copied file and the manifest are synced, then the directory.
 */
import { ioError, KvError } from "../errors.js";
import { tableFilePath } from "../version/file-names.js";
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

/** Copies file `from` to a new file `to` and syncs it. */
async function copyFile(fs: FileSystem, from: string, to: string): Promise<void> {
  let src: ReadableFile | undefined;
  let dst: WritableFile | undefined;
  try {
    src = await fs.openReadable(from);
    dst = await fs.createWritable(to);
    const buf = new Uint8Array(COPY_CHUNK);
    for (let at = 0; ; ) {
      const n = src.read(buf, at);
      if (n === 0) break;
      dst.append(buf.subarray(0, n));
      at += n;
    }
    await dst.sync();
  } finally {
    await src?.close().catch(() => {});
    await dst?.close();
  }
}

/**
 * Puts the table files of `version` (kept referenced by the caller) and a manifest naming
 * them into `targetDir`, which must not exist yet. REQUIRES `lastSequence` >= every
 * sequence number in those files.
 */
export async function writeCheckpoint(
  fs: FileSystem,
  dir: string,
  targetDir: string,
  versions: VersionSet,
  version: Version,
  lastSequence: number,
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
  await versions.writeCheckpointManifest(targetDir, version, lastSequence);
  return result;
}
