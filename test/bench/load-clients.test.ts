/**
 * The cluster benchmarks' standard-client load processes (bench/cluster/load.ts): grpc-js
 * (KvClient, or the grpc-js etcd client) and Python grpcio (bench/cluster/grpcio-load.py,
 * skipped with a message when /usr/bin/python3 has no grpc module) against a 1-member
 * kv-engine cluster (and etcd when installed): every process reports calls and their
 * client CPU, no failures; a cold window holds exactly the calls asked for, whatever the
 * client.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type BenchCluster, settledLeader } from "../../bench/cluster/cluster.js";
import { EtcdCluster, etcdOnPath } from "../../bench/cluster/etcd-cluster.js";
import { KvCluster } from "../../bench/cluster/kv-cluster.js";
import {
  grpcioMissing,
  LOAD_CLIENT_CPU_US,
  LOAD_ERRORS,
  LOAD_SERVER_CPU_US,
  runLoad,
} from "../../bench/cluster/load.js";
import type { LoadClientKind } from "../../bench/cluster/load-client.js";
import { load } from "../../bench/scenarios/cluster.js";
import type { ScenarioContext } from "../../bench/scenarios/scenario.js";
import { withBenchCluster } from "../support/bench-cluster.js";

async function exercise(c: BenchCluster, client: LoadClientKind): Promise<void> {
  const leader = await settledLeader(c);
  const common = {
    kind: c.kind,
    endpoints: [c.clientAddress(leader)],
    warmupMs: 100,
    durationMs: 500,
    keySpace: 50,
    scanRows: 5,
    valueSize: 100,
    timeoutMs: 5000,
  };
  const cpu = () => c.cpuSeconds();
  const wide = await runLoad(
    common,
    { label: "", op: "put", procs: 2, inFlight: 6, client },
    1,
    cpu,
  );
  assert.equal(wide.values?.[LOAD_ERRORS], 0, wide.description);
  assert.ok(wide.ops > 0, wide.description);
  assert.equal(wide.latency?.samples, wide.ops);
  assert.ok((wide.values?.[LOAD_CLIENT_CPU_US] ?? 0) > 0, wide.description);
  assert.match(wide.description ?? "", new RegExp(`^${client} client, 2 client processes`));
  // Every key of the space written (the puts above are random: under load they may miss
  // some): a scan of 5 rows returns 5.
  await load(c, common.keySpace, { valueSize: 100, seed: 1 } as ScenarioContext);
  const scan = await runLoad(common, { label: "", op: "scan", procs: 1, inFlight: 2, client }, 2);
  assert.equal(scan.values?.[LOAD_ERRORS], 0, scan.description);
  assert.equal(scan.ops, 5 * (scan.latency?.samples ?? 0));
  for (const procs of [1, 2]) {
    const cold = await runLoad(
      common,
      { label: "", op: "put", procs, inFlight: procs, client, coldCalls: 25 },
      3,
      cpu,
    );
    assert.equal(cold.values?.[LOAD_ERRORS], 0, cold.description);
    assert.equal(cold.latency?.samples, 25, cold.description);
    assert.ok(cold.seconds > 0 && cold.opsPerSec === 25 / cold.seconds);
    // Sampled at go and at the last result (10 ms ticks: 25 calls may cost 0).
    assert.ok((cold.values?.[LOAD_SERVER_CPU_US] ?? -1) >= 0, cold.description);
    assert.match(cold.description ?? "", /the first 25 calls/);
  }
}

const noEtcd = etcdOnPath() === undefined ? "etcd is not on PATH" : false;
const noGrpcio = grpcioMissing() ?? false;

for (const client of ["lean", "grpc-js", "grpcio"] as const) {
  const skip = client === "grpcio" ? noGrpcio : false;
  test(
    `${client} load processes against a 1-member kv-engine cluster`,
    { timeout: 60_000, skip },
    () =>
      withBenchCluster(
        (dir) => KvCluster.start(dir, 1),
        (c) => exercise(c, client),
      ),
  );
  test(
    `${client} load processes against a 1-member etcd`,
    {
      timeout: 60_000,
      skip: skip || noEtcd,
    },
    () =>
      withBenchCluster(
        (dir) => EtcdCluster.start(dir, 1),
        (c) => exercise(c, client),
      ),
  );
}

test("grpcioMissing names the package to install, or is undefined when grpc imports", () => {
  const missing = grpcioMissing();
  if (missing !== undefined) assert.match(missing, /apt-get install python3-grpcio/);
});
