/**
 * The node driver keeps the node talking while a Ready is being persisted: with every
 * member's Raft fsync held for several election timeouts, heartbeats and their responses
 * still flow (takeMessages), so nobody campaigns and the leader keeps its quorum; once the
 * disks answer, the write held behind them commits.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { GatedFileSystem } from "../support/gated-file-system.js";
import { waitFor } from "../support/wait-for.js";
import { bytes, TestCluster, TICK_MS, text } from "./support/test-cluster.js";

describe("node driver", () => {
  test("heartbeats never wait on the disk: a held fsync on every member causes no election", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const gates = new Map<string, GatedFileSystem>();
    for (const [name, slot] of c.slots) {
      await c.stop(name);
      const gate = new GatedFileSystem(slot.fs as MemoryFileSystem, (path) =>
        path.includes("/raft/"),
      );
      gates.set(name, gate);
      slot.fs = gate;
      await c.startMember(name);
    }
    const leader = await c.waitForLeader();
    await TestCluster.retry(() => leader.put(bytes("k"), bytes("before")));
    await c.waitForApplied(leader.status().commit);
    const before = c.running().map((s) => [s.name, s.status().term, s.clusterStats().elections]);
    for (const g of gates.values()) g.hold();
    const write = leader.put(bytes("k"), bytes("after"));
    await waitFor(() => [...gates.values()].every((g) => g.waiting > 0), "every member persisting");
    // Four times the longest election timeout (2 * electionTicks ticks).
    await new Promise((r) => setTimeout(r, 4 * 2 * 6 * TICK_MS));
    const after = c.running().map((s) => [s.name, s.status().term, s.clusterStats().elections]);
    assert.deepEqual(after, before, "no member campaigned while the disks were slow");
    assert.equal(c.leader(), leader);
    for (const g of gates.values()) g.release();
    await write;
    assert.equal(text(await leader.get(bytes("k"))), "after");
  });
});

describe("commits told to followers", () => {
  test("a lone write reaches the followers' state machines well before the next heartbeat", async (t) => {
    // Heartbeats every 59 ticks (about 1.2 s): a follower that learnt a commit only with
    // the next heartbeat would apply a lone write about 0.6 s after it, on average.
    const c = await TestCluster.start({
      size: 3,
      member: { electionTicks: 60, heartbeatTicks: 59 },
    });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    await TestCluster.retry(() => leader.put(bytes("k"), bytes("first")));
    await c.waitForApplied(leader.status().commit);
    const followers = c.running().filter((s) => s !== leader);
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 50 + 97 * i));
      await leader.put(bytes("k"), bytes(`v${i}`));
      const index = leader.status().applied;
      const started = Date.now();
      await waitFor(
        () => followers.every((f) => f.status().applied >= index),
        `followers applied ${index}`,
        3_000,
      );
      const lag = Date.now() - started;
      assert.ok(lag < 300, `write ${i}: the followers applied it ${lag} ms after the leader`);
    }
  });
});
