/**
 * `repair`: rebuilds a data directory's manifest from the files that check out, so that a
 * store damaged beyond what `open` accepts opens again, keeping what can be trusted and
 * reporting everything it dropped. Takes the store's lock; never deletes a file itself
 * (files the new manifest does not name are deleted by the next open's sweep).
 *
 * Which tables, at which levels:
 * - "manifest" mode: CURRENT names a manifest that replays cleanly (or, when CURRENT is
 *   damaged, the highest-numbered MANIFEST-* that does). Its levels are kept; every table
 *   it lists that is missing, damaged (any checksum, order or property failure) or differs
 *   from its recorded metadata is dropped. Tables it does not list are not used (they are
 *   leftovers the next open deletes). Dropping a table of a deeper level can make older
 *   versions of its keys visible again: the report names each dropped table's key range.
 * - "rebuilt" mode: no manifest replays. Every table that checks out is merged (all
 *   versions of every key kept, exact duplicates once) into new tables at level 1, since
 *   without levels the read path could not tell which table holds the newer version of a
 *   key. Damaged tables are dropped. Leftover tables (an obsolete compaction input that a
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
import { KvError } from "../errors.js";
import { MergingIterator } from "../iterator/merging-iterator.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes } from "../key/internal-key.js";
import type { TableOptions } from "../sstable/table-builder.js";
import { TableReader } from "../sstable/table-reader.js";
import type { FileMetadata } from "../version/file-metadata.js";
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
import { checkLog, checkTable, describeError, type LogCheck, sameMetadata } from "./store-files.js";
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
  /** One line per thing dropped, naming the file. Empty when nothing was lost. */
  dropped: string[];
}

const noop = (): void => {};

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
    dropped: [],
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
        dropTable({ file: path, level, reason: "missing" }, range);
        continue;
      }
      const check = await checkTable(fs, path, file.number);
      if (!check.ok) {
        dropTable({ file: path, level, reason: check.problem }, range);
        continue;
      }
      if (!sameMetadata(check.meta, file)) {
        dropTable({ file: path, level, reason: "differs from its manifest entry" }, range);
        continue;
      }
      edit.addFile(level, file);
      report.tablesKept++;
      report.entriesKept += file.entries;
      lastSequence = Math.max(lastSequence, check.maxSeq);
    }
    for (const n of files.logs) {
      if (n < logNumber) report.logsSkipped.push(logFilePath(dir, n));
    }
  } else {
    const good: FileMetadata[] = [];
    let maxTableSeq = 0;
    for (const n of files.tables) {
      const path = tableFilePath(dir, n);
      const check = await checkTable(fs, path, n);
      if (!check.ok) {
        dropTable({ file: path, reason: check.problem }, "");
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
      if (n < logNumber) report.logsSkipped.push(logFilePath(dir, n));
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
    await writeFileAtomically(fs, path, encodeRecords(check.records), {
      tempPath: tempFilePath(dir, newNumber()),
    });
    report.logsRewritten.push({
      file: path,
      recordsKept: check.records.length,
      dropped: check.damage.map((d) => ({ ...d })),
    });
    for (const d of check.damage) {
      report.dropped.push(`${path}: ${d.bytes} bytes at offset ${d.offset} dropped: ${d.reason}`);
    }
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
