/**
 * Manifest replay (docs/format/manifest.md, "Recovery", steps 2 and 3): a manifest's
 * edits applied in order to an empty version, with the checks recovery makes. The store's
 * recovery (`VersionSet.recover`) and the read-only tools (verify, repair, backup) use the
 * same code, so a tool accepts exactly the manifests a store opens.
 *
 * Checks, each failure CORRUPTION naming the manifest: strict tail (only a file ending
 * inside its last record is a torn append, dropped); the first edit a snapshot; the
 * bytewise comparator; every edit decoding and applying; the three counters set; the
 * final version valid (level invariants). Nothing here writes.
 */
import { ioError, isKvError, KvError } from "../errors.js";
import type { FileSystem, ReadableFile } from "../vfs/file-system.js";
import { readLog } from "../wal/log-reader.js";
import { isNotFound, readCurrent } from "./current-file.js";
import { CURRENT_FILE, currentFilePath, manifestFilePath } from "./file-names.js";
import type { ManifestCounters } from "./manifest-writer.js";
import { NUM_LEVELS, Version, VersionEditError } from "./version.js";
import { VersionBuilder } from "./version-builder.js";
import { BYTEWISE_COMPARATOR, decodeVersionEdit } from "./version-edit.js";

/** A replayed manifest: its edits applied to a builder (whose version builds), counters. */
export interface ManifestReplay extends ManifestCounters {
  path: string;
  builder: VersionBuilder;
  /** Edits replayed (the snapshot included). */
  edits: number;
  /** Bytes of a torn last record dropped: an edit whose logAndApply never resolved. */
  tornTailBytes: number;
}

/** A manifest replayed by a tool: the version it builds, counters. */
export interface ManifestState extends ManifestCounters {
  path: string;
  version: Version;
  edits: number;
  /** Bytes of a torn last record (an edit that was never acknowledged). */
  tornTailBytes: number;
}

/**
 * Replays the manifest at `path` for recovery. A missing manifest is CORRUPTION (CURRENT
 * names a file that does not exist), one that cannot be opened otherwise IO_ERROR.
 */
export async function replayManifest(
  fs: FileSystem,
  path: string,
  numLevels: number,
): Promise<ManifestReplay> {
  const file = await fs.openReadable(path).catch((err: unknown) => {
    if (!isNotFound(err)) throw ioError(`open manifest ${path}`, err, path);
    throw new KvError("CORRUPTION", `${CURRENT_FILE} names ${path}, which does not exist`, {
      file: path,
      cause: err,
    });
  });
  return replayManifestFile(file, path, numLevels);
}

/**
 * Replays the manifest at `path` for a tool: any failure, opening it included, is
 * CORRUPTION naming it (IO_ERROR only when a read fails).
 */
export async function replayManifestReadOnly(
  fs: FileSystem,
  path: string,
  numLevels: number = NUM_LEVELS,
): Promise<ManifestState> {
  const file = await fs.openReadable(path).catch((err: unknown) => {
    throw new KvError("CORRUPTION", `${path} cannot be opened: ${messageOf(err)}`, {
      file: path,
      cause: err,
    });
  });
  let replay: ManifestReplay;
  try {
    replay = await replayManifestFile(file, path, numLevels);
  } catch (err) {
    if (isKvError(err)) throw err;
    throw new KvError("CORRUPTION", `${path}: ${messageOf(err)}`, { file: path, cause: err });
  }
  const { builder, ...counters } = replay;
  return { ...counters, version: builder.build() };
}

/**
 * The path of the manifest CURRENT names in `dir`. Throws CORRUPTION naming CURRENT when
 * it is missing, malformed, or names a manifest that does not exist.
 */
export async function currentManifestPath(fs: FileSystem, dir: string): Promise<string> {
  const path = manifestFilePath(dir, await readCurrent(fs, dir));
  if (!(await fs.exists(path))) {
    const current = currentFilePath(dir);
    throw new KvError("CORRUPTION", `${current} names ${path}, which does not exist`, {
      file: current,
    });
  }
  return path;
}

/**
 * The manifest CURRENT names in `dir`, replayed for a tool; throws CORRUPTION naming
 * CURRENT (see currentManifestPath) or the manifest.
 */
export async function readManifestOfCurrent(
  fs: FileSystem,
  dir: string,
  numLevels: number = NUM_LEVELS,
): Promise<ManifestState> {
  return replayManifestReadOnly(fs, await currentManifestPath(fs, dir), numLevels);
}

/** Replays the open manifest `file` (at `path`) with the module's checks, then closes it. */
export async function replayManifestFile(
  file: ReadableFile,
  path: string,
  numLevels: number,
): Promise<ManifestReplay> {
  const corrupt = (offset: number, message: string, cause?: unknown): KvError =>
    new KvError(
      "CORRUPTION",
      `${path}: record at offset ${offset}: ${message}`,
      cause === undefined ? { file: path } : { file: path, cause },
    );
  const builder = new VersionBuilder(Version.empty(numLevels));
  let edits = 0;
  let logNumber: number | undefined;
  let nextFileNumber: number | undefined;
  let lastSequence: number | undefined;
  let tornTailBytes: number;
  try {
    // strictTail: every edit was synced before anything relied on it, so only an
    // interrupted append (the file ending inside the last record) may be dropped; a
    // complete last record that fails its checksum is damage, not a torn write.
    const report = await readLog(
      file,
      "tolerateTornTail",
      (payload, offset) => {
        const edit = decodeVersionEdit(payload, path, offset);
        if (edits === 0 && edit.formatVersion === undefined) {
          throw corrupt(offset, "the first edit is not a snapshot (it has no format version)");
        }
        if (edit.comparatorName !== undefined && edit.comparatorName !== BYTEWISE_COMPARATOR) {
          throw corrupt(
            offset,
            `written with comparator ${JSON.stringify(edit.comparatorName)}, ` +
              `this build has only ${JSON.stringify(BYTEWISE_COMPARATOR)}`,
          );
        }
        try {
          builder.apply(edit);
        } catch (err) {
          if (!(err instanceof VersionEditError)) throw err;
          throw corrupt(offset, `the edit does not apply: ${err.message}`, err);
        }
        logNumber = edit.logNumber ?? logNumber;
        nextFileNumber = edit.nextFileNumber ?? nextFileNumber;
        lastSequence = edit.lastSequence ?? lastSequence;
        edits++;
      },
      { strictTail: true },
    );
    tornTailBytes = report.tornTailBytes;
  } finally {
    await file.close().catch(() => {});
  }
  if (edits === 0) {
    throw new KvError("CORRUPTION", `${path}: the manifest holds no edit`, { file: path });
  }
  if (logNumber === undefined || nextFileNumber === undefined || lastSequence === undefined) {
    const missing = [
      logNumber === undefined ? "log number" : "",
      nextFileNumber === undefined ? "next file number" : "",
      lastSequence === undefined ? "last sequence" : "",
    ].filter((s) => s !== "");
    throw new KvError("CORRUPTION", `${path}: the manifest lacks ${missing.join(", ")}`, {
      file: path,
    });
  }
  // Check the level invariants now, so that building the version later cannot fail.
  try {
    builder.build();
  } catch (err) {
    if (!(err instanceof VersionEditError)) throw err;
    throw new KvError("CORRUPTION", `${path}: the recorded version is invalid: ${err.message}`, {
      file: path,
      cause: err,
    });
  }
  return { path, builder, edits, tornTailBytes, logNumber, nextFileNumber, lastSequence };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
