import assert from "node:assert/strict";
import { test } from "node:test";
import { majority, quorumIndex, voteResult } from "../../src/raft/quorum.js";

test("majority sizes", () => {
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(majority), [1, 2, 2, 3, 3, 4, 4]);
});

test("the quorum index is the highest index a majority holds", () => {
  assert.equal(quorumIndex([]), 0);
  assert.equal(quorumIndex([7]), 7);
  assert.equal(quorumIndex([5, 7]), 5);
  assert.equal(quorumIndex([5, 7, 1]), 5);
  assert.equal(quorumIndex([9, 1, 5, 7]), 5);
  assert.equal(quorumIndex([1, 2, 3, 4, 5]), 3);
  assert.equal(quorumIndex([5, 5, 0, 0, 5]), 5);
});

test("vote results: won with a majority of grants, lost once a majority is out of reach", () => {
  const v = (g: number[], r: number[]) => {
    const m = new Map<number, boolean>();
    for (const id of g) m.set(id, true);
    for (const id of r) m.set(id, false);
    return m;
  };
  assert.equal(voteResult([1, 2, 3], v([1], [])), "pending");
  assert.equal(voteResult([1, 2, 3], v([1, 2], [])), "won");
  assert.equal(voteResult([1, 2, 3], v([1], [2])), "pending");
  assert.equal(voteResult([1, 2, 3], v([], [2, 3])), "lost");
  assert.equal(voteResult([1, 2, 3, 4], v([1, 2], [3])), "pending");
  assert.equal(voteResult([1, 2, 3, 4], v([1], [2, 3])), "lost");
  assert.equal(voteResult([1, 2, 3], v([4, 5], [])), "pending", "non-voters do not count");
});
