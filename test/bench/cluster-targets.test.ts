/**
 * The cluster targets of the benchmark report (bench/report/results.ts): kv-engine's cluster
 * against etcd from the rows of the same run, the concurrent figure being the better of
 * the N- and N+1-process rows; the p50 and failover targets are maxima; the N+1 ÷ N check
 * per row pair; no cluster target without a cluster scenario.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Measurement } from "../../bench/lib/types.js";
import {
  evaluateTargets,
  type RowSummary,
  type ScenarioSummary,
  type Target,
} from "../../bench/report/results.js";

function row(
  name: string,
  opsPerSec: number,
  p50Ms = 1,
  values: Record<string, number> = {},
): RowSummary {
  const median: Measurement = {
    label: name,
    ops: opsPerSec,
    seconds: 1,
    opsPerSec,
    latency: { samples: 1, meanNs: 0, p50Ns: p50Ms * 1e6, p90Ns: 0, p99Ns: 0, p999Ns: 0, maxNs: 0 },
    values,
  };
  return { name, label: name, status: "ok", okRuns: 1, attempted: 1, median };
}

function scenario(name: string, rows: RowSummary[]): ScenarioSummary {
  return {
    name,
    title: name,
    kind: "store",
    n: 1000,
    valueSize: 100,
    unit: "ops",
    baseline: "kv-engine-cluster",
    rows,
  };
}

function find(targets: Target[], prefix: string): Target {
  const t = targets.find((x) => x.name.startsWith(prefix));
  assert.ok(t !== undefined, `no target ${prefix}: ${targets.map((x) => x.name).join("; ")}`);
  return t;
}

const wide = (store: string, procs: number) => `${store} (64 in flight, ${procs} processes)`;

test("cluster_put and cluster_get: ratios to etcd, better of 2 and 3 processes; p50 at most etcd's", () => {
  const targets = evaluateTargets([
    scenario("cluster_put", [
      row("kv-engine-cluster", 100, 4),
      row(wide("kv-engine-cluster", 2), 3000),
      row(wide("kv-engine-cluster", 3), 3200),
      row("etcd", 300, 3),
      row(wide("etcd", 2), 2000),
      row(wide("etcd", 3), 1600),
    ]),
    scenario("cluster_get", [
      row("kv-engine-cluster", 1000),
      row(wide("kv-engine-cluster", 2), 9000),
      row(wide("kv-engine-cluster", 3), 8000),
      row("etcd", 400),
      row(wide("etcd", 2), 5000),
      row(wide("etcd", 3), 4000),
    ]),
  ]);
  const put = find(targets, "cluster_put: KV Engine cluster ÷ etcd ops/s, 64 in flight");
  assert.equal(put.measured, 3200 / 2000);
  assert.equal(put.status, "met");
  const p50 = find(targets, "cluster_put: KV Engine cluster p50 ÷ etcd p50");
  assert.equal(p50.measured, 4 / 3);
  assert.equal(p50.atMost, true);
  assert.equal(p50.status, "not met");
  assert.equal(
    find(targets, "cluster_get: KV Engine cluster ÷ etcd gets/s, linearizable, 1 in flight").status,
    "met",
  );
  const get64 = find(
    targets,
    "cluster_get: KV Engine cluster ÷ etcd gets/s, linearizable, 64 in flight",
  );
  assert.equal(get64.measured, 9000 / 5000);
  assert.equal(get64.status, "not met");
  const more = find(targets, "cluster_put: kv-engine-cluster, 3 ÷ 2 client processes");
  assert.equal(more.measured, 3200 / 3000);
  assert.equal(more.status, "not met");
  assert.equal(find(targets, "cluster_put: etcd, 3 ÷ 2 client processes").status, "met");
  assert.equal(find(targets, "failover: KV Engine cluster, median").status, "n/a");
});

test("failover: the median is a maximum of 1500 ms; etcd's is information", () => {
  const targets = evaluateTargets([
    scenario("failover", [
      row("kv-engine-cluster", 1, 0, { medianMs: 1600, maxMs: 2000 }),
      row("etcd", 1, 0, { medianMs: 1200, maxMs: 1300 }),
    ]),
  ]);
  const kv = find(targets, "failover: KV Engine cluster, median");
  assert.equal(kv.measured, 1600);
  assert.equal(kv.status, "not met");
  assert.equal(find(targets, "failover: KV Engine cluster, max").measured, 2000);
  assert.equal(find(targets, "failover: etcd, median").status, "info");
});

test("cluster_steady: any leader change misses the target; no cluster targets without cluster rows", () => {
  const steady = (changes: number) =>
    find(
      evaluateTargets([
        scenario("cluster_steady", [row("kv-engine-cluster", 1, 1, { leaderChanges: changes })]),
      ]),
      "cluster_steady",
    ).status;
  assert.equal(steady(0), "met");
  assert.equal(steady(1), "not met");
  const none = evaluateTargets([scenario("put", [row("kv-engine", 1)])]);
  assert.equal(
    none.filter((t) => t.name.startsWith("cluster_") || t.name.startsWith("failover")).length,
    0,
  );
});

test("cluster_clients: per client, leader ratios to etcd are targets, the follower's information; cold ÷ warm p50 at most 1.5 for kv-engine", () => {
  const at = (name: string, opsPerSec: number, p50Ms: number, p99Ms: number) => {
    const r = row(name, opsPerSec, p50Ms);
    r.median!.latency!.p99Ns = p99Ms * 1e6;
    return r;
  };
  const rows = (store: string, wide: number, p50: number, p99: number, cold: number) => [
    at(`${store} (grpcio, leader)`, 500, p50, p99),
    at(`${store} (grpcio, leader, 64 in flight, 2 processes)`, wide, 10, 30),
    at(`${store} (grpcio, follower)`, 400, 2 * p50, 2 * p99),
    at(`${store} (grpcio, follower, 64 in flight, 2 processes)`, wide / 2, 10, 30),
    at(`${store} (grpcio, leader, cold: the first 1,000 calls)`, 300, cold, 10),
  ];
  const targets = evaluateTargets([
    scenario("cluster_clients", [
      ...rows("kv-engine-cluster", 6000, 1.2, 6, 2),
      ...rows("etcd", 3000, 1.4, 5, 1.5),
    ]),
  ]);
  const wide = find(
    targets,
    "cluster_clients: grpcio to the leader, KV Engine cluster ÷ etcd puts/s",
  );
  assert.equal(wide.measured, 2);
  assert.equal(wide.status, "met");
  const p50 = find(targets, "cluster_clients: grpcio to the leader, KV Engine cluster p50");
  assert.ok(Math.abs((p50.measured ?? 0) - 1.2 / 1.4) < 1e-9);
  assert.equal(p50.status, "met");
  const p99 = find(targets, "cluster_clients: grpcio to the leader, KV Engine cluster p99");
  assert.ok(Math.abs((p99.measured ?? 0) - 6 / 5) < 1e-9);
  assert.equal(p99.status, "not met");
  assert.equal(
    find(targets, "cluster_clients: grpcio to the follower, KV Engine cluster ÷ etcd puts/s")
      .status,
    "info",
  );
  const cold = find(targets, "cluster_clients: KV Engine cluster, cold p50");
  assert.ok(Math.abs((cold.measured ?? 0) - 2 / 1.2) < 1e-9);
  assert.equal(cold.status, "not met");
  assert.equal(find(targets, "cluster_clients: etcd, cold p50").status, "info");
  // grpc-js was not run: its targets say so.
  assert.equal(
    find(targets, "cluster_clients: grpc-js to the leader, KV Engine cluster ÷ etcd").status,
    "n/a",
  );
  assert.equal(
    evaluateTargets([scenario("cluster_put", [row("kv-engine-cluster", 1)])]).filter((t) =>
      t.name.startsWith("cluster_clients"),
    ).length,
    0,
  );
});

test("cluster_clients: through a follower, p50 within two loopback round trips of the leader's and 64 in flight at 0.9x", () => {
  const at = (name: string, opsPerSec: number, p50Ms: number, echoUs?: number) => {
    const r = row(name, opsPerSec, p50Ms);
    if (echoUs !== undefined) r.median!.values = { echoRttP50Us: echoUs };
    return r;
  };
  const targets = (followerP50Ms: number, followerWide: number) =>
    evaluateTargets([
      scenario("cluster_clients", [
        at("kv-engine-cluster (grpcio, leader)", 800, 1.0),
        at("kv-engine-cluster (grpcio, leader, 64 in flight, 2 processes)", 6000, 10),
        at("kv-engine-cluster (grpcio, follower)", 700, followerP50Ms, 100),
        at("kv-engine-cluster (grpcio, follower, 64 in flight, 2 processes)", followerWide, 10),
      ]),
    ]);
  const serial = (t: ReturnType<typeof targets>) =>
    find(t, "cluster_clients: KV Engine cluster, grpcio, serial put p50 through a follower");
  const wide = (t: ReturnType<typeof targets>) =>
    find(t, "cluster_clients: KV Engine cluster, grpcio, puts/s through a follower");
  const good = targets(1.15, 5700);
  assert.ok(Math.abs((serial(good).measured ?? 0) - 1.5) < 1e-9);
  assert.equal(serial(good).status, "met");
  assert.ok(Math.abs((wide(good).measured ?? 0) - 0.95) < 1e-9);
  assert.equal(wide(good).status, "met");
  // A follower waiting for a heartbeat (100 ms) misses both.
  const slow = targets(101, 3000);
  assert.equal(serial(slow).status, "not met");
  assert.equal(wide(slow).status, "not met");
});

test("failover through the user's client: the longest round at most 1.5 s and no failed call", () => {
  const user = (maxMs: number, failedCalls: number) =>
    evaluateTargets([
      scenario("failover", [
        row("kv-engine-cluster", 1, 0, { medianMs: 800, maxMs: 900 }),
        row("kv-engine-cluster (KvClient, endpoint list, 10 s deadline)", 1, 0, {
          medianMs: 700,
          maxMs,
          failedCalls,
        }),
      ]),
    ]);
  const longest = (t: ReturnType<typeof user>) =>
    find(t, "failover: KV Engine cluster, KvClient, endpoint list, 10 s deadline, max ms");
  const failed = (t: ReturnType<typeof user>) =>
    find(t, "failover: KV Engine cluster, KvClient, endpoint list, 10 s deadline, calls failed");
  assert.equal(longest(user(1200, 0)).status, "met");
  assert.equal(failed(user(1200, 0)).status, "met");
  assert.equal(longest(user(1600, 0)).status, "not met");
  assert.equal(failed(user(1200, 2)).status, "not met");
  assert.equal(longest(evaluateTargets([scenario("failover", [])])).status, "n/a");
});

test("watch: fan-out and catch-up at least 1.5x etcd's events/s; p99 at most etcd's, p50 and max information", () => {
  const latencyRow = (name: string, p50: number, p99: number, max: number): RowSummary => {
    const r = row(name, 50_000);
    r.median!.latency = { ...r.median!.latency!, p50Ns: p50, p99Ns: p99, maxNs: max };
    return r;
  };
  const targets = evaluateTargets([
    scenario("watch_fanout", [row("kv-engine-cluster", 300_000), row("etcd", 100_000)]),
    scenario("watch_catchup", [row("kv-engine-cluster", 14_000), row("etcd", 10_000)]),
    scenario("watch_latency", [
      latencyRow("kv-engine-cluster", 2e6, 9e6, 20e6),
      latencyRow("etcd", 3e6, 10e6, 10e6),
    ]),
  ]);
  const fanout = find(targets, "watch_fanout: KV Engine cluster ÷ etcd events/s");
  assert.equal(fanout.measured, 3);
  assert.equal(fanout.status, "met");
  const catchup = find(targets, "watch_catchup: KV Engine cluster ÷ etcd events/s");
  assert.equal(catchup.measured, 1.4);
  assert.equal(catchup.status, "not met");
  const p99 = find(targets, "watch_latency: KV Engine cluster p99 ÷ etcd p99");
  assert.equal(p99.measured, 0.9);
  assert.equal(p99.atMost, true);
  assert.equal(p99.status, "met");
  assert.equal(find(targets, "watch_latency: KV Engine cluster max").status, "info");
  assert.equal(find(targets, "watch_latency: KV Engine cluster p50").status, "info");
  const none = evaluateTargets([scenario("watch_fanout", [row("kv-engine-cluster", 1)])]);
  assert.equal(find(none, "watch_fanout").status, "n/a");
  assert.equal(
    none.some((t) => t.name.startsWith("watch_latency") || t.name.startsWith("watch_catchup")),
    false,
  );
});

/** A row whose latency has the given p99 and max (ms), offered at `rate` calls/s. */
function tailRow(name: string, p99Ms: number, maxMs: number, rate?: number): RowSummary {
  const r = row(name, 1000, 1, rate === undefined ? {} : { ratePerSec: rate });
  r.median!.latency = { ...r.median!.latency!, p99Ns: p99Ms * 1e6, maxNs: maxMs * 1e6 };
  return r;
}

test("cluster_steady: the longest call must be under the election timeout (600 ms)", () => {
  const longest = (maxMs: number) =>
    find(
      evaluateTargets([scenario("cluster_steady", [tailRow("kv-engine-cluster", 10, maxMs)])]),
      "cluster_steady: KV Engine cluster, longest call",
    );
  assert.equal(longest(599).status, "met");
  assert.equal(longest(599).measured, 599);
  assert.equal(longest(601).status, "not met");
});

test("cluster_open_loop: p99 and max at most etcd's per client and target; the rate at most 0.7x etcd's capacity", () => {
  const capacity = "capacity, leader, 64 in flight, 2 processes";
  const targets = (kvP99: number, kvMax: number, rate: number) =>
    evaluateTargets([
      scenario("cluster_open_loop", [
        row(`kv-engine-cluster (${capacity})`, 9000),
        tailRow("kv-engine-cluster (lean, leader, open loop)", kvP99, kvMax, rate),
        tailRow("kv-engine-cluster (grpcio, follower, open loop)", 30, 90, rate),
        row(`etcd (${capacity})`, 5000),
        tailRow("etcd (lean, leader, open loop)", 20, 50, rate),
        tailRow("etcd (grpcio, follower, open loop)", 25, 80, rate),
      ]),
    ]);
  const t = targets(15, 40, 3000);
  assert.equal(find(t, "cluster_open_loop: offered").status, "met");
  assert.equal(find(t, "cluster_open_loop: offered").measured, 0.6);
  assert.equal(
    find(t, "cluster_open_loop: lean, leader, open loop, KV Engine cluster p99").status,
    "met",
  );
  assert.equal(
    find(t, "cluster_open_loop: lean, leader, open loop, KV Engine cluster max").status,
    "met",
  );
  assert.equal(
    find(t, "cluster_open_loop: grpcio, follower, open loop, KV Engine cluster p99").status,
    "not met",
  );
  assert.equal(
    find(t, "cluster_open_loop: grpcio, follower, open loop, KV Engine cluster max").status,
    "not met",
  );
  assert.equal(find(t, "cluster_open_loop: lean, follower").status, "n/a");
  const over = targets(21, 51, 4000);
  assert.equal(find(over, "cluster_open_loop: offered").status, "not met");
  assert.equal(
    find(over, "cluster_open_loop: lean, leader, open loop, KV Engine cluster p99").status,
    "not met",
  );
  assert.equal(
    find(over, "cluster_open_loop: lean, leader, open loop, KV Engine cluster max").status,
    "not met",
  );
});
