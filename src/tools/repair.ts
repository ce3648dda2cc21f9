/**
 * `repair`: rebuilds a data directory's manifest from the files that check out, so that a
 * store damaged beyond what `open` accepts opens again, keeping what can be trusted and
 * reporting everything it dropped. Takes the store's lock. Deletes nothing: every file it
 * takes out of the store is kept in DIR/lost/ (lost-files.ts: linked there first, its
 * name in the store removed only once the new manifest is durable).
 *
 * Damaged tables are salvaged (table-salvage.ts): the entries of every data block that
 * still checks out go into a new table that replaces the damaged one under its number;
 * the original goes to lost/. Only a table that cannot be opened at all (footer, index,
 * properties) or holds no intact block is dropped whole.
 *
 * Which tables, at which levels:
 * - "manifest" mode: CURRENT names a manifest that replays cleanly (or, when CURRENT is
 *   damaged, the highest-numbered MANIFEST-* that does). Its levels are kept; every table
 *   it lists that is missing, unsalvageable, or outside its recorded range is dropped (a
 *   table that checks out within that range, e.g. one an interrupted repair salvaged, is
 *   kept). Tables it does not list are not used (leftovers: moved to lost/). Dropping a table of a deeper level can make older
 *   versions of its keys visible again: the report names each dropped table's key range.
 * - "rebuilt" mode: no manifest replays. Every table that checks out is merged (all
 *   versions of every key kept, exact duplicates once) into new tables at level 1, since
 *   without levels the read path could not tell which table holds the newer version of a
 *   key (the inputs then go to lost/). Damaged tables are salvaged first, or dropped. Leftover tables (an obsolete compaction input that a
 *   power loss brought back) are merged too: they may bring back keys that a compaction
 *   had removed; the report says this mode was used.
 *
 * Which logs: "manifest" mode keeps the logs from the manifest's log number on; "rebuilt"
 * mode keeps the logs holding a sequence number above every table's (the others were
 * flushed). A kept log with damage before its end, or with a record whose batch does not
 * decode, is rewritten with only the records that check out (src/vfs/atomic-write.ts:
 * written to a temp file, synced, renamed over the log, directory synced); the dropped
 * byte ranges are reported.
 * The batches after the damage are kept, so history may have a hole there. A torn tail is
 * left for recovery to drop.
 *
 * The manifest: one snapshot edit (checked by VersionBuilder before anything is written)
 * goes into a new MANIFEST-N by src/version/manifest-writer.ts, the route every manifest
 * takes: synced, its name made durable, then CURRENT swapped to name it. Finally
 * `VersionSet.recover` opens the result (so the store's own recovery code accepts it,
 * writes its own fresh manifest and deletes the stale ones).
 * A crash at any point leaves CURRENT naming the old manifest or the new complete one;
 * running repair again is always safe.
 */
import { OutputWriter } from "../compaction/output-writer.js";
import { ioError, KvError } from "../errors.js";
import { MergingIterator } from "../iterator/merging-iterator.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes } from "../key/internal-key.js";
import type { TableOptions } from "../sstable/table-builder.js";
import { TableReader } from "../sstable/table-reader.js";
import { compareBound, type FileMetadata } from "../version/file-metadata.js";
import {
  currentFilePath,
  logFilePath,
  manifestFilePath,
  parseFileName,
  tableFilePath,
  tempFilePath,
} from "../version/file-names.js";
import {
  type ManifestState,
  readManifestOfCurrent,
  replayManifestReadOnly,
} from "../version/manifest-replay.js";
import { installManifest, snapshotEdit } from "../version/manifest-writer.js";
import { NUM_LEVELS, Version, VersionEditError } from "../version/version.js";
import { VersionBuilder } from "../version/version-builder.js";
import { VersionEdit } from "../version/version-edit.js";
import { VersionSet } from "../version/version-set.js";
import { writeFileAtomically } from "../vfs/atomic-write.js";
import type { FileSystem } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { encodeRecords } from "../wal/log-writer.js";
import { LostFiles } from "./lost-files.js";
import { checkLog, checkTable, describeError, type LogCheck, sameMetadata } from "./store-files.js";
import { readIntactBlocks, writeSalvagedTable } from "./table-salvage.js";
import { withStoreLock } from "./verify.js";

export interface RepairOptions {
  /** File system (default: the real one). */
  fs?: FileSystem;
  /** Number of levels of the store (default 7). */
  numLevels?: number;
  /** "rebuilt" mode: size at which a merged output table is cut (default 2 MiB). */
  targetFileSize?: number;
  /** "rebuilt" mode: how merged output tables are written. */
  tableOptions?: TableOptions;
}

export interface DroppedTable {
  file: string;
  /** Level the manifest had it at (manifest mode). */
  level?: number;
  reason: string;
}

export interface RewrittenLog {
  file: string;
  recordsKept: number;
  /** Byte ranges of the old file not kept, with the reason. */
  dropped: Array<{ offset: number; bytes: number; reason: string }>;
}

/** A damaged table whose intact blocks were kept (table-salvage.ts). */
export interface SalvagedTable {
  file: string;
  /** Level the manifest had it at (manifest mode). */
  level?: number;
  /** Data blocks in the table, and those damaged (lost). */
  blocks: number;
  blocksLost: number;
  /** Entries kept (now in the table of the same name), and lost with the damaged blocks. */
  entriesSalvaged: number;
  entriesLost: number;
  /** What was wrong with the table. */
  problem: string;
  /** Where the damaged original went (in lost/). */
  original: string;
}

/** A file repair took out of the store: kept in lost/ (lost-files.ts), not deleted. */
export interface ArchivedFile {
  file: string;
  /** Its path in lost/. */
  to: string;
  reason: string;
}

export interface RepairReport {
  mode: "manifest" | "rebuilt";
  /** The manifest whose levels were kept (manifest mode). */
  manifestUsed: string | undefined;
  /** Why CURRENT's manifest could not be used, when it could not. */
  manifestProblem: string | undefined;
  /** Tables the new manifest lists (the merged outputs in rebuilt mode). */
  tablesKept: number;
  /** Entries in the tables the repaired store uses (rebuilt mode: before merging). */
  entriesKept: number;
  /** Tables that checked out and were merged (rebuilt mode). */
  tablesMerged: number;
  droppedTables: DroppedTable[];
  /** Logs the repaired store replays. */
  logsKept: string[];
  /** Logs not used: their data is in the tables (rebuilt mode) or below the log number. */
  logsSkipped: string[];
  logsRewritten: RewrittenLog[];
  /** Manifest the repaired store uses (written by VersionSet.recover). */
  newManifest: string;
  logNumber: number;
  lastSequence: number;
  /** Damaged tables whose intact blocks were salvaged. */
  salvagedTables: SalvagedTable[];
  /** Entries salvaged from damaged tables, and entries lost with their damaged blocks (or whole tables). */
  entriesSalvaged: number;
  entriesLost: number;
  /** Where the files taken out of the store went: DIR/lost. */
  lostDir: string;
  /** Every file taken out of the store (damaged, replaced, unused), and where it is now. */
  archived: ArchivedFile[];
  /** One line per thing dropped, naming the file. Empty when nothing was lost. */
  dropped: string[];
}

const noop = (): void => {};

/** True iff `actual`'s keys lie within the range `recorded` says (bounds inclusive). */
function withinRange(actual: FileMetadata, recorded: FileMetadata): boolean {
  return (
    compareBound(
      recorded.smallestKey,
      recorded.smallestSeq,
      actual.smallestKey,
      actual.smallestSeq,
    ) <= 0 &&
    compareBound(actual.largestKey, actual.largestSeq, recorded.largestKey, recorded.largestSeq) <=
      0
  );
}

/** Repairs the store in `dir`; see the module comment. Throws LOCKED, IO_ERROR, INVALID_ARGUMENT. */
export async function repairStore(dir: string, options: RepairOptions = {}): Promise<RepairReport> {
  const fs = options.fs ?? new RealFileSystem();
  return withStoreLock(fs, dir, () => repairLocked(fs, dir, options));
}

interface Listing {
  tables: number[];
  logs: number[];
  manifests: number[];
  maxNumber: number;
}

async function listing(fs: FileSystem, dir: string): Promise<Listing> {
  const out: Listing = { tables: [], logs: [], manifests: [], maxNumber: 0 };
  for (const name of await fs.list(dir)) {
    const parsed = parseFileName(name);
    if (parsed === undefined || !("number" in parsed)) continue;
    out.maxNumber = Math.max(out.maxNumber, parsed.number);
    if (parsed.type === "table") out.tables.push(parsed.number);
    else if (parsed.type === "log") out.logs.push(parsed.number);
    else if (parsed.type === "manifest") out.manifests.push(parsed.number);
  }
  for (const list of [out.tables, out.logs, out.manifests]) list.sort((a, b) => a - b);
  return out;
}

/** The manifest to keep levels from, or the reason there is none. */
async function findManifest(
  fs: FileSystem,
  dir: string,
  files: Listing,
  numLevels: number,
): Promise<{ state: ManifestState | undefined; problem: string | undefined }> {
  try {
    return { state: await readManifestOfCurrent(fs, dir, numLevels), problem: undefined };
  } catch (err) {
    const problem = describeError(err);
    for (const n of [...files.manifests].reverse()) {
      try {
        return {
          state: await replayManifestReadOnly(fs, manifestFilePath(dir, n), numLevels),
          problem,
        };
      } catch {
        // try the next older one
      }
    }
    return { state: undefined, problem };
  }
}

async function repairLocked(
  fs: FileSystem,
  dir: string,
  options: RepairOptions,
): Promise<RepairReport> {
  const numLevels = options.numLevels ?? NUM_LEVELS;
  const files = await listing(fs, dir);
  if (
    files.tables.length === 0 &&
    files.logs.length === 0 &&
    files.manifests.length === 0 &&
    !(await fs.exists(currentFilePath(dir)))
  ) {
    throw new KvError(
      "INVALID_ARGUMENT",
      `${dir} holds no store (no CURRENT, manifest, table or log)`,
    );
  }
  let next = files.maxNumber + 1;
  const newNumber = (): number => next++;
  const { state, problem } = await findManifest(fs, dir, files, numLevels);
  const lost = new LostFiles(fs, dir);
  const tableOptions = options.tableOptions ?? {};
  const report: RepairReport = {
    mode: state === undefined ? "rebuilt" : "manifest",
    manifestUsed: state?.path,
    manifestProblem: problem,
    tablesKept: 0,
    entriesKept: 0,
    tablesMerged: 0,
    droppedTables: [],
    logsKept: [],
    logsSkipped: [],
    logsRewritten: [],
    newManifest: "",
    logNumber: 0,
    lastSequence: 0,
    salvagedTables: [],
    entriesSalvaged: 0,
    entriesLost: 0,
    lostDir: lost.dir,
    archived: [],
    dropped: [],
  };
  /** Files archived whose names in the store go once the new manifest is installed. */
  const removeAfterInstall: string[] = [];
  const archive = async (file: string, reason: string, remove: boolean): Promise<string> => {
    const to = await lost.archive(file);
    report.archived.push({ file, to, reason });
    if (remove) removeAfterInstall.push(file);
    return to;
  };
  /**
   * Salvages the damaged table `path` in place (table-salvage.ts); returns its new
   * metadata, or undefined when nothing could be salvaged (the table is then archived, to
   * be removed after the install). `range` and `level` are for the report.
   */
  const salvage = async (
    path: string,
    number: number,
    why: string,
    level: number | undefined,
    range: string,
    recordedEntries: number | undefined,
  ): Promise<{ meta: FileMetadata; maxSeq: number } | undefined> => {
    const intact = await readIntactBlocks(fs, path, number);
    const inTable = intact?.entriesInTable ?? recordedEntries;
    if (intact === undefined || intact.entries.length === 0) {
      const to = await archive(path, `damaged: ${why}`, true);
      if (inTable !== undefined) report.entriesLost += inTable;
      dropTable(
        level === undefined ? { file: path, reason: why } : { file: path, level, reason: why },
        `${range}; the table is in ${to}`,
      );
      return undefined;
    }
    const original = await archive(path, `damaged (salvaged): ${why}`, false);
    const written = await writeSalvagedTable(fs, dir, intact.entries, newNumber, tableOptions);
    const writtenPath = tableFilePath(dir, written.number);
    try {
      await fs.rename(writtenPath, path);
      await fs.syncDir(dir);
    } catch (err) {
      throw ioError(`replace ${path} by its salvaged table`, err, path);
    }
    const meta: FileMetadata = { ...written, number };
    const entriesLost = Math.max(0, intact.entriesInTable - intact.entries.length);
    const item: SalvagedTable = {
      file: path,
      blocks: intact.blocks,
      blocksLost: intact.blocksLost,
      entriesSalvaged: intact.entries.length,
      entriesLost,
      problem: why,
      original,
    };
    if (level !== undefined) item.level = level;
    report.salvagedTables.push(item);
    report.entriesSalvaged += intact.entries.length;
    report.entriesLost += entriesLost;
    report.dropped.push(
      `${path}${level === undefined ? "" : ` (level ${level}${range})`}: salvaged ` +
        `${intact.entries.length} of ${intact.entriesInTable} entries, lost ${entriesLost} ` +
        `(${intact.blocksLost} of ${intact.blocks} data blocks damaged: ` +
        `${intact.firstProblem ?? why}); the damaged original is in ${original}`,
    );
    let maxSeq = 0;
    for (const e of intact.entries) if (e.seq > maxSeq) maxSeq = e.seq;
    return { meta, maxSeq };
  };
  const edit = new VersionEdit();
  let lastSequence = 0;
  let logNumber: number;
  const logChecks = new Map<number, LogCheck>();
  const dropTable = (t: DroppedTable, range: string): void => {
    report.droppedTables.push(t);
    report.dropped.push(
      `${t.file}${t.level === undefined ? "" : ` (level ${t.level}${range})`}: dropped: ${t.reason}`,
    );
  };

  if (state !== undefined) {
    next = Math.max(next, state.nextFileNumber);
    lastSequence = state.lastSequence;
    logNumber = state.logNumber;
    for (const { level, file } of state.version.allFiles()) {
      const path = tableFilePath(dir, file.number);
      const range = `, keys ${Buffer.from(file.smallestKey).toString("hex")}..${Buffer.from(file.largestKey).toString("hex")} (hex), ${file.entries} entries`;
      if (!files.tables.includes(file.number)) {
        report.entriesLost += file.entries;
        dropTable({ file: path, level, reason: "missing" }, range);
        continue;
      }
      const check = await checkTable(fs, path, file.number);
      if (!check.ok) {
        const saved = await salvage(path, file.number, check.problem, level, range, file.entries);
        if (saved === undefined) continue;
        edit.addFile(level, saved.meta);
        report.tablesKept++;
        report.entriesKept += saved.meta.entries;
        lastSequence = Math.max(lastSequence, saved.maxSeq);
        continue;
      }
      let kept = file;
      if (!sameMetadata(check.meta, file)) {
        // A table that checks out within the range its entry records (one an earlier,
        // interrupted repair salvaged in place) fits its level: kept as it is.
        if (!withinRange(check.meta, file)) {
          const to = await archive(path, "differs from its manifest entry", true);
          report.entriesLost += file.entries;
          dropTable(
            { file: path, level, reason: "differs from its manifest entry" },
            `${range}; the table is in ${to}`,
          );
          continue;
        }
        kept = check.meta;
      }
      edit.addFile(level, kept);
      report.tablesKept++;
      report.entriesKept += kept.entries;
      lastSequence = Math.max(lastSequence, check.maxSeq);
    }
    const listed = new Set(state.version.allFiles().map(({ file }) => file.number));
    for (const n of files.tables) {
      if (!listed.has(n)) await archive(tableFilePath(dir, n), "not in the manifest", true);
    }
    for (const n of files.logs) {
      if (n < logNumber) {
        report.logsSkipped.push(logFilePath(dir, n));
        await archive(logFilePath(dir, n), "below the manifest's log number", true);
      }
    }
  } else {
    const good: FileMetadata[] = [];
    let maxTableSeq = 0;
    for (const n of files.tables) {
      const path = tableFilePath(dir, n);
      const check = await checkTable(fs, path, n);
      if (!check.ok) {
        const saved = await salvage(path, n, check.problem, undefined, "", undefined);
        if (saved === undefined) continue;
        good.push(saved.meta);
        report.entriesKept += saved.meta.entries;
        maxTableSeq = Math.max(maxTableSeq, saved.maxSeq);
        continue;
      }
      good.push(check.meta);
      report.entriesKept += check.meta.entries;
      maxTableSeq = Math.max(maxTableSeq, check.maxSeq);
    }
    lastSequence = maxTableSeq;
    report.tablesMerged = good.length;
    if (good.length > 0) {
      const outputs = await mergeTables(fs, dir, good, newNumber, options);
      for (const meta of outputs) edit.addFile(numLevels > 1 ? 1 : 0, meta);
      report.tablesKept = outputs.length;
      for (const meta of good) {
        await archive(tableFilePath(dir, meta.number), "merged into the new tables", true);
      }
    }
    // Logs whose every batch is at or below the tables' newest sequence were flushed.
    let firstKept: number | undefined;
    for (const n of files.logs) {
      const check = await checkLog(fs, logFilePath(dir, n));
      logChecks.set(n, check);
      if (check.records.length > 0 && check.maxSeq > maxTableSeq) {
        firstKept ??= n;
      }
    }
    logNumber = firstKept ?? (files.logs.length === 0 ? 0 : files.logs.at(-1)! + 1);
    for (const n of files.logs) {
      if (n < logNumber) {
        report.logsSkipped.push(logFilePath(dir, n));
        await archive(logFilePath(dir, n), "its writes are all in the tables", true);
      }
    }
  }

  // The logs the repaired store replays: rewrite the damaged ones.
  for (const n of files.logs) {
    if (n < logNumber) continue;
    const path = logFilePath(dir, n);
    const check = logChecks.get(n) ?? (await checkLog(fs, path));
    report.logsKept.push(path);
    if (!check.readable) {
      throw new KvError("IO_ERROR", check.problem ?? `${path} cannot be read`, { file: path });
    }
    lastSequence = Math.max(lastSequence, check.maxSeq);
    if (check.damage.length === 0) continue;
    const original = await archive(path, "damaged (rewritten without the damage)", false);
    await writeFileAtomically(fs, path, encodeRecords(check.records), {
      tempPath: tempFilePath(dir, newNumber()),
    });
    report.logsRewritten.push({
      file: path,
      recordsKept: check.records.length,
      dropped: check.damage.map((d) => ({ ...d })),
    });
    for (const d of check.damage) {
      report.dropped.push(
        `${path}: ${d.bytes} bytes at offset ${d.offset} dropped: ${d.reason}; the damaged original is in ${original}`,
      );
    }
  }

  // The manifests (and a CURRENT that names none that replays) are kept in lost/ too: the
  // store's recovery below deletes every manifest but its own.
  for (const n of files.manifests) {
    await archive(manifestFilePath(dir, n), "replaced by the repaired manifest", false);
  }
  if (problem !== undefined && (await fs.exists(currentFilePath(dir)))) {
    await archive(currentFilePath(dir), `replaced: ${problem}`, false);
  }

  // The new manifest: one snapshot edit, checked before anything is written.
  const manifestNumber = newNumber();
  const snapshot = snapshotEdit(edit.addedFiles, {
    logNumber,
    nextFileNumber: newNumber(),
    lastSequence,
  });
  try {
    const builder = new VersionBuilder(Version.empty(numLevels));
    builder.apply(snapshot);
    builder.build();
  } catch (err) {
    if (!(err instanceof VersionEditError)) throw err;
    throw new KvError("CORRUPTION", `repair of ${dir} built an invalid version: ${err.message}`);
  }
  await installManifest(fs, dir, manifestNumber, snapshot);
  // The new manifest is durable: the files it does not use leave the store (their links
  // in lost/ stay).
  for (const path of removeAfterInstall) {
    try {
      await fs.remove(path);
    } catch (err) {
      throw ioError(`remove ${path} (kept in ${lost.dir})`, err, path);
    }
  }
  if (removeAfterInstall.length > 0) {
    try {
      await fs.syncDir(dir);
    } catch (err) {
      throw ioError(`sync ${dir}`, err, dir);
    }
  }
  const set = await VersionSet.recover(fs, dir, { numLevels });
  report.newManifest = set.recovery?.newManifest ?? manifestFilePath(dir, manifestNumber);
  report.logNumber = set.logNumber;
  report.lastSequence = set.lastSequence;
  await set.close();
  return report;
}

/**
 * Merges the tables `inputs` (each checked) into new tables numbered by `newNumber`,
 * every version of every key kept (an entry with the same user key and sequence as the
 * one before it is a duplicate and written once), cut between user keys once an output
 * reaches the target size (compaction's OutputWriter). The outputs are synced and the
 * directory synced before this resolves; their metadata is returned in key order (they do
 * not overlap).
 */
async function mergeTables(
  fs: FileSystem,
  dir: string,
  inputs: readonly FileMetadata[],
  newNumber: () => number,
  options: RepairOptions,
): Promise<FileMetadata[]> {
  const readers: TableReader[] = [];
  const out = new OutputWriter(fs, {
    dir,
    tableOptions: options.tableOptions ?? {},
    targetFileSize: options.targetFileSize ?? 2 * 1024 * 1024,
    grandparents: [],
    maxGrandparentOverlapBytes: 0,
    nextNumber: newNumber,
    label: "repaired table",
  });
  let merged: InternalIterator | undefined;
  try {
    for (const meta of inputs) {
      const file = await fs.openReadable(tableFilePath(dir, meta.number));
      try {
        readers.push(TableReader.open(file, meta.number, { verifyChecksums: true }));
      } catch (err) {
        await file.close().catch(noop);
        throw err;
      }
    }
    merged = new MergingIterator(readers.map((r) => r.iterator({ fillCache: false })));
    let lastKey: Uint8Array | undefined;
    let lastSeq = 0;
    for (merged.seekToFirst(); merged.valid(); merged.next()) {
      const key = merged.key;
      const seq = merged.seq;
      const sameUserKey = lastKey !== undefined && compareBytes(lastKey, key) === 0;
      if (sameUserKey && seq === lastSeq) continue; // an exact duplicate
      if (!sameUserKey) {
        const cut = out.beforeUserKey(key);
        if (cut !== undefined) await cut;
        lastKey = key.slice();
      }
      const added = out.add(key, seq, merged.kind, merged.value);
      if (added !== undefined) await added;
      lastSeq = seq;
    }
    await out.finish();
    await out.syncDirectory("sync directory after repair");
    return out.outputs;
  } finally {
    merged?.close();
    for (const r of readers) await r.close().catch(noop);
  }
}
