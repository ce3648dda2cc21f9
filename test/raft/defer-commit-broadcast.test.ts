import assert from "node:assert/strict";
import { test } from "node:test";
import type { Message } from "../../src/raft/types.js";
import { bytes, Cluster } from "./support/cluster.js";

const THREE = { voters: [1, 2, 3], learners: [] };

/** A 3-node group led by 1, stable; `sent` collects every message sent from then on. */
function group(deferCommitBroadcast: boolean): { c: Cluster; sent: Message[] } {
  const c = new Cluster();
  c.add([1, 2, 3], THREE, { deferCommitBroadcast, heartbeatTick: 1, electionTick: 10 });
  c.raw(1).campaign();
  c.stabilize();
  const sent: Message[] = [];
  const send = c.send.bind(c);
  c.send = (msgs) => {
    sent.push(...msgs);
    send(msgs);
  };
  return { c, sent };
}

const emptyAppends = (sent: readonly Message[]) =>
  sent.filter((m) => m.type === "app" && m.entries.length === 0).length;

test("without deferCommitBroadcast a commit is told at once: an empty append per follower", () => {
  const { c, sent } = group(false);
  c.raw(1).propose(bytes("a"));
  c.stabilize();
  assert.equal(emptyAppends(sent), 2);
  for (const id of [1, 2, 3]) assert.equal(c.get(id).appliedIndex, 2);
});

test("with deferCommitBroadcast a commit rides on the next append or heartbeat", () => {
  const { c, sent } = group(true);
  // A new leader's first entry is told at once (pendingConfIndex covers it).
  for (const id of [1, 2, 3]) assert.equal(c.get(id).appliedIndex, 1);
  c.raw(1).propose(bytes("a"));
  c.stabilize();
  assert.equal(emptyAppends(sent), 0);
  assert.equal(c.get(1).appliedIndex, 2);
  assert.deepEqual([c.get(2).appliedIndex, c.get(3).appliedIndex], [1, 1]);
  // The next write's append carries the commit of the previous one.
  c.raw(1).propose(bytes("b"));
  c.stabilize();
  assert.equal(emptyAppends(sent), 0);
  assert.deepEqual([c.get(2).appliedIndex, c.get(3).appliedIndex], [2, 2]);
  // Once writes stop, the heartbeat carries it.
  c.tick(1);
  c.stabilize();
  for (const id of [1, 2, 3]) assert.equal(c.get(id).appliedIndex, 3);
});

test("with deferCommitBroadcast a committed membership change is told at once", () => {
  const { c, sent } = group(true);
  c.raw(1).proposeConfChange({ type: "addLearner", nodeId: 4, context: new Uint8Array(0) });
  c.stabilize([1, 2, 3]);
  assert.equal(emptyAppends(sent.filter((m) => m.to !== 4)), 2);
  for (const id of [1, 2, 3]) assert.equal(c.get(id).appliedIndex, 2);
  // Normal entries after it are deferred again.
  c.raw(1).propose(bytes("a"));
  c.stabilize([1, 2, 3]);
  assert.deepEqual([c.get(2).appliedIndex, c.get(3).appliedIndex], [2, 2]);
});

test("with deferCommitBroadcast the follower that forwarded an entry is told its commit at once", () => {
  const { c, sent } = group(true);
  // Follower 2 forwards a proposal; the leader appends it, it commits.
  c.raw(2).propose(bytes("a"));
  c.stabilize();
  // 2 waits on that entry: it learns the commit without a heartbeat; 3 does not need to.
  assert.equal(c.get(1).appliedIndex, 2);
  assert.equal(c.get(2).appliedIndex, 2);
  assert.equal(c.get(3).appliedIndex, 1);
  assert.deepEqual(
    sent.filter((m) => m.type === "app" && m.entries.length === 0).map((m) => m.to),
    [2],
  );
  // Once told, it is not told again: the leader's own next write is deferred for both.
  c.raw(1).propose(bytes("b"));
  c.stabilize();
  assert.equal(emptyAppends(sent), 1);
  assert.deepEqual([c.get(2).appliedIndex, c.get(3).appliedIndex], [2, 2]);
});

test("with deferCommitBroadcast tellCommit sends the untold commit at once, only to followers lacking it", () => {
  const { c, sent } = group(true);
  c.raw(1).propose(bytes("a"));
  c.stabilize();
  assert.deepEqual([c.get(2).appliedIndex, c.get(3).appliedIndex], [1, 1]);
  assert.equal(c.raw(1).commitUntold(), true);
  // A follower knows no untold commit; asking it changes nothing.
  assert.equal(c.raw(2).commitUntold(), false);
  c.raw(2).tellCommit();
  c.stabilize();
  assert.equal(emptyAppends(sent), 0);
  c.raw(1).tellCommit();
  c.stabilize();
  assert.equal(emptyAppends(sent), 2);
  for (const id of [1, 2, 3]) assert.equal(c.get(id).appliedIndex, 2);
  assert.equal(c.raw(1).commitUntold(), false);
  // Told once: asking again sends nothing.
  c.raw(1).tellCommit();
  c.stabilize();
  assert.equal(emptyAppends(sent), 2);
});
