/**
 * Choosing compactions (LevelDB's VersionSet::PickCompaction and CompactRange).
 *
 * Scores: level 0 by file count / l0CompactionTrigger (every level-0 file costs a probe per
 * get, whatever its size); level n >= 1 by bytes / maxBytesForLevel(n). The last level
 * cannot be compacted further and scores 0. The level with the highest score compacts if
 * that score is >= 1 (ties go to the shallower level).
 *
 * Inputs:
 * - Level 0: the first file (by smallest key) after the level's compact pointer, widened
 *   to every level-0 file that overlaps the range, transitively: a level-0 file left out
 *   while an overlapping one goes down would leave older versions above newer ones.
 * - Level n >= 1: one file, round robin over the key space: the first file whose largest
 *   key is after the level's compact pointer (the largest key of the previous compaction
 *   at that level), wrapping around to the first file.
 * - Boundary files: a file of the same level whose smallest user key equals the largest
 *   user key of the inputs joins them (LevelDB's AddBoundaryInputs), or a get could find
 *   an older version left behind in the level above the newer one.
 * - Next level: every file of level + 1 overlapping the inputs' user-key range (plus its
 *   boundary files). Then, as LevelDB does, the level inputs are widened to everything in
 *   the combined range if that adds no next-level file and stays under maxCompactionBytes.
 * - Grandparents: the files of level + 2 overlapping the whole range (output cutting).
 * - Deeper ranges: the user-key ranges of the files of every level below level + 1 that
 *   overlap the range, for dropping tombstones (isBaseLevelForKey).
 *
 * The picker assumes one compaction runs at a time (nothing marks files as being
 * compacted): the caller picks again from the version the previous compaction installed.
 */
import { compareBytes } from "../key/internal-key.js";
import type { TableOptions } from "../sstable/table-options.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { Version } from "../version/version.js";
import { VersionEdit } from "../version/version-edit.js";
import type { KeyRange } from "./compaction-iterator.js";
import type { CompactionJob } from "./compaction-job.js";
import {
  type CompactionOptions,
  maxBytesForLevel,
  type ResolvedCompactionOptions,
  resolveCompactionOptions,
} from "./options.js";

export type CompactionReason = "level0" | "size" | "manual";

/** A chosen compaction of `level` into `outputLevel` = level + 1. */
export interface CompactionPlan {
  readonly reason: CompactionReason;
  readonly level: number;
  readonly outputLevel: number;
  /** The level's score when picked (0 for manual compactions). */
  readonly score: number;
  /** Files of `level` (level 0: newest first; deeper: sorted by key). */
  readonly inputs: readonly FileMetadata[];
  /** Files of `outputLevel`, sorted by key. */
  readonly nextInputs: readonly FileMetadata[];
  /** Files of outputLevel + 1 overlapping the compaction's range, sorted by key. */
  readonly grandparents: readonly FileMetadata[];
  /** Per level below outputLevel: the sorted ranges of its files within the range. */
  readonly deeperRanges: readonly (readonly KeyRange[])[];
  /** User-key range of all inputs (both levels). */
  readonly smallestKey: Uint8Array;
  readonly largestKey: Uint8Array;
  /** What the caller stores as `level`'s compact pointer: the largest key of `inputs`. */
  readonly compactPointer: Uint8Array;
  /** Total size of inputs and nextInputs. */
  readonly inputBytes: number;
}

/** Scores per level (see the module comment); the last level scores 0. */
export function levelScores(version: Version, options: CompactionOptions = {}): number[] {
  const opts = resolveCompactionOptions(options);
  const scores: number[] = [];
  for (let level = 0; level < version.numLevels; level++) {
    if (level === version.numLevels - 1) scores.push(0);
    else if (level === 0) scores.push(version.numFiles(0) / opts.l0CompactionTrigger);
    else scores.push(version.levelBytes(level) / maxBytesForLevel(level, opts));
  }
  return scores;
}

/** The level that needs compaction most and its score, or undefined when none reaches 1. */
export function neededCompaction(
  version: Version,
  options: CompactionOptions = {},
): { level: number; score: number } | undefined {
  const scores = levelScores(version, options);
  let best = -1;
  let bestScore = 0;
  scores.forEach((score, level) => {
    if (score > bestScore) {
      best = level;
      bestScore = score;
    }
  });
  return best >= 0 && bestScore >= 1 ? { level: best, score: bestScore } : undefined;
}

/**
 * The compaction the version needs most (module comment), or undefined when no level's
 * score reaches 1. `compactPointers[level]` is the `compactPointer` of the last plan run at
 * that level (undefined: start from the beginning of the key space).
 */
export function pickCompaction(
  version: Version,
  options: CompactionOptions,
  compactPointers: readonly (Uint8Array | undefined)[],
): CompactionPlan | undefined {
  const opts = resolveCompactionOptions(options);
  const needed = neededCompaction(version, opts);
  if (needed === undefined) return undefined;
  const { level, score } = needed;
  const files = version.levels[level]!;
  const pointer = compactPointers[level];
  // Level 0 is kept newest first; round robin needs it in key order.
  const byKey =
    level === 0 ? [...files].sort((a, b) => compareBytes(a.smallestKey, b.smallestKey)) : files;
  const start =
    (pointer === undefined
      ? undefined
      : byKey.find((f) => compareBytes(f.largestKey, pointer) > 0)) ?? byKey[0];
  if (start === undefined) return undefined;
  const inputs = level === 0 ? expandLevel0(version, [start]) : addBoundaryFiles(files, [start]);
  return completePlan(version, opts, level === 0 ? "level0" : "size", level, score, inputs);
}

/**
 * A manual compaction of the files of `level` overlapping [start, end] (undefined bounds:
 * unbounded) into level + 1, or undefined when there are none (or `level` is the last).
 * Below level 0 one step takes at most about maxCompactionBytes of the level; the caller
 * runs plans until this returns undefined (each installed step moves files out of the
 * range at `level`).
 */
export function planRange(
  version: Version,
  level: number,
  start?: Uint8Array,
  end?: Uint8Array,
  options: CompactionOptions = {},
): CompactionPlan | undefined {
  const opts = resolveCompactionOptions(options);
  if (!Number.isSafeInteger(level) || level < 0 || level >= version.numLevels) {
    throw new RangeError(`planRange: level ${level} out of range [0, ${version.numLevels})`);
  }
  if (level === version.numLevels - 1) return undefined;
  let inputs = version.overlappingFiles(level, start, end);
  if (inputs.length === 0) return undefined;
  if (level === 0) {
    inputs = expandLevel0(version, inputs);
  } else {
    let total = 0;
    for (let i = 0; i < inputs.length; i++) {
      total += inputs[i]!.size;
      if (total >= opts.maxCompactionBytes) {
        inputs = inputs.slice(0, i + 1);
        break;
      }
    }
    inputs = addBoundaryFiles(version.levels[level]!, inputs);
  }
  return completePlan(version, opts, "manual", level, 0, inputs);
}

/**
 * A compaction that can be done by moving its one input file down a level without
 * rewriting it (LevelDB's IsTrivialMove): nothing to merge with, and not too much
 * grandparent overlap. Manual compactions are usually run anyway, to drop tombstones.
 */
export function isTrivialMove(plan: CompactionPlan, options: CompactionOptions = {}): boolean {
  const opts = resolveCompactionOptions(options);
  return (
    plan.inputs.length === 1 &&
    plan.nextInputs.length === 0 &&
    totalSize(plan.grandparents) <= opts.maxGrandparentOverlapBytes
  );
}

/**
 * How many output file numbers to reserve for `plan`: outputs are about as large as the
 * inputs when the table options match theirs, each output but the last of a run is at
 * least targetFileSize, and grandparent cuts add at most one output per
 * maxGrandparentOverlapBytes of grandparents. Doubled for slack (numbers are cheap); pass
 * a larger `factor` when the outputs may be bigger than the inputs (e.g. inputs written
 * with compression, outputs without).
 */
export function outputNumbersNeeded(
  plan: CompactionPlan,
  options: CompactionOptions = {},
  factor = 2,
): number {
  const opts = resolveCompactionOptions(options);
  return (
    Math.ceil(plan.inputBytes / opts.targetFileSize) * factor +
    Math.ceil(totalSize(plan.grandparents) / opts.maxGrandparentOverlapBytes) +
    4
  );
}

/** What `compactionJob` needs besides the plan. */
export interface CompactionJobParams {
  readonly dir: string;
  /** Sequence numbers of the live snapshots (any order; sorted here). */
  readonly snapshots: readonly number[];
  /** At least `outputNumbersNeeded(plan, options)` fresh file numbers. */
  readonly outputNumbers: readonly number[];
  readonly tableOptions: TableOptions;
  readonly verifyChecksums: boolean;
  readonly options?: CompactionOptions | undefined;
}

/** The plain-data job that runs `plan` (for runCompaction or a CompactionWorker). */
export function compactionJob(plan: CompactionPlan, params: CompactionJobParams): CompactionJob {
  const opts = resolveCompactionOptions(params.options);
  const inputs = [{ level: plan.level, files: [...plan.inputs] }];
  if (plan.nextInputs.length > 0) {
    inputs.push({ level: plan.outputLevel, files: [...plan.nextInputs] });
  }
  return {
    dir: params.dir,
    inputs,
    outputLevel: plan.outputLevel,
    snapshots: [...params.snapshots].sort((a, b) => a - b),
    deeperFiles: plan.deeperRanges.map((ranges) => [...ranges]),
    grandparents: [...plan.grandparents],
    targetFileSize: opts.targetFileSize,
    maxGrandparentOverlapBytes: opts.maxGrandparentOverlapBytes,
    tableOptions: { ...params.tableOptions },
    outputNumbers: [...params.outputNumbers],
    verifyChecksums: params.verifyChecksums,
  };
}

/** The edit installing a finished compaction: inputs deleted, outputs added at outputLevel. */
export function compactionEdit(
  plan: CompactionPlan,
  outputs: readonly FileMetadata[],
): VersionEdit {
  const edit = new VersionEdit();
  for (const f of plan.inputs) edit.deleteFile(plan.level, f.number);
  for (const f of plan.nextInputs) edit.deleteFile(plan.outputLevel, f.number);
  for (const f of outputs) edit.addFile(plan.outputLevel, f);
  return edit;
}

/** The edit of a trivial move: the one input file moves down a level, unchanged. */
export function trivialMoveEdit(plan: CompactionPlan): VersionEdit {
  const edit = new VersionEdit();
  for (const f of plan.inputs) {
    edit.deleteFile(plan.level, f.number);
    edit.addFile(plan.outputLevel, f);
  }
  return edit;
}

function totalSize(files: readonly FileMetadata[]): number {
  let total = 0;
  for (const f of files) total += f.size;
  return total;
}

/** User-key range of files (REQUIRES at least one). */
function userRange(files: readonly FileMetadata[]): [Uint8Array, Uint8Array] {
  let smallest = files[0]!.smallestKey;
  let largest = files[0]!.largestKey;
  for (const f of files) {
    if (compareBytes(f.smallestKey, smallest) < 0) smallest = f.smallestKey;
    if (compareBytes(f.largestKey, largest) > 0) largest = f.largestKey;
  }
  return [smallest, largest];
}

/** Every level-0 file overlapping the range of `files`, widened until the range is stable. */
function expandLevel0(version: Version, files: readonly FileMetadata[]): FileMetadata[] {
  let [smallest, largest] = userRange(files);
  for (;;) {
    const found = version.overlappingFiles(0, smallest, largest);
    const [s, l] = userRange(found);
    if (compareBytes(s, smallest) === 0 && compareBytes(l, largest) === 0) return found;
    smallest = s;
    largest = l;
  }
}

/**
 * `chosen` (a run of consecutive files of a level >= 1) plus the files after it whose
 * smallest user key equals the run's largest user key, repeatedly.
 */
function addBoundaryFiles(
  levelFiles: readonly FileMetadata[],
  chosen: readonly FileMetadata[],
): FileMetadata[] {
  const out = [...chosen];
  if (out.length === 0) return out;
  let i = levelFiles.indexOf(out[out.length - 1]!);
  while (i + 1 < levelFiles.length) {
    const next = levelFiles[i + 1]!;
    if (compareBytes(next.smallestKey, out[out.length - 1]!.largestKey) !== 0) break;
    out.push(next);
    i++;
  }
  return out;
}

/** Files of a level >= 1 overlapping [smallest, largest], with boundary files. */
function overlapping(
  version: Version,
  level: number,
  smallest: Uint8Array,
  largest: Uint8Array,
): FileMetadata[] {
  return addBoundaryFiles(
    version.levels[level]!,
    version.overlappingFiles(level, smallest, largest),
  );
}

function completePlan(
  version: Version,
  opts: ResolvedCompactionOptions,
  reason: CompactionReason,
  level: number,
  score: number,
  initial: FileMetadata[],
): CompactionPlan {
  const outputLevel = level + 1;
  let inputs = initial;
  let [smallest, largest] = userRange(inputs);
  let nextInputs = overlapping(version, outputLevel, smallest, largest);

  // Widen the level inputs when that pulls in no further next-level file.
  if (nextInputs.length > 0) {
    const [allSmallest, allLargest] = userRange([...inputs, ...nextInputs]);
    const expanded =
      level === 0
        ? expandLevel0(version, inputs.concat(version.overlappingFiles(0, allSmallest, allLargest)))
        : overlapping(version, level, allSmallest, allLargest);
    if (
      expanded.length > inputs.length &&
      totalSize(expanded) + totalSize(nextInputs) < opts.maxCompactionBytes
    ) {
      const [s, l] = userRange(expanded);
      const expandedNext = overlapping(version, outputLevel, s, l);
      if (expandedNext.length === nextInputs.length) {
        inputs = expanded;
        nextInputs = expandedNext;
        smallest = s;
        largest = l;
      }
    }
  }

  const compactPointer = userRange(inputs)[1];
  const [allSmallest, allLargest] =
    nextInputs.length > 0 ? userRange([...inputs, ...nextInputs]) : [smallest, largest];
  const grandparents =
    outputLevel + 1 < version.numLevels
      ? version.overlappingFiles(outputLevel + 1, allSmallest, allLargest)
      : [];
  const deeperRanges: KeyRange[][] = [];
  for (let l = outputLevel + 1; l < version.numLevels; l++) {
    deeperRanges.push(
      version
        .overlappingFiles(l, allSmallest, allLargest)
        .map((f): KeyRange => [f.smallestKey, f.largestKey]),
    );
  }
  return {
    reason,
    level,
    outputLevel,
    score,
    inputs,
    nextInputs,
    grandparents,
    deeperRanges,
    smallestKey: allSmallest,
    largestKey: allLargest,
    compactPointer,
    inputBytes: totalSize(inputs) + totalSize(nextInputs),
  };
}
