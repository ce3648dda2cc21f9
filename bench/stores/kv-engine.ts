/**
 * KV Engine, through its public embedded API: `get` (a promise) and `getSync` (the same
 * read without one, row `getSync`), `db.scan` for ranges, WriteBatch for batches.
 */
import { type KvStore, type OpenOptions, open } from "../../src/index.js";
import type { BenchStore, Row, StoreAdapter, StoreOpenOptions } from "./store.js";

/** KV Engine's open options for the harness's store options (absent fields: defaults). */
export function kvOpenOptions(options: StoreOpenOptions): OpenOptions {
  const o: OpenOptions = { sync: options.sync };
  if (options.writeBufferSize !== undefined) o.writeBufferSize = options.writeBufferSize;
  if (options.blockCacheSize !== undefined) o.blockCacheSize = options.blockCacheSize;
  return o;
}

/** Polling interval of `waitIdle`. */
const IDLE_POLL_MS = 50;

/** A BenchStore over KV Engine opened in `dir` with `options` (shared by the variants). */
export async function openKvBenchStore(dir: string, options: OpenOptions): Promise<BenchStore> {
  let db: KvStore = await open(dir, options);
  // Table bytes written by the instances closed by reopenFromTables, so that the counters
  // (and the write amplification) cover the whole run, not just the current instance.
  let closedFlushBytes = 0;
  let closedCompactionBytes = 0;
  return {
    put: (key, value, opts) => db.put(key, value, { sync: opts.sync }),
    get: (key) => db.get(key),
    getSync: (key) => db.getSync(key),
    putBatch(keys, values, opts) {
      const batch = db.batch();
      for (let i = 0; i < keys.length; i++) batch.put(keys[i]!, values[i]!);
      return db.write(batch, { sync: opts.sync });
    },
    deleteBatch(keys, opts) {
      const batch = db.batch();
      for (const key of keys) batch.delete(key);
      return db.write(batch, { sync: opts.sync });
    },
    scan: (start, limit): Promise<Row[]> => db.scan(start, undefined, limit),
    async reopenFromTables() {
      await db.flush();
      await db.close();
      const last = db.stats();
      closedFlushBytes += last.flushBytes;
      closedCompactionBytes += last.compaction.bytesWritten;
      db = await open(dir, options);
    },
    levelFiles: () => db.stats().levelFiles,
    async waitIdle(maxMs) {
      const until = Date.now() + maxMs;
      for (;;) {
        const s = db.stats();
        if (!s.compaction.running && s.pendingCompactionBytes === 0 && s.immutableMemtables === 0) {
          return true;
        }
        if (Date.now() >= until) return false;
        await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
      }
    },
    stats() {
      const s = db.stats();
      const { commit, blockCache, flushBytes, compaction, levelFiles, levelBytes } = s;
      const levels: Record<string, number> = {};
      levelFiles.forEach((files, level) => {
        if (files > 0) {
          levels[`level${level}Files`] = files;
          levels[`level${level}Bytes`] = levelBytes[level] ?? 0;
        }
      });
      return {
        ...levels,
        compactions: compaction.compactions,
        trivialMoves: compaction.trivialMoves,
        writeStalls: s.writeStalls,
        writeSlowdowns: s.writeSlowdowns,
        stallMillis: s.stallMillis,
        flushBytes: closedFlushBytes + flushBytes,
        compactionBytesWritten: closedCompactionBytes + compaction.bytesWritten,
        batches: commit.batches,
        groups: commit.groups,
        syncs: commit.syncs,
        maxGroupSize: commit.maxGroupSize,
        cacheHits: blockCache.hits,
        cacheMisses: blockCache.misses,
      };
    },
    close: () => db.close(),
  };
}

export const adapter: StoreAdapter = {
  open: (dir, options) => openKvBenchStore(dir, kvOpenOptions(options)),
};
