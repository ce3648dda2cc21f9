import assert from "node:assert/strict";
import { test } from "node:test";
import { isRaftError } from "../../src/raft/errors.js";
import { MemoryStorage } from "../../src/raft/memory-storage.js";
import { RawNode } from "../../src/raft/raw-node.js";
import { bytes, Cluster, text } from "./support/cluster.js";

const THREE = { voters: [1, 2, 3], learners: [] };

test("a three-node group elects the node that campaigns and replicates its proposals", () => {
  const c = new Cluster();
  c.add([1, 2, 3], THREE);
  c.raw(1).campaign();
  c.stabilize();
  assert.deepEqual(c.leaders(), [1]);
  c.raw(1).propose(bytes("hello"));
  c.stabilize();
  for (const id of [1, 2, 3]) {
    assert.deepEqual(
      c.get(id).applied.map((e) => `${e.term}/${e.index} ${text(e.data)}`),
      ["1/1 ", "1/2 hello"],
    );
  }
});

test("a single-node group elects itself only on advance (its own vote counts once durable)", () => {
  const storage = new MemoryStorage({ confState: { voters: [1], learners: [] } });
  const node = new RawNode({ id: 1, storage });
  node.campaign();
  assert.equal(node.status().role, "preCandidate");
  let rd = node.ready();
  assert.equal(rd.hardState, undefined, "a pre-election changes neither term nor vote");
  node.advance();
  assert.equal(node.status().role, "candidate");
  rd = node.ready();
  assert.deepEqual(rd.hardState, { term: 1, vote: 1, commit: 0 });
  assert.equal(rd.mustSync, true);
  assert.equal(node.status().role, "candidate");
  storage.save(rd);
  node.advance();
  assert.equal(node.status().role, "leader");
});

test("ready() twice without advance() throws; advance() without ready() throws", () => {
  const storage = new MemoryStorage({ confState: { voters: [1], learners: [] } });
  const node = new RawNode({ id: 1, storage });
  node.campaign();
  node.ready();
  assert.equal(node.hasReady(), false);
  assert.throws(() => node.ready(), /before advance/);
  node.advance();
  assert.throws(() => node.advance(), /without an outstanding Ready/);
});

test("a follower that knows no leader refuses proposals and reads with typed errors", () => {
  const storage = new MemoryStorage({ confState: { voters: [1, 2, 3], learners: [] } });
  const node = new RawNode({ id: 1, storage });
  assert.throws(
    () => node.propose(bytes("x")),
    (e) => isRaftError(e, "PROPOSAL_DROPPED"),
  );
  assert.throws(
    () => node.readIndex(bytes("r")),
    (e) => isRaftError(e, "READ_INDEX_DROPPED"),
  );
  assert.equal(node.hasReady(), false);
});

test("a bad config throws INVALID_ARGUMENT naming the option", () => {
  const storage = new MemoryStorage({ confState: { voters: [1], learners: [] } });
  assert.throws(
    () => new RawNode({ id: 1, storage, electionTick: 1, heartbeatTick: 1 }),
    (e) => isRaftError(e, "INVALID_ARGUMENT") && /electionTick/.test(e.message),
  );
  assert.throws(
    () => new RawNode({ id: 1, storage, readOnlyOption: "leaseBased", checkQuorum: false }),
    (e) => isRaftError(e, "INVALID_ARGUMENT") && /checkQuorum/.test(e.message),
  );
  assert.throws(
    () => new RawNode({ id: 0, storage }),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
});
