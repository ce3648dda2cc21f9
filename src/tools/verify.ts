/**
 * `verify`: checks a data directory without changing it (it only takes the store's lock,
 * so that no open store changes the files while they are read).
 *
 * Checked, each failure one `problems` line naming the file:
 * - CURRENT is well formed and names a manifest that replays cleanly (every record's
 *   checksum, every edit decodes and applies, counters present, level 0 newest first,
 *   deeper levels sorted without overlaps, no file listed twice);
 * - every table the manifest lists is present, has the size the manifest records, and
 *   reads back in full: footer, index, filter and properties blocks, every data block's
 *   checksum, entries in strictly increasing internal-key order agreeing with the
 *   properties and with the bounds and counts in the manifest;
 * - every write-ahead log the manifest still needs (number >= its log number) reads back
 *   with no damage before its end and holds only valid batches; every file number in use
 *   is below the manifest's next file number.
 *
 * Not problems, reported as `notes`: a torn tail at the end of a log (what a crash during
 * an append leaves; recovery drops it), and files the store no longer needs (tables the
 * manifest does not list, older logs and manifests, temp files), which the next open
 * deletes.
 */
import { KvError } from "../errors.js";
import {
  LOCK_FILE,
  logFileName,
  manifestFileName,
  type NumberedFileType,
  parseFileName,
  tableFileName,
  tempFileName,
} from "../version/file-names.js";
import { type ManifestState, readManifestOfCurrent } from "../version/manifest-replay.js";
import { type FileSystem, joinPath, LockHeldError } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { checkLog, checkTable, describeError, sameMetadata } from "./store-files.js";

export interface VerifyOptions {
  /** File system (default: the real one). */
  fs?: FileSystem;
  /** Number of levels the store was created with (default 7). */
  numLevels?: number;
}

export interface VerifyReport {
  /** True iff no problem was found. */
  ok: boolean;
  /** What is wrong, one line each, naming the file. */
  problems: string[];
  /** Findings that are not damage (torn log tail, files the next open deletes). */
  notes: string[];
  /** The manifest checked (undefined when it could not be read). */
  manifest: string | undefined;
  tablesChecked: number;
  tableEntries: number;
  logsChecked: number;
  logRecords: number;
  /** Files per level, as the manifest lists them. */
  levelFiles: number[];
}

/** Lists `dir` by file type. */
async function listStore(
  fs: FileSystem,
  dir: string,
): Promise<{ names: string[]; byType: Map<NumberedFileType, number[]> }> {
  const names = await fs.list(dir);
  const byType = new Map<NumberedFileType, number[]>();
  for (const name of names) {
    const parsed = parseFileName(name);
    if (parsed === undefined || !("number" in parsed)) continue;
    const list = byType.get(parsed.type) ?? [];
    list.push(parsed.number);
    byType.set(parsed.type, list);
  }
  for (const list of byType.values()) list.sort((a, b) => a - b);
  return { names, byType };
}

/**
 * Takes the lock of the store in `dir` (LOCKED if it is open elsewhere), runs `body`,
 * releases the lock.
 */
export async function withStoreLock<T>(
  fs: FileSystem,
  dir: string,
  body: () => Promise<T>,
): Promise<T> {
  if (!(await fs.exists(dir))) {
    throw new KvError("INVALID_ARGUMENT", `${dir} does not exist`);
  }
  const path = joinPath(dir, LOCK_FILE);
  let lock: Awaited<ReturnType<FileSystem["lock"]>>;
  try {
    lock = await fs.lock(path);
  } catch (err) {
    if (err instanceof LockHeldError || (err as { code?: unknown }).code === "ELOCKED") {
      throw new KvError("LOCKED", `${dir} is in use by an open store (${path} is locked)`, {
        file: path,
      });
    }
    throw new KvError("IO_ERROR", `lock ${path}: ${describeError(err)}`, {
      file: path,
      cause: err,
    });
  }
  try {
    return await body();
  } finally {
    await lock.release().catch(() => {});
  }
}

/** Checks the store in `dir`; see the module comment. Throws only for I/O trouble or LOCKED. */
export async function verifyStore(dir: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const fs = options.fs ?? new RealFileSystem();
  return withStoreLock(fs, dir, () => verifyLocked(fs, dir, options.numLevels));
}

async function verifyLocked(
  fs: FileSystem,
  dir: string,
  numLevels: number | undefined,
): Promise<VerifyReport> {
  const report: VerifyReport = {
    ok: false,
    problems: [],
    notes: [],
    manifest: undefined,
    tablesChecked: 0,
    tableEntries: 0,
    logsChecked: 0,
    logRecords: 0,
    levelFiles: [],
  };
  const { names, byType } = await listStore(fs, dir);
  if (!names.includes("CURRENT") && names.length === 0) {
    report.problems.push(`${dir} is empty: no store`);
    return report;
  }
  let state: ManifestState | undefined;
  try {
    state = await readManifestOfCurrent(fs, dir, numLevels);
  } catch (err) {
    report.problems.push(describeError(err));
  }
  const tables = byType.get("table") ?? [];
  const logs = byType.get("log") ?? [];
  if (state === undefined) {
    // Without a manifest, still check every table and log found, so the report says what
    // `repair` can keep.
    for (const n of tables) {
      const check = await checkTable(fs, joinPath(dir, tableFileName(n)), n);
      report.tablesChecked++;
      if (check.ok) report.tableEntries += check.meta.entries;
      else report.problems.push(check.problem);
    }
    for (const n of logs) await verifyLog(fs, joinPath(dir, logFileName(n)), report);
    return report;
  }
  report.manifest = state.path;
  if (state.tornTailBytes > 0) {
    report.notes.push(
      `${state.path}: torn last record of ${state.tornTailBytes} bytes (never acknowledged)`,
    );
  }
  const version = state.version;
  report.levelFiles = version.levels.map((files) => files.length);
  const listed = new Set<number>();
  for (const { level, file } of version.allFiles()) {
    listed.add(file.number);
    const path = joinPath(dir, tableFileName(file.number));
    report.tablesChecked++;
    if (!tables.includes(file.number)) {
      report.problems.push(`${path}: listed at level ${level} by ${state.path} but missing`);
      continue;
    }
    const check = await checkTable(fs, path, file.number);
    if (!check.ok) {
      report.problems.push(`${check.problem} (level ${level})`);
      continue;
    }
    report.tableEntries += check.meta.entries;
    if (!sameMetadata(check.meta, file)) {
      report.problems.push(
        `${path}: differs from what ${state.path} records for it (size ${file.size} vs ${check.meta.size}, ` +
          `entries ${file.entries} vs ${check.meta.entries}, or its key range)`,
      );
    }
    if (check.maxSeq > state.lastSequence) {
      report.problems.push(
        `${path}: holds sequence ${check.maxSeq}, above the manifest's last sequence ${state.lastSequence}`,
      );
    }
  }
  for (const n of tables) {
    if (!listed.has(n))
      report.notes.push(
        `${joinPath(dir, tableFileName(n))}: not in the manifest (the next open deletes it)`,
      );
  }
  for (const n of logs) {
    const path = joinPath(dir, logFileName(n));
    if (n < state.logNumber) {
      report.notes.push(`${path}: below the log number ${state.logNumber}, no longer needed`);
      continue;
    }
    await verifyLog(fs, path, report);
  }
  const inUse = [...tables, ...logs, ...(byType.get("manifest") ?? [])];
  for (const n of inUse) {
    if (n >= state.nextFileNumber && listed.has(n)) {
      report.problems.push(
        `file number ${n} is in use but not below the manifest's next file number ${state.nextFileNumber}`,
      );
    }
  }
  for (const type of ["manifest", "temp"] as const) {
    for (const n of byType.get(type) ?? []) {
      const name = type === "manifest" ? manifestFileName(n) : tempFileName(n);
      const path = joinPath(dir, name);
      if (path !== state.path)
        report.notes.push(`${path}: not the current manifest (the next open deletes it)`);
    }
  }
  report.ok = report.problems.length === 0;
  return report;
}

async function verifyLog(fs: FileSystem, path: string, report: VerifyReport): Promise<void> {
  const check = await checkLog(fs, path);
  report.logsChecked++;
  if (!check.readable) {
    report.problems.push(check.problem ?? `${path}: unreadable`);
    return;
  }
  report.logRecords += check.records.length;
  for (const d of check.damage) {
    report.problems.push(`${path}: ${d.bytes} bytes damaged at offset ${d.offset}: ${d.reason}`);
  }
  if (check.tornTail !== undefined) {
    report.notes.push(
      `${path}: torn tail of ${check.tornTail.bytes} bytes at offset ${check.tornTail.offset} (what a crash during an append leaves; recovery drops it)`,
    );
  }
}
