/**
 * The deterministic simulation of Raft groups (simulation.ts). By default 200 consecutive
 * seeds from a random base (printed) of 2,000 steps each; KV_STRESS=1 runs 10,000;
 * KV_SEED=<seed> replays exactly that one run; KV_SIM_SEEDS and KV_SIM_STEPS override the
 * count and the length; KV_SIM_TRACE=1 prints every traced event of the runs.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runSimulation, type SimReport, simOptions } from "./simulation.js";

const STRESS = process.env["KV_STRESS"] === "1";
const REPLAY = process.env["KV_SEED"];
const SEEDS = Number(process.env["KV_SIM_SEEDS"] ?? (STRESS ? 10_000 : 200));
const STEPS = Number(process.env["KV_SIM_STEPS"] ?? 2000);
const MAX_FAILURES_SHOWN = 3;

function totals(reports: readonly SimReport[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const r of reports) {
    for (const [k, v] of Object.entries(r.stats)) sum[k] = (sum[k] ?? 0) + v;
  }
  return sum;
}

describe("raft simulation", () => {
  if (REPLAY !== undefined) {
    test(`replays seed ${REPLAY}`, async (t) => {
      const report = await runSimulation(simOptions(Number(REPLAY), { steps: STEPS }));
      t.diagnostic(JSON.stringify(report.stats));
    });
    return;
  }

  test(`${SEEDS} seeds of ${STEPS} steps: 3 and 5 nodes under crashes, pauses, partitions, lossy links, slow disks, membership changes, transfers and snapshots`, async (t) => {
    const base = Math.floor(Math.random() * 2 ** 30);
    t.diagnostic(`seeds ${base}..${base + SEEDS - 1}`);
    const started = performance.now();
    const reports: SimReport[] = [];
    const failures: string[] = [];
    for (let seed = base; seed < base + SEEDS; seed++) {
      try {
        reports.push(await runSimulation(simOptions(seed, { steps: STEPS })));
      } catch (err) {
        failures.push(err instanceof Error ? err.message : String(err));
        if (failures.length >= MAX_FAILURES_SHOWN) break;
      }
    }
    const sum = totals(reports);
    t.diagnostic(
      `${reports.length} runs passed in ${((performance.now() - started) / 1000).toFixed(1)} s; ` +
        `totals ${JSON.stringify(sum)}`,
    );
    assert.deepEqual(failures, [], failures.join("\n\n"));
    if (reports.length >= 100) {
      // The runs exercised what they claim to (a nemesis that stopped acting would pass).
      for (const what of [
        "crashes",
        "partitions",
        "transfers",
        "pauses",
        "confChanges",
        "snapshotsInstalled",
        "streamsBroken",
        "opsOk",
        "opsUnknown",
      ]) {
        assert.ok((sum[what] ?? 0) > 0, `no ${what} in ${reports.length} runs`);
      }
      assert.ok(sum["leaders"]! > 2 * reports.length, "too few elections");
    }
  });

  test("a run is a pure function of its seed", async () => {
    const seed = 424242;
    const a = await runSimulation(simOptions(seed, { steps: 800 }));
    const b = await runSimulation(simOptions(seed, { steps: 800 }));
    assert.deepEqual(a, b);
  });
});
