/**
 * Version: an immutable set of table files per level, as of one point of the manifest.
 *
 * Invariants (checked by the constructor, which throws VersionEditError):
 * - Level 0 is ordered newest first: by file number, descending. Its files may overlap.
 * - Every deeper level is sorted by smallest key and its files do not overlap in
 *   internal-key order: each file's largest bound sorts before the next file's smallest.
 *   Two adjacent files may share a boundary USER key with different sequence numbers
 *   (newer versions in the first file); `forEachCandidate` takes a sequence number to
 *   pick the right one.
 * - A file number appears at most once in the whole version.
 *
 * Reference counting: a version is shared by the version set (while current) and by
 * readers (gets, iterators, snapshots) that must keep its files alive. A new version has
 * no references. `ref()` adds one, `unref()` drops one; when the count drops to zero the
 * version is released: the owner's hook runs (so files no live version uses can be
 * deleted) and the version may not be ref'ed again.
 */
import { compareBytes, MAX_SEQUENCE } from "../key/internal-key.js";
import { compareBound, type FileMetadata, fileContainsUserKey } from "./file-metadata.js";
import { describeFile } from "./version-edit.js";

/** Default number of levels. */
export const NUM_LEVELS = 7;

/** A file and the level it is in. */
export interface LeveledFile {
  readonly level: number;
  readonly file: FileMetadata;
}

/** Called once, when a version's reference count drops to zero. */
export type VersionReleaseHook = (version: Version) => void;

/**
 * A set of files that does not form a valid version, or an edit that does not apply to a
 * version (deletes a file that is not there, adds one that is, makes a level overlap).
 * Thrown for caller bugs; recovery reports it as CORRUPTION of the manifest.
 */
export class VersionEditError extends Error {
  override readonly name = "VersionEditError";
}

/** Level-0 files sorted by smallest key if no two share any user key, else undefined. */
function disjointLevel0(files: readonly FileMetadata[]): readonly FileMetadata[] | undefined {
  if (files.length < 4) return undefined; // a linear scan is as fast
  const sorted = [...files].sort((a, b) => compareBytes(a.smallestKey, b.smallestKey));
  for (let i = 1; i < sorted.length; i++) {
    if (compareBytes(sorted[i - 1]!.largestKey, sorted[i]!.smallestKey) >= 0) return undefined;
  }
  return sorted;
}

/** Length of the longest common prefix of a and b. */
function commonPrefix(a: Uint8Array, b: Uint8Array): number {
  const n = a.length < b.length ? a.length : b.length;
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The user-key prefix every key of `files` shares (every key between the smallest
 * smallest key and the largest largest key shares it), as a view of one file's key.
 */
function sharedPrefix(files: readonly FileMetadata[]): Uint8Array {
  if (files.length === 0) return new Uint8Array(0);
  let lo = files[0]!.smallestKey;
  let hi = files[0]!.largestKey;
  for (let i = 1; i < files.length; i++) {
    const f = files[i]!;
    if (compareBytes(f.smallestKey, lo) < 0) lo = f.smallestKey;
    if (compareBytes(f.largestKey, hi) > 0) hi = f.largestKey;
  }
  return lo.subarray(0, commonPrefix(lo, hi));
}

/**
 * True iff key starts with prefix. A key that does not sorts before or after every key
 * that does, so no file whose keys all start with prefix can hold it.
 */
function hasPrefix(key: Uint8Array, prefix: Uint8Array): boolean {
  const n = prefix.length;
  if (key.length < n) return false;
  for (let i = 0; i < n; i++) if (key[i] !== prefix[i]) return false;
  return true;
}

/** compareBytes(a, b) for byte strings known to agree on their first `from` bytes. */
function compareBytesFrom(a: Uint8Array, b: Uint8Array, from: number): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = from; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

export class Version {
  /** Files per level: `levels[0]` newest first, deeper levels sorted by key. */
  readonly levels: readonly (readonly FileMetadata[])[];
  private refs = 0;
  private released = false;
  private readonly onRelease: VersionReleaseHook | undefined;
  /**
   * Level 0 sorted by smallest key when no two of its files share a user key (e.g. after
   * a sequential fill); then a get binary-searches level 0 instead of testing every file.
   */
  private readonly l0Disjoint: readonly FileMetadata[] | undefined;
  /**
   * Per level, the user-key prefix all its files' keys share: a key without it is in no
   * file of the level (one check), and keys with it are compared from after it.
   */
  private readonly prefixes: readonly Uint8Array[];

  /**
   * Takes `levels` as they are (not copied: the arrays must never be modified) and checks
   * the invariants in the module comment; throws VersionEditError when one fails.
   */
  constructor(levels: readonly (readonly FileMetadata[])[], onRelease?: VersionReleaseHook) {
    if (levels.length < 1) throw new VersionEditError("a version needs at least one level");
    checkLevels(levels);
    this.levels = levels;
    this.onRelease = onRelease;
    this.l0Disjoint = disjointLevel0(levels[0]!);
    this.prefixes = levels.map(sharedPrefix);
  }

  /** A version without files. */
  static empty(numLevels: number = NUM_LEVELS, onRelease?: VersionReleaseHook): Version {
    const levels: FileMetadata[][] = [];
    for (let i = 0; i < numLevels; i++) levels.push([]);
    return new Version(levels, onRelease);
  }

  get numLevels(): number {
    return this.levels.length;
  }

  /** Current reference count. */
  get refCount(): number {
    return this.refs;
  }

  /** True once the reference count has dropped to zero after being positive. */
  get isReleased(): boolean {
    return this.released;
  }

  /** Adds a reference. Throws if the version was already released. */
  ref(): void {
    if (this.released) throw new Error("Version.ref: the version was already released");
    this.refs++;
  }

  /**
   * Drops a reference; at zero the version is released and the owner's hook runs.
   * Throws if there is no reference to drop.
   */
  unref(): void {
    if (this.refs <= 0) throw new Error("Version.unref: no reference to drop");
    this.refs--;
    if (this.refs === 0) {
      this.released = true;
      this.onRelease?.(this);
    }
  }

  /**
   * Calls `fn(file, level)` for every file that may hold the newest entry of user key `key`
   * visible at sequence number `seq` (default: all), in the order a read must look at them:
   * the level-0 files whose user-key range contains `key`, newest first; then, for each
   * deeper level, the one file found by binary search (the first whose largest bound is at
   * or after (key, seq)), if its user-key range starts at or before `key`. Stops as soon as
   * `fn` returns true, and then returns true; returns false when every candidate was
   * offered. Allocates nothing.
   */
  forEachCandidate(
    key: Uint8Array,
    fn: (file: FileMetadata, level: number) => boolean,
    seq: number = MAX_SEQUENCE,
  ): boolean {
    const prefixes = this.prefixes;
    const sorted = this.l0Disjoint;
    const p0 = prefixes[0]!;
    if (!hasPrefix(key, p0)) {
      // No level-0 file can hold the key.
    } else if (sorted !== undefined) {
      // At most one level-0 file can hold the key: the first whose largest key >= key.
      const from = p0.length;
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (compareBytesFrom(sorted[mid]!.largestKey, key, from) < 0) lo = mid + 1;
        else hi = mid;
      }
      const file = sorted[lo];
      if (file !== undefined && compareBytesFrom(key, file.smallestKey, from) >= 0 && fn(file, 0)) {
        return true;
      }
    } else {
      const l0 = this.levels[0]!;
      for (let i = 0; i < l0.length; i++) {
        const file = l0[i]!;
        if (fileContainsUserKey(file, key) && fn(file, 0)) return true;
      }
    }
    for (let level = 1; level < this.levels.length; level++) {
      const files = this.levels[level]!;
      if (files.length === 0) continue;
      const prefix = prefixes[level]!;
      if (!hasPrefix(key, prefix)) continue;
      const from = prefix.length;
      let lo = 0;
      let hi = files.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const f = files[mid]!;
        const c = compareBytesFrom(f.largestKey, key, from);
        // f's largest bound sorts before (key, seq): the key, if present, is further right.
        if (c < 0 || (c === 0 && f.largestSeq > seq)) lo = mid + 1;
        else hi = mid;
      }
      const file = files[lo];
      if (
        file !== undefined &&
        compareBytesFrom(key, file.smallestKey, from) >= 0 &&
        fn(file, level)
      ) {
        return true;
      }
    }
    return false;
  }

  /** The candidates of `forEachCandidate`, as an array (for tests and tools). */
  filesForGet(key: Uint8Array, seq: number = MAX_SEQUENCE): LeveledFile[] {
    const out: LeveledFile[] = [];
    this.forEachCandidate(
      key,
      (file, level) => {
        out.push({ level, file });
        return false;
      },
      seq,
    );
    return out;
  }

  /**
   * Files of `level` whose user-key range intersects [smallest, largest] (undefined bounds
   * are unbounded), in the level's order. Level 0 is scanned; deeper levels are searched.
   * No expansion: the result is not widened to the files that overlap the files found.
   */
  overlappingFiles(
    level: number,
    smallest: Uint8Array | undefined,
    largest: Uint8Array | undefined,
  ): FileMetadata[] {
    const files = this.levelFiles(level);
    const out: FileMetadata[] = [];
    const afterSmallest = (f: FileMetadata) =>
      smallest === undefined || compareBytes(f.largestKey, smallest) >= 0;
    const beforeLargest = (f: FileMetadata) =>
      largest === undefined || compareBytes(f.smallestKey, largest) <= 0;
    if (level === 0) {
      for (const f of files) if (afterSmallest(f) && beforeLargest(f)) out.push(f);
      return out;
    }
    let lo = 0;
    let hi = files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (afterSmallest(files[mid]!)) hi = mid;
      else lo = mid + 1;
    }
    for (let i = lo; i < files.length && beforeLargest(files[i]!); i++) out.push(files[i]!);
    return out;
  }

  /** Number of files in `level`. */
  numFiles(level: number): number {
    return this.levelFiles(level).length;
  }

  /** Total size in bytes of the files in `level`. */
  levelBytes(level: number): number {
    let total = 0;
    for (const f of this.levelFiles(level)) total += f.size;
    return total;
  }

  /** Every file with its level, level by level in each level's order. */
  allFiles(): LeveledFile[] {
    const out: LeveledFile[] = [];
    this.levels.forEach((files, level) => {
      for (const file of files) out.push({ level, file });
    });
    return out;
  }

  /** Debug text: per non-empty level a header line, then one line per file. */
  toString(): string {
    const lines: string[] = [];
    this.levels.forEach((files, level) => {
      if (files.length === 0) return;
      lines.push(`--- level ${level}: ${files.length} files, ${this.levelBytes(level)} bytes ---`);
      for (const f of files) lines.push(`  ${describeFile(f)}`);
    });
    return lines.length === 0 ? "(no files)" : lines.join("\n");
  }

  private levelFiles(level: number): readonly FileMetadata[] {
    const files = this.levels[level];
    if (files === undefined) {
      throw new RangeError(`level ${level} out of range [0, ${this.levels.length})`);
    }
    return files;
  }
}

/** Sort order of level 0: newest (highest number) first. */
export function compareLevel0(a: FileMetadata, b: FileMetadata): number {
  return b.number - a.number;
}

/** Sort order of deeper levels: by smallest bound. */
export function compareBySmallest(a: FileMetadata, b: FileMetadata): number {
  return compareBound(a.smallestKey, a.smallestSeq, b.smallestKey, b.smallestSeq);
}

function checkLevels(levels: readonly (readonly FileMetadata[])[]): void {
  const numbers = new Set<number>();
  levels.forEach((files, level) => {
    for (let i = 0; i < files.length; i++) {
      const f = files[i]!;
      if (numbers.has(f.number)) {
        throw new VersionEditError(`file ${f.number} appears twice (again at level ${level})`);
      }
      numbers.add(f.number);
      if (i === 0) continue;
      const prev = files[i - 1]!;
      if (level === 0) {
        if (compareLevel0(prev, f) >= 0) {
          throw new VersionEditError(
            `level 0 is not newest first: file ${prev.number} before file ${f.number}`,
          );
        }
      } else if (
        compareBound(prev.largestKey, prev.largestSeq, f.smallestKey, f.smallestSeq) >= 0
      ) {
        throw new VersionEditError(
          `level ${level}: file ${describeFile(prev)} overlaps or is not before ${describeFile(f)}`,
        );
      }
    }
  });
}
