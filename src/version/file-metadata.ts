/**
 * FileMetadata: what a version knows about one table file. Immutable once built: neither
 * the object nor its key arrays may be modified after it is handed to a VersionEdit (the
 * same object is shared by every version that holds the file).
 *
 * Key range: the file holds internal keys from (smallestKey, smallestSeq) to
 * (largestKey, largestSeq) inclusive, in internal-key order (user key ascending, then
 * sequence number descending; see src/key/internal-key.ts). The kind of the bounding
 * entries is not kept: no two entries share a user key and a sequence number.
 */
import { compareBytes, MAX_SEQUENCE } from "../key/internal-key.js";

export interface FileMetadata {
  /** File number: the table is `tableFileName(number)` (file-names.ts). */
  readonly number: number;
  /** File size in bytes. */
  readonly size: number;
  /** User key of the smallest entry. */
  readonly smallestKey: Uint8Array;
  /** Sequence number of the smallest entry. */
  readonly smallestSeq: number;
  /** User key of the largest entry. */
  readonly largestKey: Uint8Array;
  /** Sequence number of the largest entry. */
  readonly largestSeq: number;
  /** Number of entries (puts and deletes). */
  readonly entries: number;
  /** Number of deletion entries, at most `entries`. */
  readonly tombstones: number;
}

/**
 * Compares two internal-key bounds given as (user key, sequence): negative when a sorts
 * first (smaller user key, or same user key and higher sequence), zero when equal.
 */
export function compareBound(
  aKey: Uint8Array,
  aSeq: number,
  bKey: Uint8Array,
  bSeq: number,
): number {
  const c = compareBytes(aKey, bKey);
  if (c !== 0) return c;
  return aSeq === bSeq ? 0 : aSeq > bSeq ? -1 : 1;
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

/**
 * What is wrong with a file's metadata, or undefined when it is well formed: numbers are
 * non-negative safe integers, sequences at most MAX_SEQUENCE, tombstones <= entries, and
 * the smallest bound does not sort after the largest.
 */
export function fileMetadataProblem(file: FileMetadata): string | undefined {
  if (!isCount(file.number)) return `bad file number ${file.number}`;
  const what = `file ${file.number}`;
  if (!isCount(file.size)) return `${what}: bad size ${file.size}`;
  if (!isCount(file.entries)) return `${what}: bad entry count ${file.entries}`;
  if (!isCount(file.tombstones) || file.tombstones > file.entries) {
    return `${what}: bad tombstone count ${file.tombstones} (entries ${file.entries})`;
  }
  if (!(file.smallestKey instanceof Uint8Array) || !(file.largestKey instanceof Uint8Array)) {
    return `${what}: keys must be Uint8Arrays`;
  }
  for (const seq of [file.smallestSeq, file.largestSeq]) {
    if (!isCount(seq) || seq > MAX_SEQUENCE) return `${what}: bad sequence number ${seq}`;
  }
  if (compareBound(file.smallestKey, file.smallestSeq, file.largestKey, file.largestSeq) > 0) {
    return `${what}: smallest key sorts after largest key`;
  }
  return undefined;
}

/** True iff the user key lies within the file's user-key range [smallestKey, largestKey]. */
export function fileContainsUserKey(file: FileMetadata, key: Uint8Array): boolean {
  return compareBytes(key, file.smallestKey) >= 0 && compareBytes(key, file.largestKey) <= 0;
}
