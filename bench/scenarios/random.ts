/**
 * Scenarios on the `random` fixture (n keys loaded in random order, store reopened and
 * settled; see ./fixtures.ts). Selected together they share one child per store and run,
 * in this order:
 *
 * - `readrandom`: n gets of existing keys in a seeded random order, each awaited.
 * - `mixed_50_50`: n operations, one at a time, each awaited: even-numbered ones get,
 *   odd-numbered ones put (unsynced), each on a key drawn from a seeded generator over
 *   0..n-1 (the same sequence for every store); every get must find its key.
 * - `overwrite`: every one of the n keys rewritten once with a new value, in a seeded
 *   random order, in unsynced batches of FILL_BATCH; latency columns per batch.
 *
 * The write phases end (untimed) with `settleAndMeasure`: the store is left to settle, then
 * the bytes written, the data directory's size and KV Engine's table write amplification
 * are measured. readrandom's amplification columns are the fixture's (the fill's).
 */
import { fmtInt } from "../lib/report.js";
import { nowNs, summarize } from "../lib/stats.js";
import { KEY_BYTES, keyAt, keyTable, rng, shuffledIndices, valueSource } from "../lib/workload.js";
import { ROCKSDB } from "../stores/index.js";
import {
  cacheCounters,
  cacheDelta,
  settleAndMeasure,
  timeGets,
  verifyTableSample,
  writeMeter,
} from "./common.js";
import { AMPLIFICATION_NOTE, writeHeavyN } from "./fill.js";
import { FILL_BATCH, randomFixture, TABLE_CACHE_BYTES } from "./fixtures.js";
import type { StoreScenario } from "./scenario.js";

const MiB = 1024 * 1024;

/** The data set of the `random` fixture, for the report's size lines. */
export const randomLine = (n: number, valueSize: number): string =>
  `${fmtInt(n)} keys (16 bytes, ${valueSize}-byte values) written in random order in ` +
  `unsynced batches of ${fmtInt(FILL_BATCH)}, store reopened and left until its ` +
  `compactions were idle (at most 60 s; block cache ${TABLE_CACHE_BYTES / MiB} MiB for every store)`;

export const readrandom: StoreScenario = {
  kind: "store",
  name: "readrandom",
  title: "random gets of existing keys, one at a time, after a random-order load",
  sync: false,
  unit: "gets",
  fixture: randomFixture,
  extraPeers: [ROCKSDB],
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then ${fmtInt(n)} gets of them in random order, each ` +
    `awaited. Amplification columns: those of the load. ${AMPLIFICATION_NOTE}`,
  async run(store, { n, valueSize, seed }) {
    const table = keyTable(0, n);
    const before = cacheCounters(store);
    const row = await timeGets(store, table, shuffledIndices(n, seed + 1), "hit");
    const extra = cacheDelta(store, before);
    await verifyTableSample(store, table, n, valueSource(valueSize, seed));
    return { rows: [row], extra };
  },
};

export const mixed5050: StoreScenario = {
  kind: "store",
  name: "mixed_50_50",
  title: "50% gets, 50% unsynced puts, one at a time, on a random-order load",
  sync: false,
  fixture: randomFixture,
  extraPeers: [ROCKSDB],
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then ${fmtInt(n)} operations, each awaited, alternating ` +
    "get and unsynced put, on keys drawn by a seeded generator (the same for every store). " +
    `${AMPLIFICATION_NOTE}`,
  async run(store, { dir, n, valueSize, seed }) {
    const table = keyTable(0, n);
    const random = rng(seed + 6);
    const keys = Uint32Array.from({ length: n }, () => Math.floor(random() * n));
    const value = valueSource(valueSize, seed + 6);
    const latencies = new Float64Array(n);
    const opts = { sync: false };
    let missing = 0;
    const meter = writeMeter(store);
    const start = nowNs();
    let prev = start;
    for (let i = 0; i < n; i++) {
      const key = keyAt(table, keys[i]!);
      if ((i & 1) === 0) {
        if ((await store.get(key)) === undefined) missing++;
      } else {
        await store.put(key, value(i), opts);
      }
      const t = nowNs();
      latencies[i] = t - prev;
      prev = t;
    }
    const seconds = (prev - start) / 1e9;
    if (missing > 0) throw new Error(`mixed_50_50: ${missing} gets found no value`);
    const puts = Math.floor(n / 2);
    const extra = await settleAndMeasure(
      store,
      dir,
      meter,
      puts * (KEY_BYTES + valueSize),
      n * (KEY_BYTES + valueSize),
    );
    return {
      rows: [{ label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) }],
      extra,
    };
  },
};

export const overwrite: StoreScenario = {
  kind: "store",
  name: "overwrite",
  title: `every key rewritten once, random order, in batches of ${fmtInt(FILL_BATCH)}, unsynced`,
  sync: false,
  fixture: randomFixture,
  extraPeers: [ROCKSDB],
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then each of the ${fmtInt(n)} keys rewritten once with a ` +
    `new value, in random order, in unsynced batches of ${fmtInt(FILL_BATCH)}, each ` +
    `awaited; latency columns per batch. ${AMPLIFICATION_NOTE}`,
  async run(store, { dir, n, valueSize, seed }) {
    const table = keyTable(0, n);
    const order = shuffledIndices(n, seed + 5);
    const fresh = valueSource(valueSize, seed + 5);
    const batches = Math.ceil(n / FILL_BATCH);
    const latencies = new Float64Array(batches);
    const opts = { sync: false };
    const meter = writeMeter(store);
    const start = nowNs();
    for (let b = 0; b < batches; b++) {
      const end = Math.min(n, (b + 1) * FILL_BATCH);
      const keys: Uint8Array[] = [];
      const values: Uint8Array[] = [];
      for (let j = b * FILL_BATCH; j < end; j++) {
        const i = order[j]!;
        keys.push(keyAt(table, i));
        values.push(fresh(i));
      }
      const t0 = nowNs();
      await store.putBatch(keys, values, opts);
      latencies[b] = nowNs() - t0;
    }
    const seconds = (nowNs() - start) / 1e9;
    const bytes = n * (KEY_BYTES + valueSize);
    const extra = await settleAndMeasure(store, dir, meter, bytes, bytes);
    await verifyTableSample(store, table, n, fresh);
    return {
      rows: [{ label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) }],
      extra,
    };
  },
};
