/** KV Engine, through its public embedded API. */
import { type KvStore, type OpenOptions, open } from "../../src/index.js";
import type { BenchStore, Row, StoreAdapter, StoreOpenOptions } from "./store.js";

/** KV Engine's open options for the harness's store options (absent fields: defaults). */
export function kvOpenOptions(options: StoreOpenOptions): OpenOptions {
  const o: OpenOptions = { sync: options.sync };
  if (options.writeBufferSize !== undefined) o.writeBufferSize = options.writeBufferSize;
  if (options.blockCacheSize !== undefined) o.blockCacheSize = options.blockCacheSize;
  return o;
}

/** A BenchStore over KV Engine opened in `dir` with `options` (shared by the variants). */
export async function openKvBenchStore(dir: string, options: OpenOptions): Promise<BenchStore> {
  let db: KvStore = await open(dir, options);
  return {
    put: (key, value, opts) => db.put(key, value, { sync: opts.sync }),
    get: (key) => db.get(key),
    putBatch(keys, values, opts) {
      const batch = db.batch();
      for (let i = 0; i < keys.length; i++) batch.put(keys[i]!, values[i]!);
      return db.write(batch, { sync: opts.sync });
    },
    scan: (start, limit): Promise<Row[]> => db.scan(start, undefined, limit),
    async reopenFromTables() {
      await db.flush();
      await db.close();
      db = await open(dir, options);
    },
    levelFiles: () => db.stats().levelFiles,
    stats() {
      const { commit, blockCache } = db.stats();
      return {
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
