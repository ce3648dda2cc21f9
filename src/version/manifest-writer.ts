/**
 * Writing a new manifest: the one route by which a MANIFEST file comes to be, used by the
 * version set (at create, at every recover and at rollover), by checkpoints and by repair
 * (docs/format/manifest.md, "CURRENT", steps 1 to 5):
 *
 *   create MANIFEST-N, append the snapshot edit as one record, fdatasync it,
 *   fsync the directory (the name is durable before anything names it),
 *   install CURRENT naming it (current-file.ts: temp file, fsync, rename, fsync the dir).
 *
 * A crash at any point leaves CURRENT naming a complete, synced manifest: the previous
 * one, or MANIFEST-N once the last directory fsync is done. Deleting the previous
 * manifest is the caller's business, and only once this resolves.
 */
import { ioError } from "../errors.js";
import type { FileSystem, WritableFile } from "../vfs/file-system.js";
import { LogWriter } from "../wal/log-writer.js";
import { installCurrent } from "./current-file.js";
import { manifestFilePath } from "./file-names.js";
import {
  type AddedFile,
  BYTEWISE_COMPARATOR,
  encodeVersionEdit,
  MANIFEST_FORMAT_VERSION,
  VersionEdit,
} from "./version-edit.js";

/** The counters every snapshot edit carries. */
export interface ManifestCounters {
  /** Write-ahead logs numbered below this are no longer needed. */
  logNumber: number;
  /** Every file number in use is below this. */
  nextFileNumber: number;
  /** The highest sequence number in use. */
  lastSequence: number;
}

/**
 * A snapshot edit: the format version, the comparator, `counters`, and every file of
 * `files` added at its level, in the order given.
 */
export function snapshotEdit(files: Iterable<AddedFile>, counters: ManifestCounters): VersionEdit {
  const edit = new VersionEdit();
  edit.formatVersion = MANIFEST_FORMAT_VERSION;
  edit.comparatorName = BYTEWISE_COMPARATOR;
  edit.logNumber = counters.logNumber;
  edit.nextFileNumber = counters.nextFileNumber;
  edit.lastSequence = counters.lastSequence;
  for (const added of files) edit.addedFiles.push(added);
  return edit;
}

/**
 * Writes MANIFEST-`number` into `dir` holding `snapshot` (a snapshot edit, see
 * snapshotEdit) and makes CURRENT name it (the module comment). Resolves, once all of it
 * is durable, with the manifest's writer, open for appending edits; the caller closes it.
 *
 * Throws IO_ERROR naming the manifest (or the step of the CURRENT swap that failed); the
 * manifest is then closed and CURRENT names the manifest it named before, except when only
 * the last directory fsync failed, after which either may be current after a crash.
 */
export async function writeManifest(
  fs: FileSystem,
  dir: string,
  number: number,
  snapshot: VersionEdit,
): Promise<LogWriter> {
  const path = manifestFilePath(dir, number);
  const record = encodeVersionEdit(snapshot);
  let file: WritableFile;
  try {
    file = await fs.createWritable(path);
  } catch (err) {
    throw ioError(`create manifest ${path}`, err, path);
  }
  const writer = new LogWriter(file);
  try {
    writer.appendRecord(record);
    await writer.sync();
    try {
      await fs.syncDir(dir);
    } catch (err) {
      throw ioError(`sync directory ${dir}`, err, dir);
    }
    await installCurrent(fs, dir, number);
  } catch (err) {
    await writer.close().catch(() => {});
    throw ioError(`write manifest ${path}`, err, path);
  }
  return writer;
}

/**
 * `writeManifest` for a manifest nothing is appended to (checkpoints, repair): the writer
 * is closed once CURRENT names the manifest. A failure to close it is ignored: its content
 * is synced by then.
 */
export async function installManifest(
  fs: FileSystem,
  dir: string,
  number: number,
  snapshot: VersionEdit,
): Promise<void> {
  const writer = await writeManifest(fs, dir, number, snapshot);
  await writer.close().catch(() => {});
}
