/**
 * `manifest dump`: a manifest's version history decoded into plain objects, for
 * `kv-engine manifest dump`. Read-only and without the lock: a live store's manifest can
 * be dumped (an edit being appended at that moment may show as a torn tail).
 *
 * Which manifest: given a data directory, the one CURRENT names; given the path of a
 * MANIFEST-NNNNNN file, that file. The manifest is read in "skipCorrupted" mode, so every
 * record that checks out is listed and every damaged region reported. Each record is
 * decoded as a version edit and applied, in order, to an empty version of `numLevels`
 * levels; the first record that does not decode or apply is reported in `problems`, and
 * the final version is the one the edits before it built (`complete` false). A store's
 * recovery would refuse such a manifest; this dump shows how far it gets. A torn tail is
 * a problem only when recovery would refuse it too (a complete last record that fails
 * its checksum, rather than a file ending inside its last record).
 */
import { isKvError, KvError } from "../errors.js";
import type { FileMetadata } from "../version/file-metadata.js";
import { parseFileName } from "../version/file-names.js";
import { currentManifestPath } from "../version/manifest-replay.js";
import { NUM_LEVELS, Version } from "../version/version.js";
import { VersionBuilder } from "../version/version-builder.js";
import { type AddedFile, type DeletedFile, decodeVersionEdit } from "../version/version-edit.js";
import { baseName, type FileSystem } from "../vfs/file-system.js";
import { readLog } from "../wal/log-reader.js";
import { describeError } from "./store-files.js";
import type { WalDamage } from "./wal-dump.js";

export interface ManifestEdit {
  /** Offset of the record in the manifest, and its payload bytes. */
  offset: number;
  length: number;
  /** Set in a snapshot (the first edit of a manifest). */
  formatVersion: number | undefined;
  comparator: string | undefined;
  logNumber: number | undefined;
  nextFileNumber: number | undefined;
  lastSequence: number | undefined;
  deleted: DeletedFile[];
  added: AddedFile[];
  /** Why the record does not decode, or why its edit does not apply. */
  problem: string | undefined;
}

export interface ManifestDump {
  /** The manifest read. */
  path: string;
  /** What CURRENT names ("MANIFEST-000007"), when a directory was given. */
  current: string | undefined;
  fileSize: number;
  edits: ManifestEdit[];
  damage: WalDamage[];
  /** The version after the edits that applied; counters as the last edit setting each left them. */
  final: {
    logNumber: number | undefined;
    nextFileNumber: number | undefined;
    lastSequence: number | undefined;
    levels: FileMetadata[][];
    /** False when an edit failed to decode or apply (the later ones were not applied). */
    complete: boolean;
  };
  /** What is wrong, one line each. */
  problems: string[];
}

/** The manifest path for `target` (a directory or a MANIFEST file) and what CURRENT says. */
async function locate(
  fs: FileSystem,
  target: string,
): Promise<{ path: string; current: string | undefined }> {
  if (parseFileName(baseName(target))?.type === "manifest")
    return { path: target, current: undefined };
  const path = await currentManifestPath(fs, target);
  return { path, current: baseName(path) };
}

/**
 * Recovery accepts a torn last record in a manifest only when the file ends inside it (an
 * append cut short), not a complete record whose checksum fails: the reason it would
 * refuse this manifest's tail, or undefined.
 */
async function strictTailProblem(fs: FileSystem, path: string): Promise<string | undefined> {
  const file = await fs.openReadable(path);
  try {
    await readLog(file, "tolerateTornTail", () => {}, { strictTail: true });
    return undefined;
  } catch (err) {
    return describeError(err);
  } finally {
    await file.close().catch(() => {});
  }
}

/**
 * Dumps the manifest of the directory `target` (or the manifest file `target`); see the
 * module comment. Throws KvError when there is no manifest to read: INVALID_ARGUMENT for a
 * missing `target`, CORRUPTION for a missing or bad CURRENT or a missing manifest.
 */
export async function dumpManifest(
  fs: FileSystem,
  target: string,
  numLevels: number = NUM_LEVELS,
): Promise<ManifestDump> {
  if (!(await fs.exists(target))) {
    throw new KvError("INVALID_ARGUMENT", `${target} does not exist`);
  }
  const { path, current } = await locate(fs, target);
  const file = await fs.openReadable(path);
  const edits: ManifestEdit[] = [];
  const problems: string[] = [];
  const builder = new VersionBuilder(Version.empty(numLevels));
  let failed = false;
  const counters = {
    logNumber: undefined as number | undefined,
    nextFileNumber: undefined as number | undefined,
    lastSequence: undefined as number | undefined,
  };
  let report: Awaited<ReturnType<typeof readLog>>;
  try {
    report = await readLog(file, "skipCorrupted", (payload, offset) => {
      const entry: ManifestEdit = {
        offset,
        length: payload.length,
        formatVersion: undefined,
        comparator: undefined,
        logNumber: undefined,
        nextFileNumber: undefined,
        lastSequence: undefined,
        deleted: [],
        added: [],
        problem: undefined,
      };
      edits.push(entry);
      try {
        const edit = decodeVersionEdit(payload, path, offset);
        entry.formatVersion = edit.formatVersion;
        entry.comparator = edit.comparatorName;
        entry.logNumber = edit.logNumber;
        entry.nextFileNumber = edit.nextFileNumber;
        entry.lastSequence = edit.lastSequence;
        entry.deleted = [...edit.deletedFiles];
        entry.added = [...edit.addedFiles];
        if (failed) return;
        builder.apply(edit);
        counters.logNumber = edit.logNumber ?? counters.logNumber;
        counters.nextFileNumber = edit.nextFileNumber ?? counters.nextFileNumber;
        counters.lastSequence = edit.lastSequence ?? counters.lastSequence;
      } catch (err) {
        const message = describeError(err);
        entry.problem = !isKvError(err)
          ? `the edit does not apply: ${message}`
          : message.startsWith(`${path}: `)
            ? message.slice(path.length + 2)
            : message;
        if (!failed) {
          problems.push(
            `${path}: record at offset ${offset}: ${entry.problem}; later edits not applied`,
          );
        }
        failed = true;
      }
    });
  } finally {
    await file.close().catch(() => {});
  }
  const damage: WalDamage[] = report.dropped.map((d, i) => ({
    ...d,
    kind: report.tornTailBytes > 0 && i === report.dropped.length - 1 ? "torn-tail" : "corruption",
  }));
  for (const d of damage) {
    if (d.kind === "corruption") {
      problems.push(`${path}: ${d.bytes} bytes damaged at offset ${d.offset}: ${d.reason}`);
    }
  }
  if (damage.length > 0 && damage.every((d) => d.kind === "torn-tail")) {
    const tail = await strictTailProblem(fs, path);
    if (tail !== undefined) problems.push(tail);
  }
  let levels: FileMetadata[][] = [];
  try {
    levels = builder.build().levels.map((files) => [...files]);
  } catch (err) {
    problems.push(`${path}: the final version is invalid: ${describeError(err)}`);
    failed = true;
  }
  if (edits.length === 0) problems.push(`${path}: holds no edit`);
  return {
    path,
    current,
    fileSize: file.size,
    edits,
    damage,
    final: { ...counters, levels, complete: !failed },
    problems,
  };
}
