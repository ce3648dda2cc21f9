import assert from "node:assert/strict";
import { test } from "node:test";
import { Progress } from "../../src/raft/progress.js";

test("probe sends one append and waits; replicate streams within the window", () => {
  const p = new Progress(5, 2, 1000, false);
  assert.equal(p.state, "probe");
  p.sentEntries(3, 30);
  assert.equal(p.isPaused(), true);
  assert.equal(p.next, 5, "probe does not advance next");
  assert.equal(p.maybeUpdate(7), true);
  p.becomeReplicate();
  assert.equal(p.next, 8);
  p.sentEntries(2, 20);
  assert.equal(p.next, 10);
  assert.equal(p.isPaused(), false);
  p.sentEntries(1, 10);
  assert.equal(p.isPaused(), true, "two messages in flight fill the window");
  p.inflights.freeLE(9);
  assert.equal(p.maybeUpdate(9), true);
  assert.equal(p.isPaused(), false);
});

test("rejections: stale ones are ignored, fresh ones move next back (not below match + 1)", () => {
  const p = new Progress(11, 10, 1000, false);
  p.match = 5;
  p.becomeReplicate();
  p.next = 11;
  assert.equal(p.maybeDecrTo(4, 4), false, "rejection of an append below match: stale");
  assert.equal(p.maybeDecrTo(9, 3), true);
  assert.equal(p.next, 6, "replicate falls back to match + 1");
  const q = new Progress(11, 10, 1000, false);
  q.match = 2;
  assert.equal(q.maybeDecrTo(9, 5), false, "probe: not the append just sent (next - 1 = 10)");
  assert.equal(q.maybeDecrTo(10, 5), true);
  assert.equal(q.next, 6, "hint + 1");
  assert.equal(q.maybeDecrTo(5, 0), true);
  assert.equal(q.next, 3, "never below match + 1");
});

test("snapshot: paused until acknowledged; back to probe after the snapshot's index", () => {
  const p = new Progress(3, 10, 1000, false);
  p.becomeSnapshot(20);
  assert.equal(p.isPaused(), true);
  assert.equal(p.next, 21);
  p.becomeProbe();
  assert.equal(p.next, 21, "probe from after the snapshot");
  assert.throws(() => {
    const s = new Progress(3, 10, 1000, false);
    s.becomeSnapshot(5);
    s.sentEntries(1, 1);
  }, /snapshot/);
});

test("the commit index is sent once to a lagging peer", () => {
  const p = new Progress(6, 10, 1000, false);
  p.sentCommit = 3;
  assert.equal(p.canBumpCommit(5), true);
  p.sentCommit = 5;
  assert.equal(p.canBumpCommit(5), false);
  assert.equal(p.canBumpCommit(9), false, "the peer cannot take a commit beyond next - 1 = 5");
});
