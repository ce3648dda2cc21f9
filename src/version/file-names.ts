/**
 * Names of the files in a data directory. File numbers come from one counter (the version
 * set's `nextFileNumber`), so a number is never used twice within a store's life, whatever
 * the kind of file; numbers are zero-padded to at least six digits so names sort by number.
 *
 *   LOCK              held (a kernel OFD lock) by the open store
 *   CURRENT           one line naming the current manifest: "MANIFEST-NNNNNN\n"
 *   MANIFEST-NNNNNN   a manifest: a log of version edits (docs/format/manifest.md)
 *   NNNNNN.dbtmp      a temporary file, renamed to CURRENT once durable
 *   NNNNNN.log        a write-ahead log (docs/format/wal.md)
 *   NNNNNN.sst        a table file
 */
import { tableFileName } from "../sstable/table-file-name.js";
import { joinPath } from "../vfs/file-system.js";

export const LOCK_FILE = "LOCK";
export const CURRENT_FILE = "CURRENT";
/**
 * The identity file of a cluster member's data directory (src/replication/node-dir.ts): a
 * directory holding it is a cluster member's, never opened as a plain store.
 */
export const CLUSTER_MEMBER_FILE = "member.json";
export const MANIFEST_PREFIX = "MANIFEST-";

/** A file number as six or more digits. Throws RangeError unless n is a safe integer >= 0. */
function padded(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(`file number must be a non-negative safe integer, got ${n}`);
  }
  return String(n).padStart(6, "0");
}

export function logFileName(n: number): string {
  return `${padded(n)}.log`;
}

/** Table names are the SSTable layer's (one definition, re-exported here). */
export { tableFileName };

export function manifestFileName(n: number): string {
  return `${MANIFEST_PREFIX}${padded(n)}`;
}

/** The temporary file written (and synced) before it is renamed to CURRENT. */
export function tempFileName(n: number): string {
  return `${padded(n)}.dbtmp`;
}

export function logFilePath(dir: string, n: number): string {
  return joinPath(dir, logFileName(n));
}

export function tableFilePath(dir: string, n: number): string {
  return joinPath(dir, tableFileName(n));
}

export function manifestFilePath(dir: string, n: number): string {
  return joinPath(dir, manifestFileName(n));
}

export function tempFilePath(dir: string, n: number): string {
  return joinPath(dir, tempFileName(n));
}

export function currentFilePath(dir: string): string {
  return joinPath(dir, CURRENT_FILE);
}

export type NumberedFileType = "log" | "table" | "manifest" | "temp";

export type ParsedFileName =
  | { readonly type: NumberedFileType; readonly number: number }
  | { readonly type: "current" }
  | { readonly type: "lock" };

const NUMBERED = /^(\d{6,})\.(log|sst|dbtmp)$/;
const MANIFEST = /^MANIFEST-(\d{6,})$/;

/** Classifies a directory entry; undefined for names the store does not own. */
export function parseFileName(name: string): ParsedFileName | undefined {
  if (name === LOCK_FILE) return { type: "lock" };
  if (name === CURRENT_FILE) return { type: "current" };
  const m = MANIFEST.exec(name);
  if (m !== null) return numbered("manifest", m[1]!);
  const n = NUMBERED.exec(name);
  if (n === null) return undefined;
  const type = n[2] === "log" ? "log" : n[2] === "sst" ? "table" : "temp";
  return numbered(type, n[1]!);
}

function numbered(type: NumberedFileType, digits: string): ParsedFileName | undefined {
  const number = Number(digits);
  return Number.isSafeInteger(number) ? { type, number } : undefined;
}
