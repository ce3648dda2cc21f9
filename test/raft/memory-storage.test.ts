import assert from "node:assert/strict";
import { test } from "node:test";
import { isRaftError } from "../../src/raft/errors.js";
import { MemoryStorage } from "../../src/raft/memory-storage.js";
import { entry, voters } from "./support/nodes.js";

const CS = voters(1, 2, 3);

test("an empty storage: snapshot 0, first 1, last 0, the bootstrap configuration", () => {
  const s = new MemoryStorage({ confState: CS });
  assert.equal(s.firstIndex(), 1);
  assert.equal(s.lastIndex(), 0);
  assert.equal(s.term(0), 0);
  assert.deepEqual(s.initialState().confState, CS);
  assert.equal(s.initialState().repair, undefined);
});

test("append truncates a conflicting suffix and ignores entries below the snapshot", () => {
  const s = new MemoryStorage({ confState: CS });
  s.append([entry(1, 1), entry(1, 2), entry(1, 3)]);
  s.append([entry(2, 2)]);
  assert.equal(s.lastIndex(), 2);
  assert.equal(s.term(2), 2);
  assert.throws(
    () => s.append([entry(2, 9)]),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  s.createSnapshot(2, CS, new Uint8Array(0));
  s.compact(2);
  s.append([entry(2, 1), entry(2, 2), entry(3, 3)]);
  assert.equal(s.firstIndex(), 3);
  assert.equal(s.term(3), 3);
});

test("entries and terms report COMPACTED and UNAVAILABLE; entries honour maxBytes", () => {
  const s = new MemoryStorage({ confState: CS });
  s.append([entry(1, 1, "aa"), entry(1, 2, "bb"), entry(1, 3, "cc"), entry(1, 4, "dd")]);
  s.createSnapshot(2, CS, new Uint8Array(0));
  s.compact(2);
  assert.throws(
    () => s.entries(2, 4, 100),
    (e) => isRaftError(e, "COMPACTED"),
  );
  assert.throws(
    () => s.entries(3, 6, 100),
    (e) => isRaftError(e, "UNAVAILABLE"),
  );
  assert.throws(
    () => s.term(1),
    (e) => isRaftError(e, "COMPACTED"),
  );
  assert.throws(
    () => s.term(5),
    (e) => isRaftError(e, "UNAVAILABLE"),
  );
  assert.equal(s.term(2), 1);
  assert.equal(s.entries(3, 5, 0).length, 1, "at least one entry");
  assert.equal(s.entries(3, 5, 4).length, 2);
});

test("snapshots: created at an index with its term, out of date ones refused, applied ones replace the log", () => {
  const s = new MemoryStorage({ confState: CS });
  s.append([entry(1, 1), entry(2, 2)]);
  const snap = s.createSnapshot(2, CS, new TextEncoder().encode("state"));
  assert.equal(snap.metadata.term, 2);
  assert.throws(
    () => s.createSnapshot(1, CS, new Uint8Array(0)),
    (e) => isRaftError(e, "SNAPSHOT_OUT_OF_DATE"),
  );
  assert.throws(
    () => s.createSnapshot(3, CS, new Uint8Array(0)),
    (e) => isRaftError(e, "UNAVAILABLE"),
  );
  assert.throws(
    () => s.applySnapshot(snap),
    (e) => isRaftError(e, "SNAPSHOT_OUT_OF_DATE"),
  );
  s.applySnapshot({
    metadata: { index: 10, term: 4, confState: voters(1) },
    data: new Uint8Array(0),
  });
  assert.equal(s.firstIndex(), 11);
  assert.equal(s.lastIndex(), 10);
  assert.deepEqual(s.initialState().confState, voters(1));
});

test("repair is reported until cleared; clones share nothing mutable", () => {
  const s = new MemoryStorage({ confState: CS });
  s.append([entry(1, 1)]);
  s.setRepair(5);
  assert.deepEqual(s.initialState().repair, { throughIndex: 5 });
  const c = s.clone();
  c.append([entry(1, 2)]);
  assert.equal(s.lastIndex(), 1);
  s.setRepair(undefined);
  assert.equal(s.initialState().repair, undefined);
  assert.deepEqual(c.initialState().repair, { throughIndex: 5 });
});
