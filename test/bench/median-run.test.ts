/**
 * Which run of a row the report shows (bench/report/results.ts, summarizeStore): the run
 * of median throughput, except for an open-loop row, whose runs all offer the same rate:
 * the run of median p99.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { LOAD_RATE } from "../../bench/cluster/load.js";
import type { Measurement, WorkerResult } from "../../bench/lib/types.js";
import { summarizeStore } from "../../bench/report/results.js";

function run(label: string, opsPerSec: number, p99Ms: number, openLoop: boolean): WorkerResult {
  const row: Measurement = {
    label,
    ops: opsPerSec,
    seconds: 1,
    opsPerSec,
    latency: {
      samples: 1,
      meanNs: 0,
      p50Ns: 0,
      p90Ns: 0,
      p99Ns: p99Ms * 1e6,
      p999Ns: 0,
      maxNs: 0,
    },
    values: openLoop ? { [LOAD_RATE]: 3000 } : {},
  };
  return { scenario: "s", store: "kv", status: "ok", rows: [row], extra: {}, peakRssBytes: 0 };
}

const p99Of = (runs: WorkerResult[]) =>
  (summarizeStore("kv", runs)[0]?.median?.latency?.p99Ns ?? 0) / 1e6;
const opsOf = (runs: WorkerResult[]) => summarizeStore("kv", runs)[0]?.median?.opsPerSec;

test("an open-loop row shows its run of median p99, whatever their throughputs", () => {
  // Throughputs ranked 2999 < 3000 < 3001 would pick the p99 of 90.
  const runs = [run("kv", 3000, 90, true), run("kv", 2999, 10, true), run("kv", 3001, 40, true)];
  assert.equal(p99Of(runs), 40);
});

test("a closed-loop row shows its run of median throughput", () => {
  const runs = [run("kv", 5000, 90, false), run("kv", 4000, 10, false), run("kv", 6000, 40, false)];
  assert.equal(opsOf(runs), 5000);
  assert.equal(p99Of(runs), 90);
});
