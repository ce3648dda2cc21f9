/**
 * Random-order loads of an empty store, unsynced (like db_bench fillrandom):
 *
 * - `fillrandom_batch`: n keys in batches of FILL_BATCH puts (one atomic batch each),
 *   each batch awaited before the next; latency columns per batch.
 * - `fillrandom`: n keys, one `put` at a time, each awaited before the next.
 *
 * After the timed loop (untimed): the store is left to settle (`waitIdle`, at most
 * SETTLE_MAX_MS), then the bytes the process wrote, the data directory's size and KV
 * Engine's table write amplification are measured (`settleAndMeasure`), and a sample of
 * keys is read back.
 */
import { fmtInt } from "../lib/report.js";
import { nowNs, summarize } from "../lib/stats.js";
import { KEY_BYTES, keyAt, keyTable, shuffledIndices, valueSource } from "../lib/workload.js";
import { ROCKSDB } from "../stores/index.js";
import { settleAndMeasure, verifyTableSample, writeMeter } from "./common.js";
import { FILL_BATCH } from "./fixtures.js";
import type { StoreScenario } from "./scenario.js";

/** Default n of the write-heavy scenarios (fill, overwrite, readrandom, mixed_50_50). */
export const WRITE_HEAVY_N = 200_000;
export const WRITE_HEAVY_QUICK_N = 50_000;

export const writeHeavyN = (quick: boolean): number =>
  quick ? WRITE_HEAVY_QUICK_N : WRITE_HEAVY_N;

/** The sentence on write and space amplification shared by the write-heavy scenarios. */
export const AMPLIFICATION_NOTE =
  "Written: bytes the child process wrote (/proc/self/io `write_bytes`, all threads, the " +
  "same measure for every store) during the phase and until its compactions were idle " +
  "(untimed wait, at most 60 s), ÷ the keys and values written; data dir: its du after " +
  "that ÷ the live keys and values (n × (16 + value size) bytes).";

export const fillrandomBatch: StoreScenario = {
  kind: "store",
  name: "fillrandom_batch",
  title: `random-order load in batches of ${fmtInt(FILL_BATCH)}, unsynced`,
  sync: false,
  defaultN: writeHeavyN,
  extraPeers: [ROCKSDB],
  sizeLine: (n, valueSize) =>
    `${fmtInt(n)} puts (16-byte keys, ${valueSize}-byte values) in random key order, into an ` +
    `empty store, in unsynced batches of ${fmtInt(FILL_BATCH)}, each awaited; ` +
    `latency columns per batch. ${AMPLIFICATION_NOTE}`,
  async run(store, { dir, n, valueSize, seed }) {
    const table = keyTable(0, n);
    const order = shuffledIndices(n, seed);
    const value = valueSource(valueSize, seed);
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
        values.push(value(i));
      }
      const t0 = nowNs();
      await store.putBatch(keys, values, opts);
      latencies[b] = nowNs() - t0;
    }
    const seconds = (nowNs() - start) / 1e9;
    const bytes = n * (KEY_BYTES + valueSize);
    const extra = await settleAndMeasure(store, dir, meter, bytes, bytes);
    await verifyTableSample(store, table, n, value);
    return {
      rows: [{ label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) }],
      extra,
    };
  },
};

export const fillrandom: StoreScenario = {
  kind: "store",
  name: "fillrandom",
  title: "random-order load, one put at a time, unsynced",
  sync: false,
  defaultN: writeHeavyN,
  extraPeers: [ROCKSDB],
  sizeLine: (n, valueSize) =>
    `${fmtInt(n)} puts (16-byte keys, ${valueSize}-byte values) in random key order, into an ` +
    `empty store, unsynced, each awaited before the next. ${AMPLIFICATION_NOTE}`,
  async run(store, { dir, n, valueSize, seed }) {
    const table = keyTable(0, n);
    const order = shuffledIndices(n, seed);
    const value = valueSource(valueSize, seed);
    const latencies = new Float64Array(n);
    const opts = { sync: false };
    const meter = writeMeter(store);
    const start = nowNs();
    let prev = start;
    for (let j = 0; j < n; j++) {
      const i = order[j]!;
      await store.put(keyAt(table, i), value(i), opts);
      const t = nowNs();
      latencies[j] = t - prev;
      prev = t;
    }
    const seconds = (prev - start) / 1e9;
    const bytes = n * (KEY_BYTES + valueSize);
    const extra = await settleAndMeasure(store, dir, meter, bytes, bytes);
    await verifyTableSample(store, table, n, value);
    return {
      rows: [{ label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) }],
      extra,
    };
  },
};
