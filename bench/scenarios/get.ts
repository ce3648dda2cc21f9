/**
 * Point reads, one at a time: `get_memtable` (every key in the memtable), `get_sstable`
 * (every key in table files, store reopened) and `get_miss` (keys never written, past the
 * largest key, on the `get_sstable` data set). The gets of a run visit n keys in a seeded
 * random order, each once; every store sees the same order.
 *
 * A store with a synchronous get (KV Engine's and classic-level's `getSync`, lmdb's `get`)
 * is measured twice in the same
 * run: first its promise `get`, then `getSync` (row `<store> (getSync)`) over another
 * random order of the same keys. The second pass finds the caches a little warmer; that
 * favours the sync row, not KV Engine.
 */
import { fmtInt } from "../lib/format.js";
import type { Measurement } from "../lib/types.js";
import { keyTable, shuffledIndices, valueSource } from "../lib/workload.js";
import { KV_CACHE128, LMDB } from "../stores/index.js";
import type { BenchStore } from "../stores/store.js";
import {
  cacheCounters,
  cacheDelta,
  type Expect,
  timeGets,
  timeGetsSync,
  verifyTableSample,
} from "./common.js";
import {
  FILL_BATCH,
  MEMTABLE_BYTES,
  memtableFixture,
  TABLE_CACHE_BYTES,
  tablesFixture,
} from "./fixtures.js";
import type { ScenarioContext, ScenarioOutput, StoreScenario } from "./scenario.js";

/** Peers of the `tables` fixture's scenarios beside the default ones. */
export const TABLES_PEERS: readonly string[] = [KV_CACHE128, LMDB];
/** Peers of the `memtable` fixture's scenarios beside the default ones. */
export const MEMTABLE_PEERS: readonly string[] = [LMDB];

/** Variant name of the synchronous get's row. */
export const GET_SYNC = "getSync";

/** Times gets of `keyTable(first, n)` in two seeded random orders (promise get, getSync). */
async function measureGets(
  store: BenchStore,
  { n, valueSize, seed }: ScenarioContext,
  first: number,
  expect: Expect,
): Promise<ScenarioOutput> {
  const table = keyTable(first, n);
  const before = cacheCounters(store);
  const rows: Measurement[] = [await timeGets(store, table, shuffledIndices(n, seed + 1), expect)];
  const extra = cacheDelta(store, before);
  if (store.getSync !== undefined) {
    const getSync = store.getSync;
    rows.push(timeGetsSync(getSync, table, shuffledIndices(n, seed + 2), expect, GET_SYNC));
  }
  if (expect === "hit") await verifyTableSample(store, table, n, valueSource(valueSize, seed));
  return { rows, extra };
}

const MiB = 1024 * 1024;

export const getMemtable: StoreScenario = {
  kind: "store",
  name: "get_memtable",
  title: "random gets, one at a time, every key in the memtable",
  sync: false,
  unit: "gets",
  fixture: memtableFixture,
  extraPeers: MEMTABLE_PEERS,
  defaultN: (quick) => (quick ? 20_000 : 100_000),
  sizeLine: (n, valueSize) =>
    `${fmtInt(n)} keys (16 bytes, ${valueSize}-byte values) written in random order in ` +
    `unsynced batches of ${fmtInt(FILL_BATCH)}, all held in the memtable ` +
    `(writeBufferSize ${MEMTABLE_BYTES / MiB} MiB for every store; no table file is written); ` +
    `then ${fmtInt(n)} gets of them in random order, each awaited (getSync: called in a loop).`,
  run: (store, ctx) => measureGets(store, ctx, 0, "hit"),
};

/** The data set of the `tables` fixture, for the report's size lines. */
export const tablesLine = (n: number, valueSize: number): string =>
  `${fmtInt(n)} keys (16 bytes, ${valueSize}-byte values) written in ascending order in ` +
  `unsynced batches of ${fmtInt(FILL_BATCH)}, moved to table files, store reopened ` +
  `(block cache ${TABLE_CACHE_BYTES / MiB} MiB for every store)`;

export const getSstable: StoreScenario = {
  kind: "store",
  name: "get_sstable",
  title: "random gets of existing keys, one at a time, from table files",
  sync: false,
  unit: "gets",
  fixture: tablesFixture,
  extraPeers: TABLES_PEERS,
  defaultN: (quick) => (quick ? 100_000 : 400_000),
  sizeLine: (n, valueSize) =>
    `${tablesLine(n, valueSize)}; then ${fmtInt(n)} gets of them in random order, each ` +
    "awaited (getSync: called in a loop).",
  run: (store, ctx) => measureGets(store, ctx, 0, "hit"),
};

export const getMiss: StoreScenario = {
  kind: "store",
  name: "get_miss",
  title: "gets of absent keys past the largest key, one at a time",
  sync: false,
  unit: "gets",
  fixture: tablesFixture,
  extraPeers: TABLES_PEERS,
  defaultN: getSstable.defaultN,
  sizeLine: (n, valueSize) =>
    `The get_sstable data set (${tablesLine(n, valueSize)}); ${fmtInt(n)} gets of keys ` +
    `never written, \`key_%012d\` of ${fmtInt(n)}..${fmtInt(2 * n - 1)} in random order: ` +
    "they share the `key_` prefix and leading zeros with the written keys but sort after " +
    "every table's largest key (so a store prunes them by key range, not by Bloom filter).",
  run: (store, ctx) => measureGets(store, ctx, ctx.n, "miss"),
};
