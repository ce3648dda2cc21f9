/**
 * `db.stats()`: the shape of the snapshot of the store's counters and state, and the
 * figures derived from them. The counters are kept by the parts that do the work (commit
 * queue, flushes, write stalls, compactions, caches); `stats()` copies them.
 */
import { maxBytesForLevel } from "../compaction/options.js";
import type { BlockCacheStats } from "../sstable/block-cache.js";
import type { Version } from "../version/version.js";
import type { CommitStats } from "./commit-queue.js";
import type { CompactionStats } from "./compaction-scheduler.js";
import type { StallCause, StallState } from "./events.js";
import type { ResolvedOptions } from "./options.js";
import type { StoreParts } from "./store-parts.js";

/** Counters of the flushes (kept by the memtable flushes, memtable-flushes.ts). */
export interface FlushCounters {
  flushes: number;
  /** Bytes written by flushes. */
  flushBytes: number;
  /** Milliseconds spent in flushes (from start to the table installed). */
  flushMillis: number;
}

/** Counters of the write stalls (kept by write-stalls.ts). */
export interface StallCounters {
  /**
   * Times writers waited: for a flush because the next memtable filled up first, or for
   * compaction because level 0 reached l0StopTrigger files.
   */
  writeStalls: number;
  /** Write groups delayed by 1 ms because level 0 reached l0SlowdownTrigger files. */
  writeSlowdowns: number;
  /** Total milliseconds writers spent waiting in stalls. */
  stallMillis: number;
}

/** A snapshot of counters for tests, benchmarks and operators. */
export interface StoreStats extends FlushCounters, StallCounters {
  /** Sequence number of the newest visible entry. */
  lastSequence: number;
  memtableBytes: number;
  memtableEntries: number;
  /** Immutable memtables waiting for (or in) a flush. */
  immutableMemtables: number;
  /** Number of the write-ahead log that receives writes. */
  logNumber: number;
  commit: CommitStats;
  /** Table files per level. */
  levelFiles: number[];
  /** Bytes of table files per level. */
  levelBytes: number[];
  /** The write-stall state now: "delayed" from l0SlowdownTrigger on, "stopped" while writers wait. */
  stallState: StallState;
  /** What caused a state other than "normal". */
  stallCause: StallCause | undefined;
  openIterators: number;
  openSnapshots: number;
  blockCache: BlockCacheStats;
  /** Table lookups that consulted a Bloom filter, and those it answered "absent". */
  bloomFilter: { checked: number; useful: number };
  /** The background error that stopped writes, if any. */
  backgroundError: string | undefined;
  compaction: CompactionStats;
  /**
   * Bytes written to tables (flushes and compactions) per byte flushed from memtables:
   * how many times each byte reaching a table is rewritten by compaction, plus one.
   */
  writeAmplification: number;
  /** Estimated bytes compaction must rewrite to bring every level under its target. */
  pendingCompactionBytes: number;
}

/**
 * The stats of the store made of `p`, with `openIterators` and `openSnapshots` (which the
 * facade tracks). Every object is a copy: later changes do not show through.
 */
export function storeStats(
  p: StoreParts,
  openIterators: number,
  openSnapshots: number,
): StoreStats {
  const { mem, imms, view } = p.memtables;
  const compaction = p.compactions.stats;
  const flush = p.flushes.counters;
  return {
    lastSequence: p.commits.sequence,
    memtableBytes: mem.approximateBytes,
    memtableEntries: mem.count,
    immutableMemtables: imms.length,
    logNumber: p.memtables.logNumber,
    commit: { ...p.commits.stats },
    ...levelSizes(view.version),
    ...flush,
    ...p.stalls.counters,
    stallState: p.stalls.state,
    stallCause: p.stalls.cause,
    openIterators,
    openSnapshots,
    blockCache: p.blockCache.stats(),
    bloomFilter: p.tables.filterStats(),
    backgroundError: p.background.error?.message,
    compaction: { ...compaction, perLevel: compaction.perLevel.map((l) => ({ ...l })) },
    writeAmplification:
      flush.flushBytes === 0 ? 0 : (flush.flushBytes + compaction.bytesWritten) / flush.flushBytes,
    pendingCompactionBytes: pendingCompactionBytes(view.version, p.options),
  };
}

/** Table files and their bytes, per level of `version`. */
function levelSizes(version: Version): { levelFiles: number[]; levelBytes: number[] } {
  const levelFiles: number[] = [];
  const levelBytes: number[] = [];
  for (let l = 0; l < version.numLevels; l++) {
    levelFiles.push(version.numFiles(l));
    levelBytes.push(version.levelBytes(l));
  }
  return { levelFiles, levelBytes };
}

/** Bytes above target per level (level 0: all of it once at the trigger), summed. */
function pendingCompactionBytes(version: Version, opts: ResolvedOptions): number {
  let pending = 0;
  if (version.numFiles(0) >= opts.compaction.l0CompactionTrigger) pending += version.levelBytes(0);
  for (let level = 1; level < version.numLevels - 1; level++) {
    const excess = version.levelBytes(level) - maxBytesForLevel(level, opts.compaction);
    if (excess > 0) pending += excess;
  }
  return pending;
}
