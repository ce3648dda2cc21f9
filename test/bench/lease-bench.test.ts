/**
 * The lease benchmarks' load (bench/cluster/lease-ops.ts through bench/cluster/load.ts)
 * against a 1-member kv-engine cluster and a 1-member etcd: lease churn (grant, put with
 * the lease, revoke), Lock + Unlock contending for one lock and on locks of their own, and
 * keep-alives over streams, each through the lean client and grpc-js where it applies:
 * every process reports calls and no failures.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type BenchCluster, settledLeader } from "../../bench/cluster/cluster.js";
import { EtcdCluster, etcdOnPath } from "../../bench/cluster/etcd-cluster.js";
import { KvCluster } from "../../bench/cluster/kv-cluster.js";
import { LOAD_ERRORS, runLoad } from "../../bench/cluster/load.js";
import type { LoadClientKind, LoadOp } from "../../bench/cluster/load-client.js";
import { withBenchCluster } from "../support/bench-cluster.js";

async function exercise(c: BenchCluster): Promise<void> {
  const leader = await settledLeader(c);
  const common = {
    kind: c.kind,
    api: "etcd" as const,
    endpoints: [c.clientAddress(leader)],
    warmupMs: 100,
    durationMs: 500,
    keySpace: 50,
    scanRows: 5,
    valueSize: 100,
    timeoutMs: 5000,
    leases: 20,
  };
  const runs: [LoadOp, LoadClientKind, number][] = [
    ["lease_churn", "lean", 4],
    ["lease_churn", "grpc-js", 4],
    ["lock_one", "lean", 3],
    ["lock_many", "grpc-js", 4],
    ["keepalive", "grpc-js", 8],
  ];
  for (const [i, [op, client, inFlight]] of runs.entries()) {
    const m = await runLoad(common, { label: "", op, procs: 2, inFlight, client }, i + 1);
    assert.equal(m.values?.[LOAD_ERRORS], 0, `${op} ${client}: ${m.description}`);
    assert.ok(m.ops > 0, `${op} ${client}: ${m.description}`);
  }
}

test(
  "lease and lock load processes against a 1-member kv-engine cluster",
  { timeout: 90_000 },
  () => withBenchCluster((dir) => KvCluster.start(dir, 1), exercise),
);

test(
  "lease and lock load processes against a 1-member etcd",
  { timeout: 90_000, skip: etcdOnPath() === undefined ? "etcd is not on PATH" : false },
  () => withBenchCluster((dir) => EtcdCluster.start(dir, 1), exercise),
);
