/**
 * Opening a write-ahead log for appending: a new one, or the newest one after recovery,
 * resumed where its last good record ends (src/wal/log-writer.ts writes the records).
 */
import { logFilePath } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import { LogWriter } from "../wal/log-writer.js";

/**
 * Opens log `number` in `dir` for appending. New (`reuseAt` undefined): created, synced,
 * and its name made durable (directory synced) before any record goes in. Reused: cut to
 * `reuseAt` (the end of its last good record, so that no torn or stale bytes can follow
 * new records) and synced before any append. The file is closed if a step fails; the
 * error is the file system's, as thrown.
 */
export async function openLog(
  fs: FileSystem,
  dir: string,
  number: number,
  reuseAt: number | undefined,
  preallocateBytes: number,
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
  return new LogWriter(file, { preallocateBytes });
}
