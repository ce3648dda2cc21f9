/**
 * RocksDB through @nxtedition/rocksdb 12 (N-API, prebuilt binaries; an abstract-level
 * store like classic-level), through its promise API, with the binding's default options
 * (memtableMemoryBudget 256 MiB, i.e. 64 MiB write buffers; ZSTD, which the benchmark's
 * incompressible values defeat) except the sizes the harness sets.
 *
 * Durability: the binding's `put` ignores `sync` (it writes a chained batch without
 * options; only `batch.write({ sync })` passes it to RocksDB), so a durable put here is a
 * chained batch of one written with `{ sync: true }`; an unsynced put is the plain `put`.
 * Its `get` rejects for an absent key (code LEVEL_NOT_FOUND); the adapter resolves
 * undefined instead, as the other stores do.
 */
import { RocksLevel } from "@nxtedition/rocksdb";
import type { BenchStore, Row, StoreAdapter, StoreOpenOptions } from "./store.js";

type Db = RocksLevel<Uint8Array, Uint8Array>;

const LEVELS = 7;
/** The binding's get rejects for an absent key (abstract-level 1 style), with this code. */
const NOT_FOUND = "LEVEL_NOT_FOUND";
/** Polling interval of `waitIdle`, and its cap. */
const IDLE_POLL_MS = 50;

function create(dir: string, options: StoreOpenOptions): Db {
  return new RocksLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: "view",
    valueEncoding: "view",
    createIfMissing: true,
    // The binding derives the write buffer from a memory budget: budget / 4 per memtable.
    ...(options.writeBufferSize === undefined
      ? {}
      : { memtableMemoryBudget: 4 * options.writeBufferSize }),
    ...(options.blockCacheSize === undefined ? {} : { cacheSize: options.blockCacheSize }),
  });
}

function intProperty(db: Db, name: string): number {
  return Number(db.getProperty(name));
}

export const adapter: StoreAdapter = {
  async open(dir, options): Promise<BenchStore> {
    let db = create(dir, options);
    await db.open();
    return {
      put(key, value, opts) {
        if (!opts.sync) return db.put(key, value);
        const batch = db.batch();
        batch.put(key, value);
        return batch.write({ sync: true });
      },
      get: (key) =>
        db.get(key).catch((err: unknown) => {
          if ((err as { code?: unknown }).code === NOT_FOUND) return undefined;
          throw err;
        }),
      putBatch(keys, values, opts) {
        const batch = db.batch();
        for (let i = 0; i < keys.length; i++) batch.put(keys[i]!, values[i]!);
        return batch.write({ sync: opts.sync });
      },
      deleteBatch(keys, opts) {
        const batch = db.batch();
        for (const key of keys) batch.del(key);
        return batch.write({ sync: opts.sync });
      },
      scan: (start, limit): Promise<Row[]> => db.iterator({ gte: start, limit }).all(),
      async reopenFromTables() {
        // Close flushes the memtable unless the log is enough to recover it; the reopen
        // replays whatever log is left into a level-0 table.
        await db.close();
        db = create(dir, options);
        await db.open();
      },
      levelFiles() {
        const files: number[] = [];
        for (let level = 0; level < LEVELS; level++) {
          files.push(intProperty(db, `rocksdb.num-files-at-level${level}`));
        }
        return files;
      },
      async waitIdle(maxMs) {
        const until = Date.now() + maxMs;
        while (Date.now() < until) {
          const busy =
            intProperty(db, "rocksdb.num-running-compactions") +
            intProperty(db, "rocksdb.num-running-flushes") +
            intProperty(db, "rocksdb.compaction-pending") +
            intProperty(db, "rocksdb.mem-table-flush-pending");
          if (busy === 0) return true;
          await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
        }
        return false;
      },
      close: () => db.close(),
    };
  },
};
