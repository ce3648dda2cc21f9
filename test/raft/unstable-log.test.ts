import assert from "node:assert/strict";
import { test } from "node:test";
import type { Snapshot } from "../../src/raft/types.js";
import { UnstableLog } from "../../src/raft/unstable-log.js";
import { entry } from "./support/nodes.js";

const snap = (index: number, term: number): Snapshot => ({
  metadata: { index, term, confState: { voters: [1], learners: [] } },
  data: new Uint8Array(0),
});

const indexes = (u: UnstableLog) => u.nextEntries().map((e) => `${e.term}/${e.index}`);

test("appending after the end extends; before the offset replaces; in between truncates", () => {
  const u = new UnstableLog(5);
  u.truncateAndAppend([entry(1, 5), entry(1, 6)]);
  assert.deepEqual(indexes(u), ["1/5", "1/6"]);
  u.truncateAndAppend([entry(1, 7)]);
  assert.equal(u.lastIndex(), 7);
  u.truncateAndAppend([entry(2, 6), entry(2, 7), entry(2, 8)]);
  assert.deepEqual(indexes(u), ["1/5", "2/6", "2/7", "2/8"]);
  u.truncateAndAppend([entry(3, 4)]);
  assert.equal(u.offset, 4);
  assert.deepEqual(indexes(u), ["3/4"]);
});

test("the input array is never kept or mutated", () => {
  const u = new UnstableLog(1);
  const input = [entry(1, 1)];
  u.truncateAndAppend(input);
  u.truncateAndAppend([entry(1, 2)]);
  assert.equal(input.length, 1);
});

test("handed-out entries become stable at advance unless replaced meanwhile", () => {
  const u = new UnstableLog(1);
  u.truncateAndAppend([entry(1, 1), entry(1, 2), entry(1, 3)]);
  u.acceptInProgress();
  assert.equal(u.hasNextEntries(), false);
  u.truncateAndAppend([entry(1, 4)]);
  assert.deepEqual(indexes(u), ["1/4"], "only the new entry is next");
  u.stableInProgress();
  assert.equal(u.offset, 4);
  assert.equal(u.length, 1);

  // A replacement while in progress: the replaced part goes into the next Ready again.
  const v = new UnstableLog(1);
  v.truncateAndAppend([entry(1, 1), entry(1, 2), entry(1, 3)]);
  v.acceptInProgress();
  v.truncateAndAppend([entry(2, 2)]);
  assert.equal(v.inProgress, 2);
  assert.deepEqual(indexes(v), ["2/2"]);
  v.stableInProgress();
  assert.equal(v.offset, 2, "1/1 is durable, 2/2 is not");
  assert.equal(v.term(2), 2);
});

test("terms: entries, the snapshot's index, -1 elsewhere", () => {
  const u = new UnstableLog(1);
  assert.equal(u.term(1), -1);
  u.restore(snap(10, 3));
  assert.equal(u.firstIndex(), 11);
  assert.equal(u.lastIndex(), 10);
  assert.equal(u.term(10), 3);
  assert.equal(u.term(9), -1);
  u.truncateAndAppend([entry(3, 11)]);
  assert.equal(u.term(11), 3);
  assert.equal(u.term(12), -1);
});

test("a snapshot is handed out once and becomes stable by its index", () => {
  const u = new UnstableLog(1);
  u.restore(snap(10, 3));
  assert.notEqual(u.nextSnapshot(), undefined);
  u.acceptInProgress();
  assert.equal(u.nextSnapshot(), undefined);
  u.stableSnapshot(9);
  assert.notEqual(u.snapshot, undefined, "another index does not clear it");
  u.stableSnapshot(10);
  assert.equal(u.snapshot, undefined);
});

test("slice refuses out-of-bounds ranges", () => {
  const u = new UnstableLog(5);
  u.truncateAndAppend([entry(1, 5), entry(1, 6)]);
  assert.deepEqual(
    u.slice(5, 7).map((e) => e.index),
    [5, 6],
  );
  assert.throws(() => u.slice(4, 6), /out of bounds/);
  assert.throws(() => u.slice(5, 8), /out of bounds/);
});
