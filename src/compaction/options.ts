/**
 * Options of levelled compaction (LevelDB's scheme), their defaults and the reasons for them.
 *
 * Shape of the tree: level 0 holds flushed memtables, which may overlap; every deeper level
 * holds files of about `targetFileSize` bytes that do not overlap, and may hold up to
 * `maxBytesForLevel(level)` bytes: `maxBytesForLevelBase` for level 1, then
 * `levelSizeMultiplier` times more per level.
 *
 * Defaults:
 * - numLevels 7: with a 10 MiB level 1 and a multiplier of 10, level 6 holds 1 TiB, more
 *   than a store of this kind is meant for; more levels only add read amplification.
 * - l0CompactionTrigger 4: every level-0 file may hold any key, so a get probes each of
 *   them (Bloom filters make the misses cheap, not free). Four keeps that bounded while
 *   letting an L0 -> L1 compaction take several flushes at once (LevelDB's value).
 * - l0SlowdownTrigger 20 / l0StopTrigger 36: back-pressure for the store when compaction
 *   falls behind the writers: first delay writes (1 ms for a share of the write groups
 *   that grows from 1/17 at 20 files to all at 35; see KvStore.makeRoomSlow), then stop
 *   them, rather than let level 0 (and the read cost) grow without bound. RocksDB's values, not LevelDB's 8 / 12: an
 *   L0 -> L1 compaction takes every level-0 file and rewrites the level-1 files they
 *   overlap (with random keys, all of level 1), so the more flushes it takes at once, the
 *   less of level 1 is rewritten per byte flushed. Measured on a 1M-key random load in
 *   batches of 1,000 (2 cores): with 8 / 12 writers spent two thirds of the time delayed or
 *   stopped and the process used 5.6 s of CPU; with 20 / 36, 4.2 s of CPU and 1.55x the
 *   throughput. The price is read amplification while a burst of writes lasts: a get may
 *   probe up to that many level-0 Bloom filters until compaction catches up.
 * - levelSizeMultiplier 10: write amplification per level is about the multiplier (a file
 *   pushed down meets about `multiplier` times its size in the next level), space
 *   amplification about 1 + 1/multiplier; 10 is the usual balance (LevelDB, RocksDB).
 * - maxBytesForLevelBase 10 MiB: level 1 should be about the size of level 0 when an
 *   L0 -> L1 compaction starts (RocksDB's tuning advice), because such a compaction nearly
 *   always overlaps all of level 1 and rewrites it. Four level-0 files from 4 MiB write
 *   buffers are 4-16 MiB of table (tables are smaller than the memtable that produced
 *   them: `approximateBytes` counts ~70 bytes of per-entry memory overhead that a table
 *   does not store). 10 MiB sits inside that span; 40 MiB would make each L0 -> L1
 *   compaction rewrite up to 40 MiB of level 1 for 4-16 MiB of new data.
 * - targetFileSize 2 MiB: small enough that one deeper-level compaction (one file plus
 *   the ~10 files it overlaps below) stays around 20-25 MiB and finishes quickly, large
 *   enough that the file count (open files, manifest entries) stays modest (LevelDB).
 * - maxGrandparentOverlapBytes 10 x targetFileSize: an output file is cut early when it
 *   would overlap more than this many bytes of the level below its own, so compacting that
 *   file later stays bounded (LevelDB).
 * - maxCompactionBytes 25 x targetFileSize: bound on the input bytes when widening a
 *   compaction's level inputs (LevelDB's expanded-compaction limit) and per step of a
 *   manual range compaction.
 */
import { KvError } from "../errors.js";

export interface CompactionOptions {
  numLevels?: number | undefined;
  l0CompactionTrigger?: number | undefined;
  l0SlowdownTrigger?: number | undefined;
  l0StopTrigger?: number | undefined;
  levelSizeMultiplier?: number | undefined;
  maxBytesForLevelBase?: number | undefined;
  targetFileSize?: number | undefined;
  /** Default: 10 x targetFileSize. */
  maxGrandparentOverlapBytes?: number | undefined;
  /** Default: 25 x targetFileSize. */
  maxCompactionBytes?: number | undefined;
}

export type ResolvedCompactionOptions = { readonly [K in keyof CompactionOptions]-?: number };

const MiB = 1024 * 1024;

export const DEFAULT_NUM_LEVELS = 7;
export const DEFAULT_L0_COMPACTION_TRIGGER = 4;
export const DEFAULT_L0_SLOWDOWN_TRIGGER = 20;
export const DEFAULT_L0_STOP_TRIGGER = 36;
export const DEFAULT_LEVEL_SIZE_MULTIPLIER = 10;
export const DEFAULT_MAX_BYTES_FOR_LEVEL_BASE = 10 * MiB;
export const DEFAULT_TARGET_FILE_SIZE = 2 * MiB;

function invalid(message: string): KvError {
  return new KvError("INVALID_ARGUMENT", `compaction options: ${message}`);
}

function integer(v: number | undefined, def: number, name: string, min: number): number {
  if (v === undefined) return def;
  if (!Number.isSafeInteger(v) || v < min) {
    throw invalid(`${name} must be an integer >= ${min}, got ${String(v)}`);
  }
  return v;
}

/** The options with defaults filled in; throws INVALID_ARGUMENT for a bad value. */
export function resolveCompactionOptions(
  options: CompactionOptions = {},
): ResolvedCompactionOptions {
  const numLevels = integer(options.numLevels, DEFAULT_NUM_LEVELS, "numLevels", 2);
  const l0CompactionTrigger = integer(
    options.l0CompactionTrigger,
    DEFAULT_L0_COMPACTION_TRIGGER,
    "l0CompactionTrigger",
    1,
  );
  const l0SlowdownTrigger = integer(
    options.l0SlowdownTrigger,
    Math.max(DEFAULT_L0_SLOWDOWN_TRIGGER, l0CompactionTrigger),
    "l0SlowdownTrigger",
    l0CompactionTrigger,
  );
  const l0StopTrigger = integer(
    options.l0StopTrigger,
    Math.max(DEFAULT_L0_STOP_TRIGGER, l0SlowdownTrigger),
    "l0StopTrigger",
    l0SlowdownTrigger,
  );
  const levelSizeMultiplier = options.levelSizeMultiplier ?? DEFAULT_LEVEL_SIZE_MULTIPLIER;
  if (!(Number.isFinite(levelSizeMultiplier) && levelSizeMultiplier > 1)) {
    throw invalid(`levelSizeMultiplier must be a number > 1, got ${String(levelSizeMultiplier)}`);
  }
  const maxBytesForLevelBase = integer(
    options.maxBytesForLevelBase,
    DEFAULT_MAX_BYTES_FOR_LEVEL_BASE,
    "maxBytesForLevelBase",
    1,
  );
  const targetFileSize = integer(
    options.targetFileSize,
    DEFAULT_TARGET_FILE_SIZE,
    "targetFileSize",
    1,
  );
  const maxGrandparentOverlapBytes = integer(
    options.maxGrandparentOverlapBytes,
    10 * targetFileSize,
    "maxGrandparentOverlapBytes",
    1,
  );
  const maxCompactionBytes = integer(
    options.maxCompactionBytes,
    25 * targetFileSize,
    "maxCompactionBytes",
    1,
  );
  return {
    numLevels,
    l0CompactionTrigger,
    l0SlowdownTrigger,
    l0StopTrigger,
    levelSizeMultiplier,
    maxBytesForLevelBase,
    targetFileSize,
    maxGrandparentOverlapBytes,
    maxCompactionBytes,
  };
}

/**
 * The byte budget of `level` (>= 1): maxBytesForLevelBase x multiplier^(level - 1).
 * Level 0 is limited by file count, not bytes (see levelScores).
 */
export function maxBytesForLevel(level: number, options: ResolvedCompactionOptions): number {
  let bytes = options.maxBytesForLevelBase;
  for (let l = 1; l < level; l++) bytes *= options.levelSizeMultiplier;
  return bytes;
}
