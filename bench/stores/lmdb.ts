/**
 * lmdb (lmdb-js 3: LMDB, a copy-on-write B+tree in one memory-mapped file; N-API, prebuilt
 * binaries in @lmdb/lmdb-<platform>, so it loads when npm blocks install scripts), through
 * its idiomatic API, keys and values as raw bytes (`keyEncoding`/`encoding: "binary"`).
 *
 * - Writes: `put`/`remove` return promises; lmdb-js queues them to its write thread and
 *   commits everything issued in one event turn as one transaction. A batch is thus its
 *   puts issued in one turn (one transaction, atomic), awaited together.
 * - Durability is per store, not per write: `sync: true` opens with `overlappingSync:
 *   false`, so a put resolves once its commit is fdatasync'ed (the default, overlapping,
 *   resolves at commit and syncs later); `sync: false` opens with `noSync` (the OS writes
 *   the map back when it likes). A call that asks for the other durability throws.
 * - Reads: lmdb's `get` is synchronous (a lookup in the map, no thread hop). The main row
 *   `get` is that call behind a resolved promise (what code written against an async
 *   store pays), the row `getSync` the bare call. Range reads: `getRange({ start, limit })`,
 *   iterated synchronously into an array.
 * - There are no tables, levels or compactions: `reopenFromTables` closes and reopens
 *   (reads then come from the map of a fresh instance), `waitIdle` awaits `flushed`.
 */
import { join } from "node:path";
import { open, type RootDatabase } from "lmdb";
import type { BenchStore, PutOptions, Row, StoreAdapter, StoreOpenOptions } from "./store.js";

type Db = RootDatabase<Uint8Array, Uint8Array>;

function create(dir: string, options: StoreOpenOptions): Db {
  return open<Uint8Array, Uint8Array>({
    // A file name with an extension: lmdb-js keeps `data.mdb` and `data.mdb-lock` in dir.
    path: join(dir, "data.mdb"),
    keyEncoding: "binary",
    encoding: "binary",
    ...(options.sync ? { overlappingSync: false } : { noSync: true }),
  });
}

export const adapter: StoreAdapter = {
  async open(dir, options): Promise<BenchStore> {
    let db = create(dir, options);
    const durability = (opts: PutOptions) => {
      if (opts.sync !== options.sync) {
        throw new Error(
          `lmdb store opened with sync ${options.sync}; a call asked for ${opts.sync}`,
        );
      }
    };
    /** Issues `write(i)` for every i in one event turn (one transaction) and awaits them. */
    const inOneTurn = async (count: number, write: (i: number) => Promise<boolean>) => {
      const pending: Promise<boolean>[] = [];
      for (let i = 0; i < count; i++) pending.push(write(i));
      await Promise.all(pending);
    };
    return {
      async put(key, value, opts) {
        durability(opts);
        await db.put(key, value);
      },
      get: (key) => Promise.resolve(db.get(key)),
      getSync: (key) => db.get(key),
      putBatch(keys, values, opts) {
        durability(opts);
        return inOneTurn(keys.length, (i) => db.put(keys[i]!, values[i]!));
      },
      deleteBatch(keys, opts) {
        durability(opts);
        return inOneTurn(keys.length, (i) => db.remove(keys[i]!));
      },
      scan: async (start, limit): Promise<Row[]> =>
        Array.from(db.getRange({ start, limit }), ({ key, value }): Row => [key, value]),
      async reopenFromTables() {
        await db.close();
        db = create(dir, options);
      },
      async waitIdle() {
        await db.flushed;
        return true;
      },
      close: () => db.close(),
    };
  },
};
