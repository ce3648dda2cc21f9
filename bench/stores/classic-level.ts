/**
 * classic-level 3 (LevelDB via N-API), through its promise API. Durable puts pass `sync`.
 * Reads: `get` (async, a libuv thread-pool round trip) and `getSync` (the synchronous
 * variant classic-level 3 added), range reads through `iterator({ gte, limit }).all()`
 * (the idiomatic call) and through `nextv` (variant `nextv`).
 */
import { ClassicLevel } from "classic-level";
import type { BenchStore, Row, StoreAdapter, StoreOpenOptions } from "./store.js";

/**
 * Read-ahead of the `nextv` variant: classic-level's native iterator stops filling a
 * nextv() chunk after `highWaterMarkBytes` (default 16 KiB, ~140 rows of 116 bytes), so
 * with the default a 500-row read takes several round trips. 1 MiB lets one call return
 * the whole range (the best case for nextv).
 */
const NEXTV_HIGH_WATER_MARK = 1 << 20;

/**
 * LevelDB reports no pending or running compaction; `waitIdle` takes it as idle once
 * `leveldb.stats` (its per-level compaction table) has not changed for IDLE_STABLE_POLLS
 * polls IDLE_POLL_MS apart.
 */
const IDLE_POLL_MS = 100;
const IDLE_STABLE_POLLS = 10;

type Db = ClassicLevel<Uint8Array, Uint8Array>;

function create(dir: string, options: StoreOpenOptions): Db {
  return new ClassicLevel<Uint8Array, Uint8Array>(dir, {
    keyEncoding: "view",
    valueEncoding: "view",
    createIfMissing: true,
    ...(options.writeBufferSize === undefined ? {} : { writeBufferSize: options.writeBufferSize }),
    ...(options.blockCacheSize === undefined ? {} : { cacheSize: options.blockCacheSize }),
  });
}

export const adapter: StoreAdapter = {
  async open(dir, options): Promise<BenchStore> {
    let db = create(dir, options);
    await db.open();
    // LevelDB has no store-wide sync default: durability is chosen per put (the
    // scenarios pass `options.sync` on every put).
    return {
      put: (key, value, opts) => db.put(key, value, { sync: opts.sync }),
      get: (key) => db.get(key),
      getSync: (key) => db.getSync(key),
      putBatch(keys, values, opts) {
        // The chained form, not db.batch([{ type: "put", ... }]), which validates and
        // encodes an operation object per put in JavaScript (docs/benchmarks/harness-notes.md).
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
      scanVariants: {
        async nextv(start, limit): Promise<Row[]> {
          const it = db.iterator({ gte: start, limit, highWaterMarkBytes: NEXTV_HIGH_WATER_MARK });
          try {
            let rows: Row[] = await it.nextv(limit);
            // nextv may return fewer rows than asked for before the end; read on.
            while (rows.length < limit) {
              const more = await it.nextv(limit - rows.length);
              if (more.length === 0) break;
              rows = rows.concat(more);
            }
            return rows;
          } finally {
            await it.close();
          }
        },
      },
      async reopenFromTables() {
        // Closing writes nothing out, but the reopen converts the log to a level-0 table
        // (LevelDB's recovery), so every entry is then in a table file.
        await db.close();
        db = create(dir, options);
        await db.open();
      },
      levelFiles() {
        const files: number[] = [];
        for (let level = 0; level < 7; level++) {
          files.push(Number(db.getProperty(`leveldb.num-files-at-level${level}`)));
        }
        return files;
      },
      async waitIdle(maxMs) {
        const until = Date.now() + maxMs;
        let last = db.getProperty("leveldb.stats");
        let stable = 0;
        while (Date.now() < until) {
          await new Promise((r) => setTimeout(r, IDLE_POLL_MS));
          const now = db.getProperty("leveldb.stats");
          stable = now === last ? stable + 1 : 0;
          if (stable >= IDLE_STABLE_POLLS) return true;
          last = now;
        }
        return false;
      },
      close: () => db.close(),
    };
  },
};
