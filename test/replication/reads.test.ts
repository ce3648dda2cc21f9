/**
 * Linearizable reads: served only after a majority confirmed the read index and this
 * member applied through it; a member cut off from the majority never answers one;
 * concurrent reads share rounds; serializable reads are local.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { waitFor } from "../support/wait-for.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

describe("replicated reads", () => {
  test("a leader cut off from the majority never answers a linearizable read", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const old = await c.waitForLeader();
    await TestCluster.retry(() => old.put(bytes("k"), bytes("1")));
    await c.waitForApplied(old.status().commit);
    c.network.isolate(old.memberId);
    // The rest elect a new leader and take a newer write.
    const others = c.running().filter((s) => s !== old);
    await waitFor(() => others.some((s) => s.status().role === "leader"), "a new leader");
    const fresh = others.find((s) => s.status().role === "leader")!;
    await TestCluster.retry(() => fresh.put(bytes("k"), bytes("2")));
    // The old leader may still believe it leads (until its quorum check); either way it
    // must not answer from its stale state.
    await assert.rejects(old.get(bytes("k"), { timeoutMs: 300 }), (err) =>
      isKvError(err, "UNAVAILABLE"),
    );
    const it = old.iterator({ timeoutMs: 300 });
    await assert.rejects(it.nextBatch(10), (err) => isKvError(err, "UNAVAILABLE"));
    it.close();
    // A serializable read answers locally, stale.
    assert.equal(text(await old.get(bytes("k"), { serializable: true })), "1");
    c.network.heal();
    assert.equal(text(await TestCluster.retry(() => old.get(bytes("k")))), "2");
  });

  test("a follower waits until it applied the read index before it reads", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const follower = c.running().find((s) => s !== leader)!;
    await TestCluster.retry(() => leader.put(bytes("k"), bytes("old")));
    await c.waitForApplied(leader.status().commit);
    // Appends to the follower are lost for a while: it learns nothing new to apply, but
    // heartbeats (and with them the read rounds) still get through.
    let starve = true;
    c.network.onBatch = (_from, to, msgs) =>
      starve && to === follower.memberId ? msgs.filter((m) => m.type !== "app") : msgs;
    await leader.put(bytes("k"), bytes("new"));
    const read = follower.get(bytes("k"));
    let answered = false;
    void read.then(() => {
      answered = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(answered, false, "the follower answered before applying the read index");
    assert.equal(text(await follower.get(bytes("k"), { serializable: true })), "old");
    starve = false;
    assert.equal(text(await read), "new");
  });

  test("concurrent linearizable reads share read rounds", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    await TestCluster.retry(() => leader.put(bytes("k"), bytes("v")));
    for (const s of c.running()) {
      const before = s.clusterStats().readRounds;
      const values = await Promise.all(
        Array.from({ length: 64 }, () => TestCluster.retry(() => s.get(bytes("k")))),
      );
      assert.ok(values.every((v) => text(v) === "v"));
      const rounds = s.clusterStats().readRounds - before;
      assert.ok(rounds >= 1 && rounds <= 8, `${s.name}: ${rounds} rounds for 64 reads`);
    }
  });

  test("a write acknowledged by a member is visible to that member's serializable reads at once", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    await c.waitForLeader();
    const misses: string[] = [];
    await Promise.all(
      c.running().map(async (s) => {
        for (let i = 0; i < 30; i++) {
          const k = bytes(`${s.name}-${i}`);
          await TestCluster.retry(() => s.put(k, bytes(String(i))));
          const got = await s.get(k, { serializable: true });
          if (text(got) !== String(i)) misses.push(`${s.name} ${i}: ${text(got)}`);
        }
      }),
    );
    assert.deepEqual(misses, []);
  });
});
