import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULTS, type RaftConfig, resolveConfig } from "../../src/raft/config.js";
import { isRaftError } from "../../src/raft/errors.js";
import { MemoryStorage } from "../../src/raft/memory-storage.js";

const storage = new MemoryStorage({ confState: { voters: [1], learners: [] } });

test("defaults: PreVote, CheckQuorum and safe reads on; every limit bounded", () => {
  const c = resolveConfig({ id: 1, storage });
  assert.equal(c.preVote, true);
  assert.equal(c.checkQuorum, true);
  assert.equal(c.readOnlyOption, "safe");
  assert.equal(c.electionTick, 10);
  assert.equal(c.heartbeatTick, 1);
  assert.equal(c.maxUncommittedEntriesSize, DEFAULTS.maxUncommittedEntriesSize);
  assert.ok(Number.isFinite(c.maxInflightBytes) && Number.isFinite(c.maxUncommittedEntriesSize));
});

test("each invalid option is refused with INVALID_ARGUMENT naming it", () => {
  const bad: [Partial<RaftConfig>, RegExp][] = [
    [{ id: 0 }, /id/],
    [{ id: 1.5 }, /id/],
    [{ electionTick: 3, heartbeatTick: 3 }, /electionTick/],
    [{ heartbeatTick: 0 }, /heartbeatTick/],
    [{ applied: -1 }, /applied/],
    [{ maxSizePerMsg: 0 }, /maxSizePerMsg/],
    [{ maxInflightMsgs: 0 }, /maxInflightMsgs/],
    [{ maxSizePerMsg: 100, maxInflightBytes: 10 }, /maxInflightBytes/],
    [{ maxUncommittedEntriesSize: 0 }, /maxUncommittedEntriesSize/],
    [{ readOnlyOption: "leaseBased", checkQuorum: false }, /checkQuorum/],
    [{ readOnlyOption: "fast" as "safe" }, /readOnlyOption/],
    [{ seed: 0.5 }, /seed/],
  ];
  for (const [overrides, name] of bad) {
    assert.throws(
      () => resolveConfig({ id: 1, storage, ...overrides } as RaftConfig),
      (e) => isRaftError(e, "INVALID_ARGUMENT") && name.test(e.message),
      JSON.stringify(overrides),
    );
  }
  assert.throws(
    () => resolveConfig({ id: 1 } as RaftConfig),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
});
