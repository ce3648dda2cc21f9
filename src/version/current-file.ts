/**
 * CURRENT: the one-line file naming the manifest in use (docs/format/manifest.md,
 * "CURRENT"): exactly "MANIFEST-" + six or more digits + "\n".
 *
 * - `readCurrent` returns the number CURRENT names. Every reader (recovery, the tools)
 *   goes through it, so they accept and refuse the same files.
 * - `installCurrent` replaces CURRENT atomically and durably, by the one protocol for
 *   small metadata files (src/vfs/atomic-write.ts): the temp file `N.dbtmp` is written
 *   and fsynced, renamed over CURRENT, and the directory fsynced. REQUIRES: MANIFEST-N is
 *   complete, synced and its name durable (manifest-writer.ts does both in that order).
 */
import { ioError, KvError } from "../errors.js";
import { writeFileAtomically } from "../vfs/atomic-write.js";
import type { FileSystem, ReadableFile } from "../vfs/file-system.js";
import { currentFilePath, manifestFileName, tempFilePath } from "./file-names.js";

/** Largest CURRENT file accepted (it holds one short line). */
const MAX_CURRENT_BYTES = 4096;

const CURRENT_LINE = /^MANIFEST-(\d{6,})\n$/;

/** True iff `err` is the file system's "no such file". */
export function isNotFound(err: unknown): boolean {
  return (err as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}

/** True iff `dir` holds a store (a CURRENT file). IO_ERROR when that cannot be checked. */
export async function currentExists(fs: FileSystem, dir: string): Promise<boolean> {
  const path = currentFilePath(dir);
  try {
    return await fs.exists(path);
  } catch (err) {
    throw ioError(`check for ${path}`, err, path);
  }
}

/**
 * Makes CURRENT in `dir` name MANIFEST-`manifestNumber` (see the module comment). Once
 * this resolves the change is durable; when it throws, CURRENT still names the manifest it
 * named before (IO_ERROR naming the step and the file).
 */
export function installCurrent(fs: FileSystem, dir: string, manifestNumber: number): Promise<void> {
  const line = new TextEncoder().encode(`${manifestFileName(manifestNumber)}\n`);
  return writeFileAtomically(fs, currentFilePath(dir), line, {
    tempPath: tempFilePath(dir, manifestNumber),
  });
}

/**
 * The manifest number CURRENT names. Throws CORRUPTION naming CURRENT when it is missing
 * or malformed, IO_ERROR when it cannot be read.
 */
export async function readCurrent(fs: FileSystem, dir: string): Promise<number> {
  const path = currentFilePath(dir);
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    if (isNotFound(err)) {
      throw new KvError("CORRUPTION", `${path} is missing: no manifest can be found`, {
        file: path,
        cause: err,
      });
    }
    throw ioError(`open ${path}`, err, path);
  }
  let text: string;
  try {
    if (file.size > MAX_CURRENT_BYTES) {
      throw new KvError(
        "CORRUPTION",
        `${path} is malformed: ${file.size} bytes, at most ${MAX_CURRENT_BYTES} expected`,
        { file: path },
      );
    }
    const buf = new Uint8Array(file.size);
    let n: number;
    try {
      n = file.read(buf, 0);
    } catch (err) {
      throw ioError(`read ${path}`, err, path);
    }
    text = Buffer.from(buf.buffer, buf.byteOffset, n).toString("latin1");
  } finally {
    await file.close().catch(() => {});
  }
  const m = CURRENT_LINE.exec(text);
  const number = m === null ? Number.NaN : Number(m[1]);
  if (!Number.isSafeInteger(number)) {
    throw new KvError(
      "CORRUPTION",
      `${path} is malformed: expected one line "MANIFEST-NNNNNN", got ${JSON.stringify(text.slice(0, 64))}`,
      { file: path },
    );
  }
  return number;
}
