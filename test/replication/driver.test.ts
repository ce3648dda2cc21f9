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
