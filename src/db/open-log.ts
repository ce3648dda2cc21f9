/**
 * Opening a write-ahead log for appending: a new one, or the newest one after recovery,
 * resumed where its last good record ends (src/wal/log-writer.ts writes the records, in
 * log format version 2: docs/format/wal.md). And settling a log that recovery read but
 * writes will not resume in.
 */
import { logFilePath } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import { LogWriter } from "../wal/log-writer.js";

/**
 * Opens log `number` in `dir` for appending. New (`reuseAt` undefined): created, synced,
 * and its name made durable (directory synced) before any record goes in. Reused: cut to
 * `reuseAt` (the end of its last good record, so that no torn or stale bytes can follow
 * new records) and synced before any append; the first records then claim `reuseAt`
 * durable. REQUIRES: a reused log holds no version 1 record (a version 2 writer must not
 * continue a version 1 block). The file is closed if a step fails; the error is the file
 * system's, as thrown.
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
  // Preallocation starts with the first durable sync: a log of unsynced writes only is
  // never extended with zeros (see LogWriterOptions.preallocateOnceSynced).
  return new LogWriter(file, {
    preallocateBytes,
    preallocateOnceSynced: true,
    formatVersion: 2,
    syncedEnd: reuseAt ?? 0,
  });
}

/**
 * Makes log `number` durable as recovery read it, before writes go to a newer log (whose
 * first record then proves this one synced; see src/db/recovery.ts): cut to `cutAt` first
 * when given (the end of its last good record), then synced and closed. What recovery
 * read may have been only in the page cache (after a process crash). The error is the
 * file system's, as thrown.
 */
export async function settleLog(
  fs: FileSystem,
  dir: string,
  number: number,
  cutAt: number | undefined,
): Promise<void> {
  const file = await fs.openWritable(logFilePath(dir, number), cutAt);
  try {
    if (cutAt !== undefined) await file.truncate(cutAt);
    await file.sync();
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
  await file.close();
}
