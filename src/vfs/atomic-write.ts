/**
 * The durability protocol for small metadata files (CURRENT, cluster membership, snapshot
 * descriptors): write a temp file, fsync it, rename it over the target, fsync the
 * directory. See ../../docs/design.md, "Durability promises".
 *
 * Contract:
 * - When `writeFileAtomically` resolves, `path` holds exactly `data`, durably.
 * - When it throws, `path` still holds what it held before (or is still absent): the
 *   rename is the only step that touches it, and a crash at any point leaves either the
 *   old content or the new one, never a mix. A temp file may be left behind; callers that
 *   own a directory remove stale temp files when they open it.
 * - Errors are KvError IO_ERROR naming the step and the file. A failed fsync is never
 *   retried (docs/design.md, "When the log fails").
 */

import { ioError } from "../errors.js";
import { dirName, type FileSystem, type WritableFile } from "./file-system.js";

export interface AtomicWriteOptions {
  /** The temp file's path; default `${path}.tmp`. Must be in the same directory as `path`. */
  tempPath?: string;
}

/** Replaces `path` with `data` atomically and durably (the protocol above). */
export async function writeFileAtomically(
  fs: FileSystem,
  path: string,
  data: Uint8Array,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const tmp = options.tempPath ?? `${path}.tmp`;
  const dir = dirName(path);
  if (dirName(tmp) !== dir) {
    throw new Error(`atomic write: temp file ${tmp} is not in the directory of ${path}`);
  }
  let file: WritableFile;
  try {
    file = await fs.createWritable(tmp);
  } catch (err) {
    throw ioError(`create ${tmp}`, err, tmp);
  }
  try {
    file.append(data);
    await file.sync();
  } catch (err) {
    await file.close().catch(() => {});
    throw ioError(`write ${tmp}`, err, tmp);
  }
  try {
    await file.close();
  } catch (err) {
    throw ioError(`close ${tmp}`, err, tmp);
  }
  try {
    await fs.rename(tmp, path);
  } catch (err) {
    throw ioError(`rename ${tmp} to ${path}`, err, path);
  }
  try {
    await fs.syncDir(dir);
  } catch (err) {
    throw ioError(`sync directory ${dir}`, err, dir);
  }
}
