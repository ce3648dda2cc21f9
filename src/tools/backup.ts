/**
 * `backup`: a consistent copy of a store in a new directory, through `db.checkpoint`
 * (src/db/checkpoint.ts): the memtable is flushed, every table file of the current version
 * is hard-linked into the copy (copied when linking fails, e.g. across devices) and a
 * fresh manifest written; the copy has no logs and opens as a store. Afterwards the copy's
 * manifest is read back (read-only) to report what it holds. `options.checkpoint` writes
 * the copy another way (a cluster member's store: a plain store of its user keys).
 */
import type { CheckpointResult } from "../db/checkpoint.js";
import type { KvStore } from "../db/kv-store.js";
import type { OpenOptions } from "../db/options.js";
import { readManifestOfCurrent } from "../version/manifest-replay.js";
import { baseName, type FileSystem } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { openExistingStore } from "./open-store.js";

export interface BackupReport extends CheckpointResult {
  from: string;
  to: string;
  /** The copy's manifest ("MANIFEST-000012"), its files per level and last sequence. */
  manifest: string;
  levelFiles: number[];
  lastSequence: number;
}

/**
 * Copies the store in `dir` to `to`, which must not exist. Throws LOCKED while the store
 * is open elsewhere, INVALID_ARGUMENT when `dir` holds no store or `to` exists.
 */
export async function backupStore(
  dir: string,
  to: string,
  options: Pick<OpenOptions, "fs" | "numLevels"> & {
    /** Writes the copy of the open store into `to` (default: db.checkpoint(to)). */
    checkpoint?: (db: KvStore, to: string, fs: FileSystem) => Promise<CheckpointResult>;
  } = {},
): Promise<BackupReport> {
  const { checkpoint, ...openOptions } = options;
  const fs = options.fs ?? new RealFileSystem();
  const db = await openExistingStore(dir, { ...openOptions, fs });
  let result: CheckpointResult;
  try {
    result = await (checkpoint?.(db, to, fs) ?? db.checkpoint(to));
  } finally {
    await db.close();
  }
  const copy = await readManifestOfCurrent(fs, to, options.numLevels);
  return {
    ...result,
    from: dir,
    to,
    manifest: baseName(copy.path),
    levelFiles: copy.version.levels.map((files) => files.length),
    lastSequence: copy.lastSequence,
  };
}
