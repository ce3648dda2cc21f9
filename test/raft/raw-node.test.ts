import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeConfChange, encodeConfChange } from "../../src/raft/codec.js";
import { isRaftError, RaftError } from "../../src/raft/errors.js";
import { MemoryStorage } from "../../src/raft/memory-storage.js";
import { RawNode } from "../../src/raft/raw-node.js";
import type { Message } from "../../src/raft/types.js";
import { bytes, Cluster, text } from "./support/cluster.js";
import { drain, message, node, storageWith, voters } from "./support/nodes.js";

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

// ---- step() refusals ----

test("step refuses local types, another node's messages, missing terms and strangers' responses, changing nothing", () => {
  const s = storageWith(voters(1, 2, 3));
  const n = node(1, s);
  const refused = (m: Message, code: string) =>
    assert.throws(
      () => n.step(m),
      (e) => isRaftError(e, code as "INVALID_ARGUMENT"),
      `${m.type}`,
    );
  for (const type of ["hup", "beat", "checkQuorum", "unreachable", "snapStatus"] as const) {
    refused(message({ type, from: 2, to: 1 }), "INVALID_ARGUMENT");
  }
  refused(message({ type: "app", from: 2, to: 3, term: 1 }), "INVALID_ARGUMENT");
  refused(message({ type: "app", from: 2, to: 1, term: 0 }), "INVALID_ARGUMENT");
  refused(message({ type: "appResp", from: 9, to: 1, term: 1 }), "PEER_NOT_FOUND");
  refused(message({ type: "heartbeatResp", from: 9, to: 1, term: 1 }), "PEER_NOT_FOUND");
  assert.equal(n.status().term, 0);
  assert.equal(n.hasReady(), false);
});

// ---- proposals ----

function leader(size = 3, options = {}) {
  const c = new Cluster();
  const ids = Array.from({ length: size }, (_, i) => i + 1);
  c.add(ids, voters(...ids), { preVote: false, ...options });
  c.raw(1).campaign();
  c.stabilize();
  assert.equal(c.raw(1).status().role, "leader");
  return c;
}

test("back-pressure: past maxUncommittedEntriesSize a leader throws PROPOSAL_TOO_LARGE_BACKLOG and appends nothing; applying frees the budget", () => {
  const c = leader(3, { maxUncommittedEntriesSize: 10 });
  c.isolate([2, 3]);
  const n = c.raw(1);
  n.propose(bytes("0123456789ABCDEF"));
  const last = n.status().lastIndex;
  assert.throws(
    () => n.propose(bytes("x")),
    (e) => isRaftError(e, "PROPOSAL_TOO_LARGE_BACKLOG"),
  );
  assert.equal(n.status().lastIndex, last);
  n.propose(new Uint8Array(0));
  c.heal();
  c.stabilize();
  n.propose(bytes("0123456789"));
});

test("proposals are forwarded by followers, or refused with disableProposalForwarding", () => {
  const c = leader();
  c.raw(2).propose(bytes("via 2"));
  c.stabilize();
  assert.equal(text(c.get(3).applied.at(-1)!.data), "via 2");
  const d = leader(3, { disableProposalForwarding: true });
  assert.throws(
    () => d.raw(2).propose(bytes("x")),
    (e) => isRaftError(e, "PROPOSAL_DROPPED"),
  );
});

test("proposals arriving before the leader collects its messages share one append per follower", () => {
  const c = leader();
  for (let i = 0; i < 20; i++) c.raw(1).propose(bytes(`p${i}`));
  const msgs = c.raw(1).takeMessages();
  assert.deepEqual(
    msgs.map((m) => `${m.type}->${m.to} n:${m.entries.length}`),
    ["app->2 n:20", "app->3 n:20"],
  );
});

test("appends carry at most maxSizePerMsg bytes of entries (at least one entry)", () => {
  const c = leader(3, { maxSizePerMsg: 10 });
  for (let i = 0; i < 5; i++) c.raw(1).propose(bytes("12345"));
  c.raw(1).propose(bytes("a-very-long-entry"));
  const sizes = c
    .raw(1)
    .takeMessages()
    .filter((m) => m.to === 2)
    .map((m) => m.entries.map((e) => e.data.length));
  assert.deepEqual(sizes, [[5, 5], [5, 5], [5], [17]]);
});

test("the inflight window bounds the appends in flight to a follower (count and bytes)", () => {
  const count = leader(3, { maxInflightMsgs: 2, maxSizePerMsg: 1 });
  for (let i = 0; i < 5; i++) count.raw(1).propose(bytes("xx"));
  assert.equal(
    count
      .raw(1)
      .takeMessages()
      .filter((m) => m.to === 2).length,
    2,
  );
  assert.equal(count.raw(1).status().progress?.get(2)?.paused, true);
  const size = leader(3, { maxInflightBytes: 6, maxSizePerMsg: 2 });
  for (let i = 0; i < 5; i++) size.raw(1).propose(bytes("xx"));
  assert.equal(
    size
      .raw(1)
      .takeMessages()
      .filter((m) => m.to === 2).length,
    3,
  );
});

test("a follower in probe gets one append until it answers; unreachable moves a replicating one to probe", () => {
  const c = leader();
  c.raw(1).reportUnreachable(2);
  assert.equal(c.raw(1).status().progress?.get(2)?.state, "probe");
  c.raw(1).propose(bytes("a"));
  c.raw(1).propose(bytes("b"));
  const first = c
    .raw(1)
    .takeMessages()
    .filter((m) => m.to === 2);
  c.raw(1).propose(bytes("c"));
  const second = c
    .raw(1)
    .takeMessages()
    .filter((m) => m.to === 2);
  assert.equal(first.length, 1);
  assert.equal(second.length, 0, "paused until 2 answers");
  c.send(first);
  c.stabilize();
  assert.equal(c.raw(1).status().progress?.get(2)?.state, "replicate");
  assert.equal(c.raw(2).status().commit, c.raw(1).status().commit);
});

// ---- restarts ----

test("a restarted node hands out nothing it had applied, and replays the membership changes it applied", () => {
  const c = leader();
  c.raw(1).proposeConfChange({ type: "addLearner", nodeId: 4, context: new Uint8Array(0) });
  c.stabilize();
  c.raw(1).propose(bytes("after"));
  c.stabilize();
  const n2 = c.get(2);
  const appliedBefore = n2.applied.length;
  c.restart(2);
  assert.deepEqual(n2.node.status().config, { voters: [1, 2, 3], learners: [4] });
  assert.equal(n2.node.status().applied, n2.appliedIndex);
  drain(n2.node, n2.storage);
  assert.equal(n2.applied.length, appliedBefore);
  assert.equal(n2.node.hasReady(), false);
});

test("a restart from a log behind the hard state's commit (no damage reported) throws", () => {
  const s = storageWith(voters(1, 2, 3), [1, 1], { term: 1, vote: 0, commit: 5 });
  assert.throws(() => node(1, s), /beyond the last index/);
  const t = storageWith(voters(1, 2, 3), [1, 1], { term: 1, vote: 0, commit: 2 });
  assert.throws(() => node(1, t, { applied: 3 }), /applied 3 is beyond/);
  t.setRepair(3);
  assert.doesNotThrow(() => node(1, t, { applied: 3 }));
});

test("a lost commit update is recovered from the applied index", () => {
  const s = storageWith(voters(1, 2, 3), [1, 1, 1], { term: 1, vote: 0, commit: 1 });
  const n = node(1, s, { applied: 3 });
  assert.equal(n.status().commit, 3);
  assert.equal(n.hasReady(), false);
});

// ---- membership errors ----

test("membership changes a leader cannot make are refused with INVALID_ARGUMENT", () => {
  const c = leader(1);
  const n = c.raw(1);
  assert.throws(
    () => n.proposeConfChange({ type: "removeNode", nodeId: 1, context: new Uint8Array(0) }),
    (e) => isRaftError(e, "INVALID_ARGUMENT") && /no voter/.test(e.message),
  );
  assert.throws(
    () => n.proposeConfChange({ type: "addLearner", nodeId: 1, context: new Uint8Array(0) }),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  assert.throws(
    () => n.proposeConfChange({ type: "addVoter", nodeId: 0, context: new Uint8Array(0) }),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  assert.throws(
    () => n.applyConfChange({ type: "removeNode", nodeId: 1, context: new Uint8Array(0) }),
    (e) => isRaftError(e, "INVALID_ARGUMENT"),
  );
  assert.deepEqual(n.status().config.voters, [1]);
  assert.equal(n.status().role, "leader");
});

// ---- snapshots ----

test("a leader whose storage cannot produce a snapshot yet retries later", () => {
  const c = leader();
  c.isolate([3]);
  c.raw(1).propose(bytes("a"));
  c.stabilize();
  const s1 = c.get(1).storage;
  s1.createSnapshot(2, voters(1, 2, 3), new Uint8Array(0));
  s1.compact(2);
  let available = false;
  const real = s1.snapshot.bind(s1);
  s1.snapshot = () => {
    if (!available) throw new RaftError("SNAPSHOT_TEMPORARILY_UNAVAILABLE", "busy");
    return real();
  };
  c.heal();
  c.tick(1);
  c.stabilize();
  assert.equal(c.raw(1).status().progress?.get(3)?.state, "probe");
  assert.equal(c.raw(3).status().commit, 1);
  available = true;
  c.tick(1);
  c.stabilize();
  assert.equal(c.raw(3).status().commit, 2);
});

// ---- status ----

test("status shows a leader's progress of every member, and only a leader's", () => {
  const c = leader();
  const st = c.raw(1).status();
  assert.deepEqual([...st.progress!.keys()], [1, 2, 3]);
  assert.equal(st.progress!.get(2)!.match, st.lastIndex);
  assert.equal(st.progress!.get(2)!.state, "replicate");
  assert.equal(c.raw(2).status().progress, undefined);
  assert.equal(c.raw(2).status().lead, 1);
});

test("takeMessages works while a Ready is outstanding; hasReady is false until advance", () => {
  const c = leader(3, { heartbeatTick: 1 });
  c.raw(1).propose(bytes("x"));
  const rd = c.readyOnly(1);
  assert.equal(rd.entries.length, 1);
  assert.equal(c.raw(1).hasReady(), false);
  c.tick(1);
  const beats = c.raw(1).takeMessages();
  assert.deepEqual(
    beats.map((m) => m.type),
    ["heartbeat", "heartbeat"],
  );
  c.finishReady(1);
});

test("the application may compact what it applied before calling advance (the node campaigns meanwhile)", () => {
  const s = storageWith(voters(1, 2, 3));
  const n = node(1, s);
  const ents = [1, 2, 3, 4].map((i) => ({
    term: 1,
    index: i,
    type: "normal" as const,
    data: bytes(`${i}`),
  }));
  n.step(message({ type: "app", from: 2, to: 1, term: 1, entries: ents, commit: 4 }));
  const rd = n.ready();
  s.save(rd);
  assert.equal(rd.committedEntries.length, 4);
  // Applied 1..4: snapshot and compact before advance; the clock ticks meanwhile.
  s.createSnapshot(4, voters(1, 2, 3), bytes("state@4"));
  s.compact(4);
  for (let i = 0; i < 25; i++) n.tick();
  assert.equal(n.status().role, "candidate");
  n.advance();
});

test("a membership change handed out in the outstanding Ready keeps the node from campaigning until advance", () => {
  const s = storageWith(voters(1, 2, 3));
  const n = node(1, s);
  const cc = {
    term: 1,
    index: 1,
    type: "confChange" as const,
    data: encodeConfChange({ type: "addLearner", nodeId: 4, context: new Uint8Array(0) }),
  };
  n.step(message({ type: "app", from: 2, to: 1, term: 1, entries: [cc], commit: 1 }));
  const rd = n.ready();
  s.save(rd);
  s.createSnapshot(1, voters(1, 2, 3), bytes("state@1"));
  s.compact(1);
  n.campaign();
  assert.equal(n.status().role, "follower", "the change is handed out, not known applied");
  n.applyConfChange(decodeConfChange(rd.committedEntries[0]!.data));
  n.advance();
  n.campaign();
  assert.equal(n.status().role, "candidate");
});

test("a leader does not send a snapshot that predates the follower's membership, and says so once", () => {
  const warnings: string[] = [];
  const c = new Cluster();
  c.logger = { debug() {}, info() {}, error() {}, warn: (m) => warnings.push(m) };
  c.add([1, 2, 3], voters(1, 2, 3), { preVote: false });
  c.raw(1).campaign();
  c.stabilize();
  const s1 = c.get(1).storage;
  s1.createSnapshot(1, voters(1, 2, 3), bytes("old"));
  c.raw(1).proposeConfChange({ type: "addLearner", nodeId: 4, context: new Uint8Array(0) });
  c.stabilize();
  s1.compact(2);
  c.add([4], { voters: [], learners: [] }, { preVote: false });
  for (let i = 0; i < 3; i++) {
    c.tick(1);
    c.stabilize();
  }
  assert.equal(c.raw(1).status().progress?.get(4)?.state, "probe");
  assert.equal(warnings.filter((w) => /predates its membership/.test(w)).length, 1);
  s1.createSnapshot(2, c.get(1).confState, bytes("new"));
  c.tick(1);
  c.stabilize();
  assert.equal(c.raw(4).status().commit, 2, "the newer snapshot catches 4 up");
});
