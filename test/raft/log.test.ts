import assert from "node:assert/strict";
import { test } from "node:test";
import { isRaftError } from "../../src/raft/errors.js";
import { limitSize, RaftLog } from "../../src/raft/log.js";
import { MemoryStorage } from "../../src/raft/memory-storage.js";
import { entry, storageWith, voters } from "./support/nodes.js";

const CS = voters(1, 2, 3);
const terms = (ents: readonly { term: number }[]) => ents.map((e) => e.term);

test("reads go through the unstable tail to the storage", () => {
  const s = storageWith(CS, [1, 1, 2]);
  const log = new RaftLog(s, 1 << 20);
  assert.equal(log.lastIndex(), 3);
  log.append([entry(3, 4), entry(3, 5)]);
  assert.equal(log.lastIndex(), 5);
  assert.equal(log.term(2), 1);
  assert.equal(log.term(5), 3);
  assert.equal(log.term(6), -1);
  assert.deepEqual(terms(log.slice(2, 6, Number.MAX_SAFE_INTEGER)), [1, 2, 3, 3]);
});

test("slices stop at maxBytes but hold at least one entry, across storage and unstable", () => {
  const s = new MemoryStorage({ confState: CS });
  s.append([entry(1, 1, "aaaa"), entry(1, 2, "bbbb")]);
  const log = new RaftLog(s, 1 << 20);
  log.append([entry(1, 3, "cccc"), entry(1, 4, "dddd")]);
  assert.equal(log.slice(1, 5, 0).length, 1);
  assert.equal(log.slice(1, 5, 8).length, 2);
  assert.equal(log.slice(1, 5, 11).length, 2);
  assert.equal(log.slice(1, 5, 12).length, 3);
  assert.equal(log.slice(3, 5, 4).length, 1);
  assert.equal(log.slice(1, 5, 100).length, 4);
  assert.equal(limitSize([entry(1, 1, "xxxxxx")], 1).length, 1);
});

test("a slice below the first index throws COMPACTED", () => {
  const s = storageWith(CS, [1, 1, 1, 1]);
  s.createSnapshot(2, CS, new Uint8Array(0));
  s.compact(2);
  const log = new RaftLog(s, 1 << 20);
  assert.equal(log.firstIndex(), 3);
  assert.equal(log.term(2), 1, "the snapshot's term");
  assert.equal(log.term(1), -1);
  assert.throws(
    () => log.slice(2, 4, 100),
    (e) => isRaftError(e, "COMPACTED"),
  );
});

test("maybeAppend: mismatch, keeping held entries, replacing a conflicting suffix, commit bound", () => {
  const s = storageWith(CS, [1, 2, 3]);
  const log = new RaftLog(s, 1 << 20);
  assert.equal(log.maybeAppend(3, 2, 3, [entry(4, 4)]), -1, "prev term mismatch");
  assert.equal(log.maybeAppend(1, 1, 0, [entry(2, 2)]), 2, "already held");
  assert.equal(log.lastIndex(), 3, "a matching prefix does not truncate the rest");
  assert.equal(log.maybeAppend(1, 1, 5, [entry(4, 2), entry(4, 3), entry(4, 4)]), 4);
  assert.deepEqual(terms(log.slice(1, 5, 1000)), [1, 4, 4, 4]);
  assert.equal(log.committed, 4, "commit = min(leader's commit, last new index)");
  assert.throws(() => log.maybeAppend(1, 1, 4, [entry(5, 2)]), /conflicts with a committed entry/);
});

test("the conflict hint finds the last index at or below a term (fast back-off)", () => {
  const log = new RaftLog(storageWith(CS, [1, 1, 1, 4, 4, 5, 5, 6, 6, 6]), 1 << 20);
  assert.deepEqual(log.findConflictByTerm(10, 6), { index: 10, term: 6 });
  assert.deepEqual(log.findConflictByTerm(10, 5), { index: 7, term: 5 });
  assert.deepEqual(log.findConflictByTerm(10, 3), { index: 3, term: 1 });
  assert.deepEqual(log.findConflictByTerm(10, 0), { index: 0, term: 0 });
});

test("up to date: a later last term wins, then a longer log (5.4.1)", () => {
  const log = new RaftLog(storageWith(CS, [1, 2, 2]), 1 << 20);
  assert.equal(log.isUpToDate(3, 2), true);
  assert.equal(log.isUpToDate(2, 2), false);
  assert.equal(log.isUpToDate(1, 3), true);
  assert.equal(log.isUpToDate(9, 1), false);
});

test("maybeCommit commits only an index whose term matches", () => {
  const log = new RaftLog(storageWith(CS, [1, 2, 3]), 1 << 20);
  assert.equal(log.maybeCommit(2, 3), false);
  assert.equal(log.maybeCommit(3, 3), true);
  assert.equal(log.committed, 3);
  assert.equal(log.maybeCommit(2, 2), false, "never backwards");
  assert.throws(() => log.commitTo(4), /beyond the last index/);
});

test("committed entries are handed out from the apply cursor, bounded in bytes, never while a snapshot is pending", () => {
  const s = new MemoryStorage({ confState: CS });
  s.append([entry(1, 1, "aa"), entry(1, 2, "bb"), entry(1, 3, "cc")]);
  const log = new RaftLog(s, 3);
  log.commitTo(3);
  assert.deepEqual(
    log.nextCommittedEntries().map((e) => e.index),
    [1],
  );
  log.acceptApplying(1);
  assert.deepEqual(
    log.nextCommittedEntries().map((e) => e.index),
    [2],
  );
  log.restore({ metadata: { index: 10, term: 2, confState: CS }, data: new Uint8Array(0) });
  assert.equal(log.hasNextCommittedEntries(), false);
});
