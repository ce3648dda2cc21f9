/**
 * Names of the files in a data directory. Numbers come from one counter, so file names
 * never repeat within a store's life; they are zero-padded to six digits to sort by name.
 *
 *   LOCK          held (flock) by the open store
 *   NNNNNN.log    a write-ahead log
 */
import { joinPath } from "../vfs/file-system.js";

export const LOCK_FILE = "LOCK";

export function logFileName(n: number): string {
  return `${String(n).padStart(6, "0")}.log`;
}

export function logFilePath(dir: string, n: number): string {
  return joinPath(dir, logFileName(n));
}

export type ParsedFileName = { type: "log"; number: number } | { type: "lock" };

/** Classifies a directory entry; undefined for names the store does not own. */
export function parseFileName(name: string): ParsedFileName | undefined {
  if (name === LOCK_FILE) return { type: "lock" };
  const m = /^(\d{6,})\.log$/.exec(name);
  if (m) return { type: "log", number: Number(m[1]) };
  return undefined;
}
