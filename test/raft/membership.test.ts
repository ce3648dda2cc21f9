import assert from "node:assert/strict";
import { test } from "node:test";
import { isRaftError } from "../../src/raft/errors.js";
import { applyChange } from "../../src/raft/membership.js";
import type { ConfChangeType, ConfState } from "../../src/raft/types.js";

const cc = (type: ConfChangeType, nodeId: number) => ({ type, nodeId, context: new Uint8Array(0) });

test("single changes: add, promote, demote, remove; sorted; no-ops are equal configurations", () => {
  let cs: ConfState = { voters: [1, 2, 3], learners: [] };
  cs = applyChange(cs, cc("addLearner", 4));
  assert.deepEqual(cs, { voters: [1, 2, 3], learners: [4] });
  cs = applyChange(cs, cc("addVoter", 4));
  assert.deepEqual(cs, { voters: [1, 2, 3, 4], learners: [] });
  cs = applyChange(cs, cc("addLearner", 2));
  assert.deepEqual(cs, { voters: [1, 3, 4], learners: [2] });
  cs = applyChange(cs, cc("removeNode", 2));
  assert.deepEqual(cs, { voters: [1, 3, 4], learners: [] });
  assert.deepEqual(applyChange(cs, cc("addVoter", 1)), cs);
  assert.deepEqual(applyChange(cs, cc("removeNode", 9)), cs);
});

test("a change that leaves no voter, or names node 0, is refused and changes nothing", () => {
  const cs = { voters: [1], learners: [2] };
  assert.throws(
    () => applyChange(cs, cc("removeNode", 1)),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  assert.throws(
    () => applyChange(cs, cc("addLearner", 1)),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  assert.throws(
    () => applyChange(cs, cc("addVoter", 0)),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  assert.deepEqual(cs, { voters: [1], learners: [2] });
});
