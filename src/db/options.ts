import { type ResolvedCompactionOptions, resolveCompactionOptions } from "../compaction/options.js";
import { KvError } from "../errors.js";
import type { FileSystem } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import type { WalRecoveryMode } from "../wal/log-reader.js";
import type { StoreEventListener } from "./events.js";

/**
 * Default `walPreallocateBytes`: 1 MiB. A log holds one memtable's writes (about
 * writeBufferSize, 4 MiB by default), so the log is extended about every 512 KiB of
 * records (a few times per log), and at most 1 MiB of zeros per live log is left unused
 * when it is rotated.
 */
export const WAL_PREALLOCATE_BYTES = 1 << 20;

/**
 * Default `walBytesPerSync`: 1 MiB. A log of one 4 MiB memtable gets a few background
 * syncs, and the sync a memtable switch waits for covers at most about this much.
 */
export const WAL_BYTES_PER_SYNC = 1 << 20;
/** The default nice value of the flush and compaction thread (compactionNice). */
export const COMPACTION_NICE = 10;

/** Options of `open`. Every field is optional; defaults are in `resolveOptions`. */
export interface OpenOptions {
  /** File system to use. Default: the real one (node:fs). Tests pass in-memory ones. */
  fs?: FileSystem;
  /** Create the directory when it does not exist. Default true. */
  createIfMissing?: boolean;
  /** Fail with INVALID_ARGUMENT when the directory already holds a store. Default false. */
  errorIfExists?: boolean;
  /**
   * Default durability of writes. true (default): a write's promise resolves after the
   * log is fdatasync'ed (survives power loss). false: it resolves after the log append
   * reached the operating system (survives a process crash, not a power loss).
   */
  sync?: boolean;
  /** How damage found in the write-ahead log at open is handled. Default tolerateTornTail. */
  walRecoveryMode?: WalRecoveryMode;
  /**
   * Bytes of zeros written ahead of the log's end so that durable appends overwrite
   * allocated blocks (cheaper fdatasync; docs/design.md, "Log preallocation"), from the
   * log's first durable sync on (a log of unsynced writes only gets none). Default 1 MiB
   * (WAL_PREALLOCATE_BYTES); 0 turns it off.
   */
  walPreallocateBytes?: number;
  /**
   * Once this many bytes of the write-ahead log are written and not yet synced, an
   * fdatasync of it starts in the background, which no writer waits for (RocksDB's
   * wal_bytes_per_sync): the log reaches the disk as it grows, and the sync a memtable
   * switch must wait for (docs/design.md, "Flush") has little left to write. It changes
   * no promise: an unsynced write is still durable only after a later sync. Default 1 MiB
   * (WAL_BYTES_PER_SYNC); 0 turns it off.
   */
  walBytesPerSync?: number;
  /**
   * Memtable size (bytes, approximate, including per-entry overhead) at which it becomes
   * immutable and is flushed to a level-0 table. Default 4 MiB.
   */
  writeBufferSize?: number;
  /**
   * Memtables that may exist at once: the active one plus those full and waiting for (or
   * in) their flush (RocksDB's max_write_buffer_number). Writers wait only when the active
   * memtable fills while this many are already held. Default 3: one flushing, one full
   * and waiting, one filling. LevelDB (and RocksDB by default) hold 2; a third absorbs
   * bursts of writes faster than a flush, such as the first flushes (docs/design.md,
   * "Flush"). Each more costs up to writeBufferSize of memory. At least 2.
   */
  maxWriteBufferNumber?: number;
  /** Target size of an SSTable data block before compression. Default 4096. */
  blockSize?: number;
  /** Bloom filter bits per key in each table (0: no filter). Default 10 (~1% false positives). */
  bloomBitsPerKey?: number;
  /** Block compression: "none" (default), "lz4" or "deflate". See docs/format/sstable.md. */
  compression?: "none" | "lz4" | "deflate";
  /** Bytes of decoded data blocks kept in the shared block cache. Default 32 MiB. */
  blockCacheSize?: number;
  /** Table files kept open (LRU beyond this). Default 1000. */
  maxOpenFiles?: number;
  /** Verify the checksum of every block read from a table. Default true. */
  verifyChecksums?: boolean;
  /** Number of levels of the tree. Default 7. */
  numLevels?: number;
  /**
   * When a durable write is alone (no other write queued behind it), fdatasync the log on
   * the event-loop thread instead of the thread pool: a lone durable put skips the thread
   * pool's round trip, at the price of blocking the event loop for one fdatasync, during
   * which reads and timers wait (figures: docs/design.md, "Write path"). Concurrent writers
   * always sync off-thread as one group. Default true; set false for servers where read
   * latency matters more.
   */
  blockingLoneSync?: boolean;
  /**
   * Where flushes and compactions run: "worker" (a worker thread) or "inline" (on the
   * event loop, yielding every 2000 entries). Default: "worker" on the real file system,
   * "inline" on any other. "worker" with another file system (in-memory, fault-injecting)
   * proxies the worker's file operations to this thread in lockstep (see
   * src/compaction/worker-pool.ts): the same operations, deterministically numbered, but
   * no concurrency; for tests.
   */
  compactionMode?: "worker" | "inline";
  /**
   * Nice value (0-19) of the worker thread of flushes and compactions, on Linux: above the
   * event loop's, so that background work yields the CPU to requests when both want it
   * (RocksDB's LowerThreadPoolCPUPriority). 0: left at the process's. Default 10.
   */
  compactionNice?: number;
  /** Level-0 files that trigger a compaction. Default 4. */
  l0CompactionTrigger?: number;
  /** Level-0 files at which each write group is delayed by 1 ms. Default 20. */
  l0SlowdownTrigger?: number;
  /** Level-0 files at which writes wait for compaction. Default 36. */
  l0StopTrigger?: number;
  /** Size ratio between neighbouring levels. Default 10. */
  levelSizeMultiplier?: number;
  /** Target size of level 1 in bytes. Default 10 MiB (reason in src/compaction/options.ts). */
  maxBytesForLevelBase?: number;
  /** Target size of a table written by compaction. Default 2 MiB. */
  targetFileSize?: number;
  /**
   * Called with each store event: open summary, flush, compaction, stall state change,
   * background error (see src/db/events.ts). Default: none.
   */
  onEvent?: StoreEventListener;
}

export interface ResolvedOptions {
  fs: FileSystem;
  createIfMissing: boolean;
  errorIfExists: boolean;
  sync: boolean;
  walRecoveryMode: WalRecoveryMode;
  walPreallocateBytes: number;
  walBytesPerSync: number;
  writeBufferSize: number;
  maxWriteBufferNumber: number;
  blockSize: number;
  bloomBitsPerKey: number;
  compression: "none" | "lz4" | "deflate";
  blockCacheSize: number;
  maxOpenFiles: number;
  verifyChecksums: boolean;
  numLevels: number;
  blockingLoneSync: boolean;
  compactionMode: "worker" | "inline";
  compactionNice: number;
  compaction: ResolvedCompactionOptions;
  onEvent: StoreEventListener | undefined;
}

/**
 * Every option `open` takes. `resolveOptions` refuses any other key (a misspelt option
 * would otherwise be ignored without a word).
 */
export const OPEN_OPTION_NAMES = Object.freeze([
  "fs",
  "createIfMissing",
  "errorIfExists",
  "sync",
  "walRecoveryMode",
  "walPreallocateBytes",
  "walBytesPerSync",
  "writeBufferSize",
  "maxWriteBufferNumber",
  "blockSize",
  "bloomBitsPerKey",
  "compression",
  "blockCacheSize",
  "maxOpenFiles",
  "verifyChecksums",
  "numLevels",
  "blockingLoneSync",
  "compactionMode",
  "compactionNice",
  "l0CompactionTrigger",
  "l0SlowdownTrigger",
  "l0StopTrigger",
  "levelSizeMultiplier",
  "maxBytesForLevelBase",
  "targetFileSize",
  "onEvent",
] as const satisfies readonly (keyof OpenOptions)[]);

// Fails to compile when OpenOptions gains an option missing from OPEN_OPTION_NAMES.
type MissingOpenOption = Exclude<keyof OpenOptions, (typeof OPEN_OPTION_NAMES)[number]>;
const _allOpenOptionsListed: MissingOpenOption extends never ? true : never = true;
void _allOpenOptionsListed;

const KNOWN_OPTIONS: ReadonlySet<string> = new Set(OPEN_OPTION_NAMES);

/** Throws INVALID_ARGUMENT naming the first key of `options` that is no open option. */
function checkOptionNames(options: object): void {
  for (const name of Object.keys(options)) {
    if (KNOWN_OPTIONS.has(name)) continue;
    const lower = name.toLowerCase();
    const near = OPEN_OPTION_NAMES.find((known) => editDistance(known.toLowerCase(), lower) <= 2);
    throw new KvError(
      "INVALID_ARGUMENT",
      `unknown open option "${name}"${near === undefined ? "" : ` (did you mean "${near}"?)`}`,
    );
  }
}

/** Levenshtein distance of two short strings. */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost));
    }
    prev = row;
  }
  return prev[b.length]!;
}

const RECOVERY_MODES: readonly WalRecoveryMode[] = [
  "tolerateTornTail",
  "absoluteConsistency",
  "skipCorrupted",
  "pointInTime",
];

export function resolveOptions(options: OpenOptions = {}): ResolvedOptions {
  if (typeof options !== "object" || options === null) {
    throw new KvError("INVALID_ARGUMENT", "options must be an object");
  }
  checkOptionNames(options);
  const mode = options.walRecoveryMode ?? "tolerateTornTail";
  if (!RECOVERY_MODES.includes(mode)) {
    throw new KvError(
      "INVALID_ARGUMENT",
      `walRecoveryMode must be one of ${RECOVERY_MODES.join(", ")}, got ${String(mode)}`,
    );
  }
  return {
    fs: options.fs ?? new RealFileSystem(),
    createIfMissing: bool(options.createIfMissing, true, "createIfMissing"),
    errorIfExists: bool(options.errorIfExists, false, "errorIfExists"),
    sync: bool(options.sync, true, "sync"),
    walRecoveryMode: mode,
    walPreallocateBytes: size(
      options.walPreallocateBytes,
      WAL_PREALLOCATE_BYTES,
      "walPreallocateBytes",
      0,
    ),
    walBytesPerSync: size(options.walBytesPerSync, WAL_BYTES_PER_SYNC, "walBytesPerSync", 0),
    writeBufferSize: size(options.writeBufferSize, 4 << 20, "writeBufferSize", 1024),
    maxWriteBufferNumber: size(options.maxWriteBufferNumber, 3, "maxWriteBufferNumber", 2),
    blockSize: size(options.blockSize, 4096, "blockSize", 64),
    bloomBitsPerKey: size(options.bloomBitsPerKey, 10, "bloomBitsPerKey", 0),
    compression: compression(options.compression),
    blockCacheSize: size(options.blockCacheSize, 32 << 20, "blockCacheSize", 0),
    maxOpenFiles: size(options.maxOpenFiles, 1000, "maxOpenFiles", 10),
    verifyChecksums: bool(options.verifyChecksums, true, "verifyChecksums"),
    numLevels: size(options.numLevels, 7, "numLevels", 2),
    blockingLoneSync: bool(options.blockingLoneSync, true, "blockingLoneSync"),
    compactionMode: compactionMode(options.compactionMode, options.fs),
    compactionNice: niceValue(options.compactionNice),
    compaction: resolveCompactionOptions({
      numLevels: options.numLevels,
      l0CompactionTrigger: options.l0CompactionTrigger,
      l0SlowdownTrigger: options.l0SlowdownTrigger,
      l0StopTrigger: options.l0StopTrigger,
      levelSizeMultiplier: options.levelSizeMultiplier,
      maxBytesForLevelBase: options.maxBytesForLevelBase,
      targetFileSize: options.targetFileSize,
    }),
    onEvent: listener(options.onEvent),
  };
}

function listener(v: unknown): StoreEventListener | undefined {
  if (v === undefined || typeof v === "function") return v as StoreEventListener | undefined;
  throw new KvError("INVALID_ARGUMENT", `onEvent must be a function, got ${typeof v}`);
}

function niceValue(v: number | undefined): number {
  if (v === undefined) return COMPACTION_NICE;
  if (!Number.isSafeInteger(v) || v < 0 || v > 19) {
    throw new KvError(
      "INVALID_ARGUMENT",
      `compactionNice must be an integer from 0 to 19, got ${String(v)}`,
    );
  }
  return v;
}

function compactionMode(v: unknown, fs: FileSystem | undefined): "worker" | "inline" {
  if (v === undefined)
    return fs === undefined || fs instanceof RealFileSystem ? "worker" : "inline";
  if (v === "worker" || v === "inline") return v;
  throw new KvError(
    "INVALID_ARGUMENT",
    `compactionMode must be "worker" or "inline", got ${String(v)}`,
  );
}

function compression(v: unknown): "none" | "lz4" | "deflate" {
  if (v === undefined) return "none";
  if (v === "none" || v === "lz4" || v === "deflate") return v;
  throw new KvError(
    "INVALID_ARGUMENT",
    `compression must be "none", "lz4" or "deflate", got ${String(v)}`,
  );
}

function bool(v: boolean | undefined, def: boolean, name: string): boolean {
  if (v === undefined) return def;
  if (typeof v !== "boolean") throw new KvError("INVALID_ARGUMENT", `${name} must be a boolean`);
  return v;
}

function size(v: number | undefined, def: number, name: string, min: number): number {
  if (v === undefined) return def;
  if (!Number.isSafeInteger(v) || v < min) {
    throw new KvError("INVALID_ARGUMENT", `${name} must be an integer >= ${min}`);
  }
  return v;
}
