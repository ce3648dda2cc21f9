/**
 * Data sets the read scenarios run on. Both write keys `key_%012d` 0..n-1 with
 * `valueSource` values (key i holds value(i)) in unsynced batches of FILL_BATCH puts; the
 * fill is not timed (its duration is reported as `fillSeconds`).
 *
 * - `memtable`: random key order, into a memtable large enough for all of it
 *   (writeBufferSize MEMTABLE_BYTES for every store, so LevelDB serves from its memtable
 *   too); throws if any table file was written.
 * - `random`: random key order (like db_bench fillrandom), default write buffer; then the
 *   store reopened (`reopenFromTables`) and left to settle: the worker waits (untimed, at
 *   most `settleLimitMs`) until the store's compactions are idle (`waitIdle`). Returns the
 *   fill's write and space amplification (`settleAndMeasure`). Block cache
 *   TABLE_CACHE_BYTES for every store.
 * - `tables`: ascending key order (like db_bench fillseq), then everything moved to table
 *   files and the store reopened (`reopenFromTables`). Ascending order keeps the tables
 *   disjoint: KV Engine has no compaction yet, so a random-order fill would leave ~100
 *   overlapping level-0 tables that every get must probe. Block cache TABLE_CACHE_BYTES
 *   for every store (KV Engine's default; LevelDB's default is 8 MiB).
 */

import { nowNs } from "../lib/stats.js";
import { KEY_BYTES, keyTable, shuffledIndices, valueSource } from "../lib/workload.js";
import type { BenchStore } from "../stores/store.js";
import { settleAndMeasure, timeWrites, writeMeter } from "./common.js";
import type { Fixture, ScenarioContext } from "./scenario.js";

export const FILL_BATCH = 1000;
export const MEMTABLE_BYTES = 256 * 1024 * 1024;
export const TABLE_CACHE_BYTES = 32 * 1024 * 1024;

/** Writes keys `order[0..]` (indices into `table`) in batches; returns the seconds taken. */
export async function fill(
  store: BenchStore,
  table: Uint8Array,
  order: Uint32Array,
  value: (i: number) => Uint8Array,
): Promise<number> {
  return (await timeWrites(store, table, order, value, FILL_BATCH, { sync: false })).seconds;
}

function tableCounts(store: BenchStore): Record<string, number> {
  const files = store.levelFiles?.();
  if (files === undefined) {
    const count = store.tableFiles?.();
    return count === undefined ? {} : { tableFiles: count };
  }
  return { tableFiles: files.reduce((a, b) => a + b, 0), level0Files: files[0] ?? 0 };
}

export const memtableFixture: Fixture = {
  name: "memtable",
  storeOptions: { writeBufferSize: MEMTABLE_BYTES },
  async populate(store, { n, valueSize, seed }: ScenarioContext) {
    const table = keyTable(0, n);
    const fillSeconds = await fill(
      store,
      table,
      shuffledIndices(n, seed),
      valueSource(valueSize, seed),
    );
    const counts = tableCounts(store);
    if ((counts["tableFiles"] ?? 0) > 0) {
      throw new Error(
        `the memtable was flushed (${counts["tableFiles"]} table files): raise MEMTABLE_BYTES ` +
          "(a server keeps its own write buffer: lower n)",
      );
    }
    return { fillSeconds, ...counts };
  },
};

export const tablesFixture: Fixture = {
  name: "tables",
  storeOptions: { blockCacheSize: TABLE_CACHE_BYTES },
  async populate(store, { n, valueSize, seed }: ScenarioContext) {
    const table = keyTable(0, n);
    const ascending = new Uint32Array(n);
    for (let i = 0; i < n; i++) ascending[i] = i;
    const fillSeconds = await fill(store, table, ascending, valueSource(valueSize, seed));
    const t0 = nowNs();
    await store.reopenFromTables();
    const reopenSeconds = (nowNs() - t0) / 1e9;
    const counts = tableCounts(store);
    if (counts["tableFiles"] === 0) throw new Error("no table files after reopenFromTables");
    return { fillSeconds, reopenSeconds, ...counts };
  },
};

export const randomFixture: Fixture = {
  name: "random",
  storeOptions: { blockCacheSize: TABLE_CACHE_BYTES },
  async populate(store, { dir, n, valueSize, seed }: ScenarioContext) {
    const table = keyTable(0, n);
    const meter = writeMeter(store);
    const fillSeconds = await fill(
      store,
      table,
      shuffledIndices(n, seed),
      valueSource(valueSize, seed),
    );
    const t0 = nowNs();
    await store.reopenFromTables();
    const reopenSeconds = (nowNs() - t0) / 1e9;
    const bytes = n * (KEY_BYTES + valueSize);
    const amp = await settleAndMeasure(store, dir, meter, bytes, bytes);
    return { fillSeconds, reopenSeconds, ...amp, ...tableCounts(store) };
  },
};
