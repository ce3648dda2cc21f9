/**
 * No write waits for a leader that is gone (docs/cluster.md, "Failover"): a write made
 * while no leader is known waits for one and applies; with no majority up it fails as not
 * proposed after about one election timeout, well before its deadline; a write handed to
 * a leader is answered OUTCOME_UNKNOWN as soon as its member learns that the leader
 * changed, or that the connection to it broke, not at the call's deadline.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { bytes, TestCluster, TICK_MS, text } from "./support/test-cluster.js";

const ELECTION_TICKS = 10;
/** Long deadlines: every answer below must come well before them. */
const member = { electionTicks: ELECTION_TICKS, proposalTimeoutMs: 20_000 };
const HOLD_MS = 2 * ELECTION_TICKS * TICK_MS;

async function timed<T>(p: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const started = Date.now();
  try {
    const value = await p;
    return { ms: Date.now() - started, value };
  } catch (error) {
    return { ms: Date.now() - started, error };
  }
}

describe("a write when the leader is gone", () => {
  test("made before any leader is known, it waits for the election and applies", async (t) => {
    const c = await TestCluster.start({ size: 3, member });
    t.after(() => c.close());
    const s = c.store("n1");
    assert.equal(s.status().leader, 0, "no leader yet");
    const r = await timed(s.put(bytes("early"), bytes("v")));
    assert.equal(r.error, undefined);
    await c.waitForLeader();
    assert.equal(text(await c.store("n2").get(bytes("early"))), "v");
  });

  test("with no majority up, it fails as not proposed after about one election timeout", async (t) => {
    const c = await TestCluster.start({ size: 3, member });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const follower = ["n1", "n2", "n3"].find((n) => n !== leader.name)!;
    const other = ["n1", "n2", "n3"].find((n) => n !== leader.name && n !== follower)!;
    await c.stop(other);
    await c.stop(leader.name);
    const r = await timed(c.store(follower).put(bytes("k"), bytes("v")));
    assert.ok(isKvError(r.error, "UNAVAILABLE"), String(r.error));
    assert.match(String(r.error), /not proposed/);
    assert.ok(r.ms >= HOLD_MS - 50 && r.ms < 5_000, `answered after ${r.ms} ms`);
    // Nothing was proposed: once the others are back, the key is absent.
    await c.startMember(other);
    await c.startMember(leader.name);
    await c.waitForLeader();
    assert.equal(await TestCluster.retry(() => c.store(follower).get(bytes("k"))), undefined);
  });

  test("handed to a leader that is then cut off, it is answered when the leader changes", async (t) => {
    const c = await TestCluster.start({ size: 3, member });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const follower = ["n1", "n2", "n3"].find((n) => n !== leader.name)!;
    // The leader hears nothing and says nothing: the forwarded write is lost silently.
    c.network.isolate(leader.memberId);
    const r = await timed(c.store(follower).put(bytes("k"), bytes("v")));
    assert.ok(isKvError(r.error, "OUTCOME_UNKNOWN"), String(r.error));
    assert.match(String(r.error), /leader changed/);
    assert.ok(r.ms < 10_000, `answered after ${r.ms} ms (deadline 20,000)`);
    c.network.heal();
  });

  test("handed to a leader whose connection breaks, it is answered at once", async (t) => {
    const c = await TestCluster.start({ size: 3, member });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const follower = ["n1", "n2", "n3"].find((n) => n !== leader.name)!;
    const f = c.store(follower);
    await TestCluster.retry(() => f.put(bytes("warm"), bytes("up")));
    // Forwarded, then the leader stops before the message is delivered.
    const pending = timed(f.put(bytes("k"), bytes("v")));
    await c.crash(leader.name);
    const r = await pending;
    assert.ok(isKvError(r.error, "OUTCOME_UNKNOWN"), String(r.error));
    assert.match(String(r.error), /connection to the leader/);
    assert.ok(r.ms < HOLD_MS, `answered after ${r.ms} ms`);
    // A new write is held for the next leader and applies; on a loaded machine the
    // election may outlast one hold, and the write then fails "not proposed", safe to retry.
    for (let attempt = 1; ; attempt++) {
      const next = await timed(f.put(bytes("k2"), bytes("v2")));
      if (next.error === undefined) break;
      assert.ok(attempt < 20, `no leader after ${attempt} holds`);
      assert.ok(isKvError(next.error, "UNAVAILABLE"), String(next.error));
      assert.match(String(next.error), /not proposed/);
    }
    assert.equal(text(await f.get(bytes("k2"))), "v2");
  });
});
