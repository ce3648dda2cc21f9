/**
 * Block compression: the same load and reads against KV Engine with `compression` none,
 * lz4 and deflate (bench/stores/kv-engine-compression.ts: a 4 MiB block cache, smaller
 * than the data, so that most reads decompress a block). The rule these figures decide
 * (lz4 as the default or not) is in docs/design.md, "Block compression".
 *
 * - `compression_text`: JSON-like text values (`textValueSource`), which compress.
 * - `compression_random`: random bytes (`valueSource`), which do not.
 *
 * Each run: n keys in random order in unsynced batches of FILL_BATCH, then the memtable
 * flushed, the store reopened and its compactions awaited (`waitIdle`): the main row's
 * time covers all of that, since compression happens in flushes and compactions. Then
 * (untimed) the data directory's size (the amplification table), then n / 2 random gets
 * (row `get`) and SCANS / 2 scans of SCAN_ROWS rows from random starts (row `scan`, in
 * rows/s).
 */
import { fmtInt } from "../lib/format.js";
import { nowNs } from "../lib/stats.js";
import {
  KEY_BYTES,
  keyTable,
  shuffledIndices,
  textValueSource,
  valueSource,
} from "../lib/workload.js";
import {
  KV_COMPRESSION_DEFLATE,
  KV_COMPRESSION_LZ4,
  KV_COMPRESSION_NONE,
} from "../stores/index.js";
import {
  SETTLE_MAX_MS,
  settleAndMeasure,
  timeGets,
  timeWrites,
  verifyTableSample,
  writeMeter,
} from "./common.js";
import { FILL_BATCH } from "./fixtures.js";
import { SCAN_ROWS, SCANS, timeScans } from "./scan.js";
import type { StoreScenario } from "./scenario.js";

/** The stores, none first: the report's ratios are against it. */
export const COMPRESSION_STORES: readonly string[] = [
  KV_COMPRESSION_NONE,
  KV_COMPRESSION_LZ4,
  KV_COMPRESSION_DEFLATE,
];

type Values = "text" | "random";

function compressionScenario(values: Values): StoreScenario {
  const what = values === "text" ? "JSON-like text values" : "random (incompressible) values";
  return {
    kind: "store",
    name: `compression_${values}`,
    title: `block compression none, lz4 and deflate: load, gets and scans of ${what}`,
    sync: false,
    stores: COMPRESSION_STORES,
    defaultN: (quick) => (quick ? 50_000 : 200_000),
    sizeLine: (n, valueSize) =>
      `${fmtInt(n)} keys (16 bytes, ${valueSize}-byte ${what}) written in random order in ` +
      `unsynced batches of ${fmtInt(FILL_BATCH)}, then flushed, reopened and compactions ` +
      "awaited: the main row (puts/s) times all of it; block cache 4 MiB for every store. " +
      `Then ${fmtInt(Math.floor(n / 2))} random gets (row get) and ${fmtInt(SCANS / 2)} ` +
      `scans of ${fmtInt(SCAN_ROWS)} rows (row scan, rows/s).`,
    async run(store, { dir, n, valueSize, seed }) {
      const table = keyTable(0, n);
      const value =
        values === "text" ? textValueSource(valueSize, seed) : valueSource(valueSize, seed);
      const meter = writeMeter(store);
      const t0 = nowNs();
      const writes = await timeWrites(store, table, shuffledIndices(n, seed), value, FILL_BATCH, {
        sync: false,
      });
      await store.reopenFromTables();
      const idle = store.waitIdle === undefined ? true : await store.waitIdle(SETTLE_MAX_MS);
      if (!idle) throw new Error(`compactions still running after ${SETTLE_MAX_MS} ms`);
      const seconds = (nowNs() - t0) / 1e9;
      const bytes = n * (KEY_BYTES + valueSize);
      const amp = await settleAndMeasure(store, dir, meter, bytes, bytes);
      const gets = shuffledIndices(n, seed + 1).subarray(0, Math.floor(n / 2));
      const get = await timeGets(store, table, gets, "hit", "get");
      const rows = Math.min(SCAN_ROWS, n);
      const scan = await timeScans(store.scan, table, n, rows, seed + 2, "scan", SCANS / 2);
      await verifyTableSample(store, table, n, value);
      return {
        rows: [{ ...writes, seconds, opsPerSec: n / seconds }, get, scan],
        extra: { ...amp, fillWriteSeconds: writes.seconds },
      };
    },
  };
}

export const compressionText = compressionScenario("text");
export const compressionRandom = compressionScenario("random");
