/**
 * The cluster benchmarks' harness (bench/cluster/): the etcd store is reported missing,
 * with the install hint, when etcd is not on PATH; against real clusters (etcd only when
 * installed), the cluster handle finds one leader, serves puts, batches and gets through
 * each member, reports terms and applied indexes, replaces a killed leader, restarts a
 * member, adds a fourth member that catches up; the load processes measure a window.
 * About 15 s (both clusters).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { type BenchCluster, settledLeader, waitUntil } from "../../bench/cluster/cluster.js";
import { EtcdCluster, etcdOnPath } from "../../bench/cluster/etcd-cluster.js";
import { KvCluster } from "../../bench/cluster/kv-cluster.js";
import { LOAD_ERRORS, runLoad } from "../../bench/cluster/load.js";
import { loadEtcdCluster } from "../../bench/stores/cluster.js";

const enc = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) =>
  b === undefined ? undefined : Buffer.from(b).toString();

test("without etcd on PATH, the etcd store does not load and says how to install it", () => {
  const path = process.env["PATH"];
  process.env["PATH"] = "/nonexistent";
  try {
    assert.equal(etcdOnPath(), undefined);
    assert.throws(
      () => loadEtcdCluster(),
      /skipped: etcd is not on PATH.*apt-get install etcd-server/,
    );
  } finally {
    process.env["PATH"] = path;
  }
});

async function exercise(c: BenchCluster): Promise<void> {
  const leader = await settledLeader(c);
  assert.ok(c.names().includes(leader), leader);
  const states = await Promise.all(c.names().map((n) => c.state(n)));
  assert.equal(states.filter((s) => s.role === "leader").length, 1);
  assert.equal(states.find((s) => s.role === "leader")?.name, leader);
  const follower = c.names().find((n) => n !== leader)!;
  await c.client(follower).put(enc("key_000000000001"), enc("one"));
  await c
    .client(leader)
    .putBatch([enc("key_000000000002"), enc("key_000000000003")], [enc("two"), enc("three")]);
  for (const n of c.names()) {
    assert.equal(text(await c.client(n).get(enc("key_000000000001"))), "one");
    assert.equal(text(await c.client(n).get(enc("key_000000000003"))), "three");
  }

  const row = await runLoad(
    {
      kind: c.kind,
      endpoints: [c.clientAddress(leader)],
      warmupMs: 100,
      durationMs: 400,
      keySpace: 4,
      scanRows: 10,
      valueSize: 100,
      timeoutMs: 5000,
    },
    { label: "", op: "scan", procs: 2, inFlight: 3 },
    1,
  );
  assert.equal(row.values?.[LOAD_ERRORS], 0, row.description);
  assert.ok(row.latency !== undefined && row.latency.samples > 0);
  // Every scan is [key_0, key_10): the 3 keys written; the figure counts rows, not calls.
  assert.equal(row.ops, 3 * row.latency.samples);

  const term = Math.max(...states.map((s) => s.term));
  await c.kill(leader);
  assert.equal(c.running(leader), false);
  const next = await settledLeader(c);
  assert.notEqual(next, leader);
  assert.ok((await c.state(next)).term > term);
  await c.restart(leader);
  await c.client(next).put(enc("key_000000000004"), enc("four"));

  await c.add("n4");
  const target = (await c.state(next)).appliedIndex;
  await waitUntil(async () => (await c.state("n4")).appliedIndex >= target, "n4 in sync", 30_000);
  assert.equal(text(await c.client("n4").get(enc("key_000000000004"))), "four");
  assert.equal((await c.state("n4")).leader, (await c.state(next)).leader);
}

test("a kv-engine cluster through the benchmark's handle", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "kv-bench-cluster-"));
  const c = await KvCluster.start(dir);
  try {
    await exercise(c);
  } finally {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an etcd cluster through the benchmark's handle", {
  timeout: 120_000,
  skip: etcdOnPath() === undefined ? "etcd is not on PATH" : false,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "kv-bench-etcd-"));
  const c = await EtcdCluster.start(dir);
  try {
    await exercise(c);
  } finally {
    await c.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
