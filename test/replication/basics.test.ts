/**
 * A three-member cluster in one process: election, writes and reads on every member,
 * CAS, scans that never show internal keys, restart from the members' own data.
 */
import assert from "node:assert/strict";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { RAFT_DIR } from "../../src/replication/node-dir.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

describe("replicated store basics", () => {
  test("three members elect a leader; writes on any member are read on every member", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    await c.waitForLeader();
    const [a, b, d] = ["n1", "n2", "n3"].map((n) => c.store(n));
    await TestCluster.retry(() => a!.put(bytes("k1"), bytes("v1")));
    await TestCluster.retry(() => b!.put(bytes("k2"), bytes("v2")));
    const batch = d!.batch().put("k3", "v3").delete("k1");
    await TestCluster.retry(() => d!.write(batch));
    for (const s of c.running()) {
      assert.equal(await s.get(bytes("k1")), undefined, s.name);
      assert.equal(text(await s.get(bytes("k2"))), "v2", s.name);
      assert.equal(text(await s.get(bytes("k3"))), "v3", s.name);
    }
    const rows = await collect(b!.iterator({}));
    assert.deepEqual(rows, [
      ["k2", "v2"],
      ["k3", "v3"],
    ]);
    // The members publish their client addresses; the leader's is the hint.
    await c.waitForApplied(a!.status().commit);
    const leader = c.leader()!;
    for (const s of c.running()) {
      const m = s.members().find((x) => x.id === leader.memberId);
      assert.ok(m !== undefined);
    }
  });

  test("compare-and-swap is decided at apply and answers with the current value", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    await c.waitForLeader();
    const s = c.store("n2");
    let r = await TestCluster.retry(() => s.compareAndSwap(bytes("c"), undefined, bytes("1")));
    assert.deepEqual([r.applied, text(r.current)], [true, "1"]);
    r = await s.compareAndSwap(bytes("c"), undefined, bytes("2"));
    assert.deepEqual([r.applied, text(r.current)], [false, "1"]);
    r = await c.store("n3").compareAndSwap(bytes("c"), bytes("1"), undefined);
    assert.deepEqual([r.applied, r.current], [true, undefined]);
    assert.equal(await c.store("n1").get(bytes("c")), undefined);
  });

  test("scans map ranges into the user key space and never return internal keys", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    await c.waitForLeader();
    const s = c.store("n1");
    for (const k of ["a", "b", "c", "\u0000x", "\u00ff"])
      await TestCluster.retry(() => s.put(bytes(k), bytes(k)));
    const all = await collect(s.iterator({}));
    assert.deepEqual(
      all.map(([k]) => k),
      ["\u0000x", "a", "b", "c", "\u00ff"].map((k) => Buffer.from(k).toString()),
    );
    assert.deepEqual(
      (await collect(s.iterator({ gte: bytes("b"), lt: bytes("c") }))).map(([k]) => k),
      ["b"],
    );
    assert.deepEqual(
      (await collect(s.iterator({ gte: bytes("a"), limit: 2 }))).map(([k]) => k),
      ["a", "b"],
    );
    // Serializable scans read the same local store.
    assert.equal((await collect(s.iterator({ serializable: true }))).length, 5);
  });

  test("members restarted from their data keep everything and elect again", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    await c.waitForLeader();
    for (let i = 0; i < 20; i++)
      await TestCluster.retry(() => c.store("n1").put(bytes(`k${i}`), bytes(`v${i}`)));
    const ids = c.running().map((s) => [s.name, s.memberId, s.clusterId]);
    for (const n of ["n1", "n2", "n3"]) await c.stop(n);
    for (const n of ["n1", "n2", "n3"]) await c.startMember(n);
    assert.deepEqual(
      c.running().map((s) => [s.name, s.memberId, s.clusterId]),
      ids,
    );
    await c.waitForLeader();
    for (const s of c.running()) {
      assert.equal(text(await TestCluster.retry(() => s.get(bytes("k19")))), "v19");
    }
  });

  test("on the real file system: members write, restart from their directories, and agree", async (t) => {
    const c = await TestCluster.start({ size: 3, realFs: true });
    t.after(() => c.close());
    await c.waitForLeader();
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        TestCluster.retry(() => c.store(`n${(i % 3) + 1}`).put(bytes(`k${i}`), bytes(`v${i}`))),
      ),
    );
    // The Raft log is preallocated by default (options.ts): its segment is zeros well past
    // the few KiB of records.
    for (const n of ["n1", "n2", "n3"]) {
      const raftDir = join(c.slot(n).dataDir, RAFT_DIR);
      const segments = readdirSync(raftDir).filter((f) => f.endsWith(".log"));
      assert.ok(segments.length > 0, `${n}: no segment in ${raftDir}`);
      const size = Math.max(...segments.map((f) => statSync(join(raftDir, f)).size));
      assert.ok(size >= 1 << 19, `${n}: segment of ${size} bytes, not preallocated`);
    }
    for (const n of ["n1", "n2", "n3"]) await c.stop(n);
    for (const n of ["n1", "n2", "n3"]) await c.startMember(n);
    await c.waitForLeader();
    for (const s of c.running()) {
      assert.equal(text(await TestCluster.retry(() => s.get(bytes("k49")))), "v49");
    }
  });

  test("five members keep serving with two of them down, the leader one of them", async (t) => {
    const c = await TestCluster.start({ size: 5 });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    await TestCluster.retry(() => leader.put(bytes("a"), bytes("1")));
    const follower = c.running().find((s) => s !== leader)?.name;
    assert.ok(follower !== undefined);
    await c.stop(follower);
    await TestCluster.retry(() => leader.put(bytes("b"), bytes("2")));
    await c.stop(leader.name);
    const fresh = await c.waitForLeader();
    assert.notEqual(fresh.name, leader.name);
    await TestCluster.retry(() => fresh.put(bytes("c"), bytes("3")));
    // A third member down: no majority, no write.
    const third = c.running().find((s) => s !== fresh)?.name;
    assert.ok(third !== undefined);
    await c.stop(third);
    await assert.rejects(
      fresh.put(bytes("d"), bytes("4"), { timeoutMs: 300 }),
      (err) => isKvError(err, "OUTCOME_UNKNOWN") || isKvError(err, "UNAVAILABLE"),
    );
    for (const n of [leader.name, follower]) await c.startMember(n);
    for (const s of c.running()) {
      assert.equal(text(await TestCluster.retry(() => s.get(bytes("b")))), "2");
      assert.equal(text(await TestCluster.retry(() => s.get(bytes("c")))), "3");
    }
  });

  test("oversized and malformed writes are refused, nothing proposed", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    await c.waitForLeader();
    const big = new Uint8Array(5 << 20);
    await assert.rejects(c.store("n2").put(bytes("k"), big), (err) =>
      isKvError(err, "RESOURCE_EXHAUSTED"),
    );
    await assert.rejects(c.store("n2").put(new Uint8Array(0), bytes("v")), (err) =>
      isKvError(err, "INVALID_ARGUMENT"),
    );
  });
});

async function collect(it: {
  nextBatch(n: number): Promise<Array<readonly [Uint8Array, Uint8Array]>>;
  close(): void;
}) {
  const out: Array<[string, string]> = [];
  for (;;) {
    const rows = await it.nextBatch(2);
    for (const [k, v] of rows) out.push([Buffer.from(k).toString(), Buffer.from(v).toString()]);
    if (rows.length < 2) break;
  }
  it.close();
  return out;
}
