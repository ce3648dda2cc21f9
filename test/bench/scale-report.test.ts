/**
 * The `--scale` figures (bench/report/scale.ts): write and space amplification, RSS per key
 * and per added key from a run's extras, points ordered by n; the growth targets (half of
 * the smallest size's throughput at the largest, write amplification
 * against LevelDB's only at a space amplification no higher); and the merging of saved
 * runs (bench/report/saved.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RowSummary, ScenarioSummary, Target } from "../../bench/report/results.js";
import { mergeSummaries } from "../../bench/report/saved.js";
import { scalePoints, scaleTargets } from "../../bench/report/scale.js";

const MiB = 1024 * 1024;

interface RowSpec {
  ops: number;
  rss?: number;
  extra?: Record<string, number>;
  variant?: string;
  status?: RowSummary["status"];
}

function row(name: string, spec: RowSpec): RowSummary {
  return {
    name,
    label: name,
    ...(spec.variant === undefined ? {} : { variant: spec.variant }),
    status: spec.status ?? "ok",
    okRuns: 1,
    attempted: 1,
    median: {
      label: name,
      ops: spec.ops,
      seconds: 1,
      opsPerSec: spec.ops,
      latency: { samples: 1, meanNs: 0, p50Ns: 0, p90Ns: 0, p99Ns: 7000, p999Ns: 0, maxNs: 0 },
    },
    extra: spec.extra ?? {},
    ...(spec.rss === undefined ? {} : { peakRssBytes: spec.rss }),
  };
}

function sized(base: string, n: number, rows: RowSummary[]): ScenarioSummary {
  return {
    name: `${base}@${n}`,
    base,
    title: base,
    kind: "store",
    n,
    valueSize: 100,
    unit: "ops",
    rows,
  };
}

/** Amplification extras: written = wa × user, dir = sa × logical; settled. */
function amp(wa: number, sa: number, settled = 1): Record<string, number> {
  const user = 1000;
  return {
    userBytes: user,
    writtenBytes: wa * user,
    logicalBytes: user,
    dataDirBytes: sa * user,
    settled,
    settleSeconds: 2,
  };
}

function target(targets: Target[], prefix: string): Target {
  const t = targets.find((x) => x.name.startsWith(prefix));
  assert.ok(t, `no target starting "${prefix}" in ${targets.map((x) => x.name).join(" | ")}`);
  return t;
}

test("scalePoints: amplification, RSS per key and per added key, ordered by n", () => {
  const points = scalePoints([
    sized("fillrandom", 4_000_000, [
      row("kv-engine", {
        ops: 80,
        rss: 400 * MiB,
        extra: { ...amp(3, 1.2), rssAtOpenBytes: 50 * MiB, timedCpuSeconds: 0.0008 },
      }),
      row("kv-engine (getSync)", { ops: 999, variant: "getSync" }),
    ]),
    sized("fillrandom", 1_000_000, [
      row("kv-engine", { ops: 100, rss: 200 * MiB, extra: { rssAtOpenBytes: 50 * MiB } }),
      row("classic-level", { ops: 1, status: "timeout" }),
    ]),
  ]);
  assert.deepEqual(
    points.map((p) => [p.n, p.store]),
    [
      [1_000_000, "kv-engine"],
      [4_000_000, "kv-engine"],
    ],
  );
  const [small, large] = points;
  assert.equal(small!.rssPerAddedKey, undefined);
  assert.equal(small!.rssPerKey, (150 * MiB) / 1_000_000);
  assert.equal(large!.rssPerKey, (350 * MiB) / 4_000_000);
  assert.equal(large!.rssPerAddedKey, (200 * MiB) / 3_000_000);
  assert.equal(large!.writeAmp, 3);
  assert.equal(large!.spaceAmp, 1.2);
  assert.equal(large!.settled, true);
  assert.equal(large!.p99Ns, 7000);
  assert.equal(small!.writeAmp, undefined);
  assert.ok(Math.abs(large!.cpuUsPerOp! - 10) < 1e-9, "0.8 ms of CPU over 80 operations");
  assert.equal(small!.cpuUsPerOp, undefined);
});

test("scaleTargets: growth from the smallest size to the largest", () => {
  const targets = scaleTargets(
    scalePoints([
      sized("fillrandom", 1_000_000, [
        row("kv-engine", { ops: 100 }),
        row("classic-level", { ops: 50 }),
      ]),
      sized("fillrandom", 16_000_000, [
        row("kv-engine", { ops: 49 }),
        row("classic-level", { ops: 30 }),
        row("rocksdb", { ops: 60 }),
      ]),
    ]),
  );
  const growth = target(targets, "fillrandom: KV Engine ops/s at 16M ÷ at 1M");
  assert.equal(growth.status, "not met");
  assert.equal(growth.measured, 0.49);
  assert.equal(target(targets, "fillrandom@16M: KV Engine write amp").status, "n/a");
});

test("scaleTargets: write amplification counts only at a space amplification no higher", () => {
  const run = (kvSpace: number, kvSettled = 1) =>
    scaleTargets(
      scalePoints([
        sized("fillrandom", 1_000_000, [row("kv-engine", { ops: 100 })]),
        sized("fillrandom", 4_000_000, [
          row("kv-engine", { ops: 90, extra: amp(2, kvSpace, kvSettled) }),
          row("classic-level", { ops: 20, extra: amp(4, 1.1) }),
        ]),
      ]),
    );
  const name = "fillrandom@4M: KV Engine write amp";
  const lower = target(run(1.05), name);
  assert.equal(lower.status, "met");
  assert.equal(lower.measured, 0.5);
  assert.equal(target(run(1.5), name).status, "not met");
  assert.equal(target(run(1.12), name).status, "not met", "0.02 above classic-level's 1.1");
  assert.equal(target(run(1.105), name).status, "met", "within the tolerance");
  assert.equal(target(run(1.05, 0), name).status, "not met");
});

test("scaleTargets: nothing for a scenario run at one size", () => {
  const one = scalePoints([sized("readrandom", 1_000_000, [row("kv-engine", { ops: 1 })])]);
  assert.deepEqual(scaleTargets(one), []);
});

test("mergeSummaries: sized scenarios by base, then n; rows gathered, the last run's copy of a row", () => {
  const plain: ScenarioSummary = { ...sized("x", 1, []), name: "put" };
  delete plain.base;
  const first = [
    sized("fillrandom", 1_000_000, [row("kv-engine", { ops: 1 }), row("rocksdb", { ops: 5 })]),
    sized("readrandom", 1_000_000, []),
    plain,
  ];
  const second = [
    sized("readrandom", 16_000_000, []),
    sized("fillrandom", 16_000_000, []),
    sized("fillrandom", 1_000_000, [row("kv-engine", { ops: 2 }), row("lmdb", { ops: 3 })]),
  ];
  const merged = mergeSummaries([first, second]);
  assert.deepEqual(
    merged.map((s) => s.name),
    [
      "put",
      "fillrandom@1000000",
      "fillrandom@16000000",
      "readrandom@1000000",
      "readrandom@16000000",
    ],
  );
  assert.deepEqual(
    merged[1]!.rows.map((r) => [r.name, r.median!.opsPerSec]),
    [
      ["kv-engine", 2],
      ["rocksdb", 5],
      ["lmdb", 3],
    ],
  );
  assert.equal(first[0]!.rows.length, 2, "the inputs are not modified");
});
