/**
 * Table file names: `NNNNNN.sst`, the file number zero-padded to at least six digits so
 * names sort by number (the numbering shared with logs and manifests is the version
 * layer's; see src/version/file-names.ts, which names tables the same way).
 */

/** The name (not path) of table file n. Throws RangeError unless n is a safe integer >= 0. */
export function tableFileName(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(`file number must be a non-negative safe integer, got ${n}`);
  }
  return `${String(n).padStart(6, "0")}.sst`;
}

/** The file number of a table file name, or undefined if `name` is not one. */
export function parseTableFileName(name: string): number | undefined {
  const m = /^(\d{6,})\.sst$/.exec(name);
  if (m === null) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : undefined;
}
