/**
 * Opening an existing store for a tool (`compact`, `backup`, `stats`): unlike `open`, it
 * never creates a store: a missing directory, or one without a CURRENT file, is
 * INVALID_ARGUMENT. Opening takes the directory's lock (LOCKED while a server or another
 * process has the store open), replays the logs and may start background compactions,
 * like any open; close the store when done.
 */

import { type KvStore, open } from "../db/kv-store.js";
import type { OpenOptions } from "../db/options.js";
import { KvError } from "../errors.js";
import { currentFilePath } from "../version/file-names.js";
import { RealFileSystem } from "../vfs/real-file-system.js";

/** Opens the store in `dir`, which must exist; see the module comment. */
export async function openExistingStore(dir: string, options: OpenOptions = {}): Promise<KvStore> {
  const fs = options.fs ?? new RealFileSystem();
  if (!(await fs.exists(dir))) throw new KvError("INVALID_ARGUMENT", `${dir} does not exist`);
  if (!(await fs.exists(currentFilePath(dir)))) {
    throw new KvError("INVALID_ARGUMENT", `${dir} holds no store (no CURRENT file)`);
  }
  return open(dir, { ...options, fs, createIfMissing: false });
}
