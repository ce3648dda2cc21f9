/**
 * `scan`: SCANS range reads of SCAN_ROWS rows each, from random start keys, on the
 * `get_sstable` data set, one at a time; each collects its rows into an array. Throughput
 * is rows/s; a latency sample is one whole scan.
 *
 * The store's idiomatic range read is the main row (KV Engine: `db.scan(start, undefined,
 * limit)`; classic-level: `db.iterator({ gte, limit }).all()`); other range APIs of the
 * store (`scanVariants`, e.g. classic-level's `nextv`) are measured after it in the same
 * run, each over other random starts, as rows `<store> (<variant>)`.
 */
import { fmtInt } from "../lib/format.js";
import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import { bytesEqual, keyAt, keyTable, rng } from "../lib/workload.js";
import type { BenchStore, ScanFn } from "../stores/store.js";
import { cacheCounters, cacheDelta } from "./common.js";
import { tablesFixture } from "./fixtures.js";
import { getSstable, TABLES_PEERS, tablesLine } from "./get.js";
import type { ScenarioOutput, StoreScenario } from "./scenario.js";

export const SCANS = 1000;
export const SCAN_ROWS = 500;

/** Times `scans` scans of `rows` rows from random starts in 0..n-rows (seeded). */
export async function timeScans(
  scan: ScanFn,
  table: Uint8Array,
  n: number,
  rows: number,
  seed: number,
  label: string,
  scans = SCANS,
): Promise<Measurement> {
  const random = rng(seed);
  const starts = Uint32Array.from({ length: scans }, () => Math.floor(random() * (n - rows + 1)));
  const latencies = new Float64Array(scans);
  let wrong = 0;
  const start = nowNs();
  let prev = start;
  for (let i = 0; i < scans; i++) {
    const from = keyAt(table, starts[i]!);
    const got = await scan(from, rows);
    // Cheap checks: the count, and that the first row is the start key.
    if (got.length !== rows || !bytesEqual(got[0]![0], from)) wrong++;
    const t = nowNs();
    latencies[i] = t - prev;
    prev = t;
  }
  const seconds = (prev - start) / 1e9;
  if (wrong > 0) {
    throw new Error(`${label || "scan"}: ${wrong} of ${scans} scans returned wrong rows`);
  }
  const total = scans * rows;
  return { label, ops: total, seconds, opsPerSec: total / seconds, latency: summarize(latencies) };
}

/**
 * `scans` scans of `rows` rows through the store's range read, then through each of its
 * `scanVariants` (rows `<store> (<variant>)`), each over its own seeded random starts.
 */
export async function measureScans(
  store: BenchStore,
  n: number,
  rows: number,
  seed: number,
  scans = SCANS,
): Promise<ScenarioOutput> {
  const table = keyTable(0, n);
  const before = cacheCounters(store);
  const out = [await timeScans(store.scan, table, n, rows, seed, "", scans)];
  const extra = { ...cacheDelta(store, before), scans, rowsPerScan: rows };
  let s = seed + 1;
  for (const [name, fn] of Object.entries(store.scanVariants ?? {})) {
    out.push(await timeScans(fn, table, n, rows, s++, name, scans));
  }
  return { rows: out, extra };
}

export const scan: StoreScenario = {
  kind: "store",
  name: "scan",
  title: `range reads of ${SCAN_ROWS} rows from random start keys, one at a time`,
  sync: false,
  unit: "rows",
  fixture: tablesFixture,
  extraPeers: TABLES_PEERS,
  defaultN: getSstable.defaultN,
  sizeLine: (n, valueSize) =>
    `The get_sstable data set (${tablesLine(n, valueSize)}); ${fmtInt(SCANS)} scans of ` +
    `${fmtInt(Math.min(SCAN_ROWS, n))} rows from random start keys, rows collected into an ` +
    "array; throughput in rows/s, latency columns per scan.",
  run: (store, { n, seed }) => measureScans(store, n, Math.min(SCAN_ROWS, n), seed + 3),
};
