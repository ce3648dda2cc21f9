/**
 * Leases on a cluster (ReplicatedEtcdBackend over in-process members): expiry is decided
 * once, in the apply, so every member deletes the same keys at the same revision; a lease
 * kept alive through a member that survives outlives a leader kill; one that is not
 * expires within the bound (TTL + 2 x the longest election timeout after its
 * last acknowledged keep-alive); leases survive a snapshot install.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { ReplicatedEtcdBackend } from "../../src/cluster/etcd-backend.js";
import type { MvccEvent } from "../../src/mvcc/changes.js";
import {
  LeaseGrantRequestSchema,
  LeaseRevokeRequestSchema,
  LeaseTimeToLiveRequestSchema,
  PutRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { ReplicatedStore } from "../../src/replication/replicated-store.js";
import { TestCluster, TICK_MS } from "../replication/support/test-cluster.js";
import { waitFor } from "../support/wait-for.js";

const b = (s: string) => Uint8Array.from(Buffer.from(s));
const EMPTY = new Uint8Array(0);

async function grant(be: ReplicatedEtcdBackend, ttl: number): Promise<bigint> {
  const r = await TestCluster.retry(() =>
    be.leaseGrant(create(LeaseGrantRequestSchema, { TTL: BigInt(ttl) })),
  );
  return r.ID;
}

async function putOn(be: ReplicatedEtcdBackend, key: string, lease: bigint): Promise<number> {
  const r = await TestCluster.retry(() =>
    be.put(create(PutRequestSchema, { key: b(key), value: b("v"), lease })),
  );
  return Number(r.header!.revision);
}

/** The key's live value on `s`'s applied state (serializable), or undefined. */
async function local(s: ReplicatedStore, key: string): Promise<Uint8Array | undefined> {
  const v = await s.view({ serializable: true });
  try {
    return (await v.range(b(key), EMPTY)).kvs[0]?.value;
  } finally {
    v.release();
  }
}

async function deletions(s: ReplicatedStore, from: number): Promise<Array<[string, number]>> {
  const out: Array<[string, number]> = [];
  const events: AsyncIterable<MvccEvent> = s.localMvcc()!.changes(from);
  for await (const e of events) {
    if (e.type === "delete") out.push([Buffer.from(e.kv.key).toString(), e.revision]);
  }
  return out;
}

function follower(c: TestCluster, leader: ReplicatedStore): ReplicatedStore {
  return c.running().find((s) => s !== leader)!;
}

describe("leases on a cluster", () => {
  test("expiry deletes the keys at the same revision on every member", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const be = new ReplicatedEtcdBackend(follower(c, leader));
    const id = await grant(be, 1);
    const first = await putOn(be, "e/b", id);
    await putOn(be, "e/a", id);
    await putOn(be, "e/other", 0n);
    await waitFor(
      async () => (await local(leader, "e/a")) === undefined,
      "the lease expired",
      15_000,
    );
    await c.waitForApplied(leader.status().commit);
    const seen = await Promise.all(c.running().map((s) => deletions(s, first)));
    assert.equal(seen[0]!.length, 2);
    assert.deepEqual(
      seen[0]!.map(([k]) => k),
      ["e/a", "e/b"],
    );
    assert.equal(seen[0]![0]![1], seen[0]![1]![1], "one revision for the lease's keys");
    for (const s of seen) assert.deepEqual(s, seen[0]);
    for (const s of c.running()) assert.notEqual(await local(s, "e/other"), undefined);
  });

  test("leader kill: a lease kept alive lives on; one not kept alive expires within the bound", async (t) => {
    const electionTicks = 25;
    const c = await TestCluster.start({ size: 3, member: { electionTicks } });
    t.after(() => c.close());
    const ttlMs = 2000;
    const bound = ttlMs + 2 * (2 * electionTicks * TICK_MS);
    const leader = await c.waitForLeader();
    const survivor = follower(c, leader);
    const be = new ReplicatedEtcdBackend(survivor);
    const kept = await grant(be, ttlMs / 1000);
    const grantSent = performance.now();
    const dropped = await grant(be, ttlMs / 1000);
    await putOn(be, "k/kept", kept);
    await putOn(be, "k/dropped", dropped);
    const droppedAcked = performance.now();
    let lastAck = performance.now();
    let keeping = true;
    t.after(() => {
      keeping = false;
    });
    const keeper = (async () => {
      while (keeping) {
        const r = await be.leaseKeepAlive(kept).catch(() => undefined);
        if (r !== undefined && r.TTL > 0n) lastAck = performance.now();
        await new Promise((resolve) => setTimeout(resolve, ttlMs / 4));
      }
    })();
    const leaderName = [...c.slots.values()].find((s) => s.store === leader)!.name;
    await c.stop(leaderName);
    await waitFor(
      async () => (await local(survivor, "k/dropped")) === undefined,
      "dropped expired",
      15_000,
    );
    const droppedOverrun = performance.now() - droppedAcked - ttlMs;
    // Only the leader counts time, never faster than its clock: no lease expires early.
    assert.ok(performance.now() - grantSent >= ttlMs, "expired before its TTL");
    await new Promise((resolve) => setTimeout(resolve, 2 * ttlMs));
    assert.notEqual(await local(survivor, "k/kept"), undefined, "the kept-alive lease lives");
    keeping = false;
    await keeper;
    const stoppedAt = lastAck;
    await waitFor(
      async () => (await local(survivor, "k/kept")) === undefined,
      "kept expired",
      15_000,
    );
    const keptOverrun = performance.now() - stoppedAt - ttlMs;
    t.diagnostic(
      `overrun past TTL: ${droppedOverrun.toFixed(0)} ms through a leader kill, ${keptOverrun.toFixed(0)} ms without (bound ${bound - ttlMs} ms)`,
    );
    assert.ok(
      droppedOverrun <= bound - ttlMs,
      `through the kill: ${droppedOverrun} ms past the TTL`,
    );
    assert.ok(keptOverrun <= bound - ttlMs, `after the last keep-alive: ${keptOverrun} ms`);
  });

  test("leases survive a snapshot install and a restart", async (t) => {
    const c = await TestCluster.start({
      size: 3,
      member: { snapshotEntries: 40, catchUpEntries: 10 },
    });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const be = new ReplicatedEtcdBackend(leader);
    const id = await grant(be, 600);
    await putOn(be, "s/a", id);
    await c.stop("n3");
    for (let i = 0; i < 120; i++) await putOn(be, `s/x${i}`, i % 2 === 0 ? id : 0n);
    await waitFor(() => c.waitForLeader().then((l) => l.status().snapshotIndex > 60), "a snapshot");
    const n3 = await c.startMember("n3");
    await waitFor(
      () => c.slot("n3").events.some((e) => e.type === "snapshot-installed"),
      "a snapshot installed on n3",
    );
    await c.waitForApplied((await c.waitForLeader()).status().commit);
    const table = n3.leases()!;
    assert.equal(table.get(id)?.ttl, 600);
    assert.equal(table.keysOf(id).length, 61);
    await c.stop("n3");
    const again = await c.startMember("n3");
    assert.equal(again.leases()!.keysOf(id).length, 61, "reloaded at restart");
    const ttl = await TestCluster.retry(() =>
      new ReplicatedEtcdBackend(again).leaseTimeToLive(
        create(LeaseTimeToLiveRequestSchema, { ID: id, keys: true }),
      ),
    );
    assert.equal(ttl.grantedTTL, 600n);
    assert.equal(ttl.keys.length, 61);
    await TestCluster.retry(() =>
      new ReplicatedEtcdBackend(again).leaseRevoke(create(LeaseRevokeRequestSchema, { ID: id })),
    );
    await c.waitForApplied((await c.waitForLeader()).status().commit);
    for (const s of c.running()) {
      assert.equal(await local(s, "s/a"), undefined);
      assert.equal(await local(s, "s/x0"), undefined);
      assert.notEqual(await local(s, "s/x1"), undefined);
    }
  });
});
