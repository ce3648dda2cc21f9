/**
 * The etcd_clients benchmark's parts (bench/cluster/etcd-client-ops.ts, watch-by-library.ts,
 * the etcd_clients targets in bench/report/results.ts), against a 1-member kv-engine cluster
 * (and etcd when installed):
 * - each client library's txn keeps Kubernetes' update bookkeeping: a compare on a stale
 *   mod revision fails and refreshes it from the answer, so the next one succeeds;
 * - each library's load process reports calls and its CPU, without failures;
 * - each library's watchers deliver every event exactly once, with their latencies;
 * - the targets: EtcdClient ÷ etcd3 calls per client CPU-second >= 2 per row, the rest
 *   information, n/a without rows.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type BenchCluster, settledLeader } from "../../bench/cluster/cluster.js";
import { ETCD_LIBRARIES, libraryOperations } from "../../bench/cluster/etcd-client-ops.js";
import { EtcdCluster, etcdOnPath } from "../../bench/cluster/etcd-cluster.js";
import { KvCluster } from "../../bench/cluster/kv-cluster.js";
import { LOAD_CLIENT_CPU_US, LOAD_ERRORS, runLoad } from "../../bench/cluster/load.js";
import type { WatchClientSpec } from "../../bench/cluster/watch-client.js";
import { WatcherGroup, writePuts } from "../../bench/cluster/watch-load.js";
import type { Measurement } from "../../bench/lib/types.js";
import { formatKey } from "../../bench/lib/workload.js";
import { evaluateTargets, type RowSummary } from "../../bench/report/results.js";
import { load } from "../../bench/scenarios/cluster.js";
import {
  CALLS_PER_CLIENT_CPU_SECOND,
  libraryRowLabel,
  libraryWatchLabel,
} from "../../bench/scenarios/etcd-clients.js";
import type { ScenarioContext } from "../../bench/scenarios/scenario.js";
import { EtcdClient } from "../../src/client/index.js";
import { withBenchCluster } from "../support/bench-cluster.js";

const encoder = new TextEncoder();
const key = (i: number) => encoder.encode(formatKey(i));

async function exercise(c: BenchCluster): Promise<void> {
  const to = c.clientAddress(await settledLeader(c));
  await load(c, 10, { valueSize: 100, seed: 1 } as ScenarioContext);
  const reader = new EtcdClient(to, { timeoutMs: 5000 });
  try {
    for (const [i, client] of ETCD_LIBRARIES.entries()) {
      // Key i + 1 exists (loaded); this process has seen no revision of it.
      const value = (n: number) => encoder.encode(`${client} ${n}`);
      const d = { pick: () => i + 1, key, value };
      const txn = libraryOperations(client, to, 5000, "txn", d);
      try {
        const before = await reader.get(key(i + 1));
        await txn.call(); // compares mod revision 0: fails, reads the key, refreshes it
        assert.deepEqual((await reader.get(key(i + 1)))?.value, before?.value, client);
        await txn.call(); // compares the revision read: succeeds, puts value(1)
        const after = await reader.get(key(i + 1));
        assert.equal(after?.value.toString(), `${client} 1`, client);
        await txn.call(); // the revision of its own put: succeeds again
        assert.equal((await reader.get(key(i + 1)))?.value.toString(), `${client} 2`, client);
      } finally {
        txn.close();
      }
    }
  } finally {
    reader.close();
  }
  const common = {
    kind: c.kind,
    api: "etcd" as const,
    endpoints: [to],
    warmupMs: 100,
    durationMs: 400,
    keySpace: 10,
    scanRows: 5,
    valueSize: 100,
    timeoutMs: 5000,
  };
  for (const client of ETCD_LIBRARIES) {
    for (const op of ["put", "get", "txn"] as const) {
      const row = await runLoad(common, { label: "", op, procs: 1, inFlight: 4, client }, 1);
      assert.equal(row.values?.[LOAD_ERRORS], 0, row.description);
      assert.ok(row.ops > 0, row.description);
      assert.ok((row.values?.[LOAD_CLIENT_CPU_US] ?? 0) > 0, row.description);
    }
  }
}

async function watchEach(c: BenchCluster): Promise<void> {
  const to = c.clientAddress(await settledLeader(c));
  const epoch = process.hrtime.bigint();
  for (const [i, client] of ETCD_LIBRARIES.entries()) {
    const spec: WatchClientSpec = {
      endpoint: to,
      watchers: 2,
      perStream: 1,
      key: "key_",
      rangeEnd: "key`",
      startRevision: 0,
      latency: true,
      epochNs: epoch.toString(),
      client,
    };
    await WatcherGroup.with([spec], async (group) => {
      await group.go();
      const done = await writePuts(to, {
        first: 1000 * (i + 1),
        count: 30,
        key,
        value: () => new Uint8Array(20).fill(1),
        inFlight: 4,
        epoch,
        timeoutMs: 5000,
      });
      // group.round fails unless each watcher got exactly the 30 events.
      const round = await group.round(done.revision, 30, 10_000);
      assert.equal(round.events, 60, client);
      assert.equal(round.latenciesNs.length, 60, client);
      assert.ok(round.clientCpuSeconds > 0, client);
    });
  }
}

test(
  "the client libraries' txn bookkeeping and load processes against a 1-member kv-engine cluster",
  { timeout: 120_000 },
  () => withBenchCluster((dir) => KvCluster.start(dir, 1), exercise),
);

test(
  "the client libraries' txn bookkeeping and load processes against a 1-member etcd",
  { timeout: 120_000, skip: etcdOnPath() === undefined ? "etcd is not on PATH" : false },
  () => withBenchCluster((dir) => EtcdCluster.start(dir, 1), exercise),
);

test(
  "the client libraries' watchers against a 1-member kv-engine cluster: every event once",
  { timeout: 60_000 },
  () => withBenchCluster((dir) => KvCluster.start(dir, 1), watchEach),
);

function row(name: string, rate: number): RowSummary {
  const median: Measurement = {
    label: name,
    ops: 1,
    seconds: 1,
    opsPerSec: rate / 10,
    values: { [CALLS_PER_CLIENT_CPU_SECOND]: rate },
  };
  return { name, label: name, status: "ok", okRuns: 1, attempted: 1, median };
}

test("etcd_clients targets: EtcdClient at least 2x etcd3's calls per client CPU-second; the rest information", () => {
  const kv = "kv-engine-cluster";
  const rows = [
    row(`${kv} (${libraryRowLabel("etcd-client", "put", 1)})`, 3000),
    row(`${kv} (${libraryRowLabel("etcd-client-grpc-js", "put", 1)})`, 900),
    row(`${kv} (${libraryRowLabel("etcd3", "put", 1)})`, 1000),
    row(`${kv} (${libraryRowLabel("etcd-client", "get", 64)})`, 1500),
    row(`${kv} (${libraryRowLabel("etcd3", "get", 64)})`, 1000),
    row(`${kv} (${libraryWatchLabel("etcd-client")})`, 4000),
    row(`${kv} (${libraryWatchLabel("etcd3")})`, 1000),
  ];
  const targets = evaluateTargets([
    {
      name: "etcd_clients",
      title: "",
      kind: "store",
      n: 1000,
      valueSize: 100,
      unit: "ops",
      rows,
    },
  ]);
  const of = (name: string) => {
    const t = targets.find((x) => x.name === `etcd_clients: ${name}`);
    assert.ok(t !== undefined, `no target ${name}`);
    return t;
  };
  const put = of(
    "against KV Engine cluster, put, 1 in flight: EtcdClient ÷ etcd3 calls per client CPU-second",
  );
  assert.equal(put.status, "met");
  assert.equal(put.measured, 3);
  assert.equal(put.goal, 2);
  const get = of(
    "against KV Engine cluster, get, 64 in flight: EtcdClient ÷ etcd3 calls per client CPU-second",
  );
  assert.equal(get.status, "not met");
  assert.equal(get.measured, 1.5);
  const grpcJs = of(
    "against KV Engine cluster, put, 1 in flight: EtcdClient on grpc-js ÷ etcd3 calls per client CPU-second",
  );
  assert.equal(grpcJs.status, "info");
  assert.equal(grpcJs.measured, 0.9);
  assert.equal(
    of("against KV Engine cluster, put, 1 in flight: EtcdClient ÷ etcd3 calls/s").measured,
    3,
  );
  assert.equal(
    of("against KV Engine cluster, watch: EtcdClient ÷ etcd3 events per client CPU-second")
      .measured,
    4,
  );
  assert.equal(
    of(
      "against KV Engine cluster, txn, 1 in flight: EtcdClient ÷ etcd3 calls per client CPU-second",
    ).status,
    "n/a",
  );
  assert.equal(
    of("against etcd, put, 1 in flight: EtcdClient ÷ etcd3 calls per client CPU-second").status,
    "n/a",
  );
});
