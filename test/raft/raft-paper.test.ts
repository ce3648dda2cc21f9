/**
 * The rules of the Raft paper (Ongaro & Ousterhout 2014; section numbers in the names)
 * and of Ongaro's thesis, one test per sentence, in the spirit of etcd-raft's
 * raft_paper_test.go. Nodes run basic Raft here (no PreVote, no CheckQuorum) unless a test
 * says otherwise.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isRaftError } from "../../src/raft/errors.js";
import { MemoryStorage } from "../../src/raft/memory-storage.js";
import { RawNode } from "../../src/raft/raw-node.js";
import type { Message, NodeId } from "../../src/raft/types.js";
import { Cluster } from "./support/cluster.js";
import {
  bytes,
  committed,
  drain,
  entry,
  message,
  node,
  storageWith,
  voters,
} from "./support/nodes.js";

const BASIC = { preVote: false, checkQuorum: false } as const;

function leaderOf(c: Cluster, id: NodeId): void {
  c.raw(id).campaign();
  c.stabilize();
  assert.equal(c.raw(id).status().role, "leader");
}

function three(options = {}): Cluster {
  const c = new Cluster();
  c.add([1, 2, 3], voters(1, 2, 3), { ...BASIC, ...options });
  return c;
}

/** Makes `n` a follower, candidate or leader at term 1 (a single-voter group for leader). */
function inRole(role: "follower" | "candidate" | "leader"): { n: RawNode; s: MemoryStorage } {
  const s = storageWith(role === "leader" ? voters(1) : voters(1, 2, 3));
  const n = node(1, s);
  if (role !== "follower") {
    n.campaign();
    drain(n, s);
  }
  assert.equal(n.status().role, role);
  return { n, s };
}

describe("5.1 terms", () => {
  for (const role of ["follower", "candidate", "leader"] as const) {
    test(`a ${role} that sees a larger term updates its term and reverts to follower`, () => {
      const { n } = inRole(role);
      n.step(message({ type: "app", from: 2, to: 1, term: 5, logTerm: 0, index: 0 }));
      const st = n.status();
      assert.equal(st.term, 5);
      assert.equal(st.role, "follower");
      assert.equal(st.lead, 2);
    });
  }

  test("a server that receives a request with a stale term number rejects it", () => {
    const s = storageWith(voters(1, 2, 3), [], { term: 3, vote: 0, commit: 0 });
    const n = node(1, s);
    n.step(message({ type: "app", from: 2, to: 1, term: 2, entries: [entry(2, 1, "x")] }));
    const { sent, readies } = drain(n, s);
    assert.equal(n.status().lastIndex, 0, "nothing appended");
    assert.equal(n.status().lead, 0, "the stale sender is not taken as leader");
    assert.deepEqual(sent, []);
    assert.ok(readies.every((rd) => rd.entries.length === 0));
  });

  test("with CheckQuorum, a stale leader's append is answered with the current term (so it steps down)", () => {
    const s = storageWith(voters(1, 2, 3), [], { term: 3, vote: 0, commit: 0 });
    const n = node(1, s, { checkQuorum: true });
    n.step(message({ type: "app", from: 2, to: 1, term: 2 }));
    const { sent } = drain(n, s);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.type, "appResp");
    assert.equal(sent[0]!.term, 3);
  });
});

describe("5.2 leader election", () => {
  test("when servers start up, they begin as followers", () => {
    const n = node(1, storageWith(voters(1, 2, 3)));
    assert.equal(n.status().role, "follower");
    assert.equal(n.status().term, 0);
  });

  test("leaders send periodic heartbeats to all followers in order to maintain their authority", () => {
    const c = three({ heartbeatTick: 2 });
    leaderOf(c, 1);
    c.tick(1);
    assert.deepEqual(c.raw(1).takeMessages(), [], "no heartbeat before heartbeatTick");
    c.tick(1);
    const beats = c.raw(1).takeMessages();
    assert.deepEqual(
      beats.map((m) => `${m.type}->${m.to}`),
      ["heartbeat->2", "heartbeat->3"],
    );
    assert.ok(beats.every((m) => m.entries.length === 0 && m.term === c.raw(1).status().term));
  });

  test("a follower that hears nothing for an election timeout increments its term, votes for itself and requests votes from every other server", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    for (let i = 0; i < 20; i++) n.tick();
    const st = n.status();
    assert.equal(st.role, "candidate");
    assert.equal(st.term, 1);
    assert.equal(st.vote, 1);
    const { sent } = drain(n, s);
    assert.deepEqual(
      sent.map((m) => `${m.type}->${m.to}@${m.term}`),
      ["vote->2@1", "vote->3@1"],
    );
  });

  test("a candidate that hears nothing for an election timeout starts a new election", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.campaign();
    for (let i = 0; i < 20; i++) n.tick();
    assert.equal(n.status().role, "candidate");
    assert.equal(n.status().term, 2);
  });

  test("a candidate wins an election iff it receives votes from a majority of the full cluster for the same term", () => {
    const cases: { size: number; granted: NodeId[]; rejected: NodeId[]; role: string }[] = [
      { size: 1, granted: [], rejected: [], role: "leader" },
      { size: 3, granted: [2], rejected: [], role: "leader" },
      { size: 3, granted: [], rejected: [2, 3], role: "follower" },
      { size: 3, granted: [], rejected: [2], role: "candidate" },
      { size: 5, granted: [2], rejected: [], role: "candidate" },
      { size: 5, granted: [2, 3], rejected: [], role: "leader" },
      { size: 5, granted: [], rejected: [2, 3, 4], role: "follower" },
      { size: 5, granted: [2], rejected: [3, 4], role: "candidate" },
    ];
    for (const tc of cases) {
      const ids = Array.from({ length: tc.size }, (_, i) => i + 1);
      const s = storageWith(voters(...ids));
      const n = node(1, s);
      n.campaign();
      drain(n, s);
      for (const id of tc.granted) n.step(message({ type: "voteResp", from: id, to: 1, term: 1 }));
      for (const id of tc.rejected) {
        n.step(message({ type: "voteResp", from: id, to: 1, term: 1, reject: true }));
      }
      assert.equal(n.status().role, tc.role, JSON.stringify(tc));
    }
  });

  test("each server votes for at most one candidate in a given term, first come first served", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.step(message({ type: "vote", from: 2, to: 1, term: 1 }));
    n.step(message({ type: "vote", from: 3, to: 1, term: 1 }));
    n.step(message({ type: "vote", from: 2, to: 1, term: 1 }));
    const { sent } = drain(n, s);
    assert.deepEqual(
      sent.map((m) => `${m.to}:${m.reject ? "rejected" : "granted"}`),
      ["2:granted", "3:rejected", "2:granted"],
    );
    assert.equal(s.hardState().vote, 2);
  });

  test("a candidate that receives an append from a leader of at least its term returns to follower", () => {
    for (const term of [1, 2]) {
      const s = storageWith(voters(1, 2, 3));
      const n = node(1, s);
      n.campaign();
      n.step(message({ type: "app", from: 2, to: 1, term }));
      assert.equal(n.status().role, "follower");
      assert.equal(n.status().lead, 2);
      assert.equal(n.status().term, term);
    }
  });

  test("randomized election timeouts lie in [electionTick, 2 * electionTick) and differ between nodes", () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 50; seed++) {
      const n = node(1, storageWith(voters(1, 2, 3)), { seed });
      let ticks = 0;
      while (n.status().role === "follower") {
        n.tick();
        ticks++;
      }
      assert.ok(ticks >= 10 && ticks < 20, `timeout ${ticks}`);
      seen.add(ticks);
    }
    assert.ok(seen.size > 5, `only ${seen.size} distinct timeouts`);
  });

  test("the same seed gives the same timeouts (deterministic replay)", () => {
    const timeouts = (seed: number): number[] => {
      const n = node(1, storageWith(voters(1, 2, 3)), { seed });
      const out: number[] = [];
      let ticks = 0;
      for (let i = 0; i < 200; i++) {
        const term = n.status().term;
        n.tick();
        ticks++;
        if (n.status().term !== term) {
          out.push(ticks);
          ticks = 0;
        }
      }
      return out;
    };
    assert.deepEqual(timeouts(7), timeouts(7));
    assert.notDeepEqual(timeouts(7), timeouts(8));
  });
});

describe("5.3 log replication", () => {
  test("the leader appends a client's command to its log, then sends AppendEntries to every other server", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(1).propose(bytes("cmd"));
    const rd = c.raw(1).ready();
    assert.deepEqual(
      rd.entries.map((e) => `${e.term}/${e.index}`),
      ["1/2"],
    );
    assert.deepEqual(
      rd.messages.map(
        (m) => `${m.type}->${m.to} prev:${m.logTerm}/${m.index} n:${m.entries.length}`,
      ),
      ["app->2 prev:1/1 n:1", "app->3 prev:1/1 n:1"],
    );
    c.raw(1).advance();
  });

  test("an entry is committed once the leader has replicated it on a majority of the servers", () => {
    for (const [size, acks, commits] of [
      [1, 0, true],
      [3, 0, false],
      [3, 1, true],
      [5, 1, false],
      [5, 2, true],
    ] as const) {
      const c = new Cluster();
      const ids = Array.from({ length: size }, (_, i) => i + 1);
      c.add(ids, voters(...ids), BASIC);
      leaderOf(c, 1);
      const commit = c.raw(1).status().commit;
      c.raw(1).propose(bytes("x"));
      c.processReady(1);
      for (const id of ids.slice(1)) c.dropQueued(id);
      for (const id of ids.slice(1, 1 + acks)) {
        c.raw(id).step(
          message({
            type: "app",
            from: 1,
            to: id,
            term: 1,
            logTerm: 1,
            index: commit,
            entries: [entry(1, commit + 1, "x")],
            commit,
          }),
        );
        c.processReady(id);
      }
      c.deliver(1);
      assert.equal(c.raw(1).status().commit === commit + 1, commits, `size ${size} acks ${acks}`);
    }
  });

  test("the leader includes its commit index in later AppendEntries and heartbeats, so followers learn it and apply", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(1).propose(bytes("x"));
    c.stabilize();
    for (const id of [2, 3]) {
      assert.equal(c.raw(id).status().commit, 2);
      assert.deepEqual(
        c.get(id).applied.map((e) => e.index),
        [1, 2],
        "followers apply committed entries in log order",
      );
    }
  });

  test("committing an entry commits every preceding entry, including entries of earlier leaders", () => {
    const s = storageWith(voters(1, 2, 3), [1, 1, 2], { term: 2, vote: 0, commit: 1 });
    const c = new Cluster();
    c.addWithStorage(1, s, BASIC);
    c.addWithStorage(
      2,
      storageWith(voters(1, 2, 3), [1, 1, 2], { term: 2, vote: 0, commit: 1 }),
      BASIC,
    );
    c.addWithStorage(3, storageWith(voters(1, 2, 3)), BASIC);
    c.isolate([3]);
    assert.equal(c.raw(1).status().commit, 1);
    leaderOf(c, 1);
    assert.equal(c.raw(1).status().commit, 4, "the new leader's empty entry 3/4 committed");
    assert.deepEqual(
      c.get(1).applied.map((e) => `${e.term}/${e.index}`),
      ["1/1", "1/2", "2/3", "3/4"],
      "with it, 1/2 and 2/3 of earlier terms",
    );
  });

  test("a follower refuses entries whose preceding index and term it does not hold", () => {
    const s = storageWith(voters(1, 2, 3), [1, 2], { term: 2, vote: 0, commit: 0 });
    const n = node(1, s);
    for (const [logTerm, index, accept] of [
      [0, 0, true],
      [1, 1, true],
      [2, 2, true],
      [1, 2, false],
      [3, 3, false],
    ] as const) {
      n.step(message({ type: "app", from: 2, to: 1, term: 2, logTerm, index }));
      const { sent } = drain(n, s);
      assert.equal(sent.length, 1);
      assert.equal(sent[0]!.reject, !accept, `prev ${logTerm}/${index}`);
    }
  });

  test("conflicting entries in a follower's log are overwritten with the leader's (and matching ones kept)", () => {
    const cases: { follower: number[]; prev: [number, number]; send: number[]; want: number[] }[] =
      [
        { follower: [1, 2], prev: [2, 2], send: [3, 3], want: [1, 2, 3, 3] },
        { follower: [1, 2, 2], prev: [1, 1], send: [3], want: [1, 3] },
        { follower: [1, 2], prev: [0, 0], send: [1, 2, 3], want: [1, 2, 3] },
        { follower: [1, 1, 1], prev: [1, 1], send: [1], want: [1, 1, 1] },
      ];
    for (const tc of cases) {
      const s = storageWith(voters(1, 2, 3), tc.follower, { term: 3, vote: 0, commit: 0 });
      const n = node(1, s);
      const [logTerm, index] = tc.prev;
      const ents = tc.send.map((t, i) => entry(t, index + 1 + i));
      n.step(message({ type: "app", from: 2, to: 1, term: 3, logTerm, index, entries: ents }));
      drain(n, s);
      const got = s.entries(1, s.lastIndex() + 1, Number.MAX_SAFE_INTEGER).map((e) => e.term);
      assert.deepEqual(got, tc.want, JSON.stringify(tc));
    }
  });

  test("a new leader brings every follower's log to its own, whatever they diverge with (Figure 7)", () => {
    const leaderTerms = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
    const followers: number[][] = [
      [1, 1, 1, 4, 4, 5, 5, 6, 6],
      [1, 1, 1, 4],
      [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6],
      [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7],
      [1, 1, 1, 4, 4, 4, 4],
      [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3],
    ];
    for (const f of followers) {
      const c = new Cluster();
      c.addWithStorage(
        1,
        storageWith(voters(1, 2, 3), leaderTerms, { term: 8, vote: 0, commit: 0 }),
        BASIC,
      );
      c.addWithStorage(2, storageWith(voters(1, 2, 3), f, { term: 7, vote: 0, commit: 0 }), BASIC);
      c.addWithStorage(
        3,
        storageWith(voters(1, 2, 3), leaderTerms, { term: 7, vote: 0, commit: 0 }),
        BASIC,
      );
      c.raw(1).campaign();
      c.stabilize();
      assert.equal(c.raw(1).status().role, "leader", `follower log ${f}`);
      const log = (id: NodeId) => {
        const s = c.get(id).storage;
        return s
          .entries(1, s.lastIndex() + 1, Number.MAX_SAFE_INTEGER)
          .map((e) => `${e.term}/${e.index}`);
      };
      assert.deepEqual(log(2), log(1), `follower log ${f}`);
    }
  });

  test("a rejection's hint lets the leader skip a whole divergent term per round trip (fast back-off)", () => {
    const c = new Cluster();
    const leaderLog = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6];
    const followerLog = [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3];
    c.addWithStorage(
      1,
      storageWith(voters(1, 2, 3), leaderLog, { term: 8, vote: 0, commit: 0 }),
      BASIC,
    );
    c.addWithStorage(
      2,
      storageWith(voters(1, 2, 3), followerLog, { term: 7, vote: 0, commit: 0 }),
      BASIC,
    );
    c.addWithStorage(
      3,
      storageWith(voters(1, 2, 3), leaderLog, { term: 7, vote: 0, commit: 0 }),
      BASIC,
    );
    let rejections = 0;
    c.tracer = (line) => {
      if (line.startsWith("2->1 appResp") && line.includes("rejected")) rejections++;
    };
    c.raw(1).campaign();
    c.stabilize();
    assert.equal(rejections, 1, "one rejection suffices: its hint skips terms 3 and 2 at once");
  });
});

describe("5.4 safety", () => {
  test("a voter denies its vote if its own log is more up to date than the candidate's (5.4.1)", () => {
    // The voter's log ends at 2/2.
    const cases: [number, number, boolean][] = [
      [1, 1, false],
      [1, 2, false],
      [1, 3, false],
      [2, 1, false],
      [2, 2, true],
      [2, 3, true],
      [3, 1, true],
      [3, 2, true],
    ];
    for (const [logTerm, index, grant] of cases) {
      const s = storageWith(voters(1, 2, 3), [1, 2], { term: 2, vote: 0, commit: 0 });
      const n = node(1, s);
      n.step(message({ type: "vote", from: 2, to: 1, term: 3, logTerm, index }));
      const { sent } = drain(n, s);
      assert.equal(sent.length, 1);
      assert.equal(sent[0]!.reject, !grant, `candidate last ${logTerm}/${index}`);
      assert.equal(s.hardState().vote, grant ? 2 : 0);
    }
  });

  test("a pre-vote is denied on the same log condition (PreVote, thesis 9.6)", () => {
    for (const [logTerm, index, grant] of [
      [1, 5, false],
      [2, 1, false],
      [2, 2, true],
      [3, 1, true],
    ] as const) {
      const s = storageWith(voters(1, 2, 3), [1, 2], { term: 2, vote: 0, commit: 0 });
      const n = node(1, s, { preVote: true });
      n.step(message({ type: "preVote", from: 2, to: 1, term: 3, logTerm, index }));
      const { sent } = drain(n, s);
      assert.equal(sent[0]!.reject, !grant, `candidate last ${logTerm}/${index}`);
      assert.equal(n.status().term, 2, "a pre-vote does not change the voter's term");
    }
  });

  test("a leader never commits an entry of a previous term by counting replicas (5.4.2)", () => {
    // 1 leads term 3 with a log [1, 2] (entry 2 of term 2, uncommitted) and replicates it.
    const c = new Cluster();
    c.addWithStorage(
      1,
      storageWith(voters(1, 2, 3), [1, 2], { term: 2, vote: 0, commit: 1 }),
      BASIC,
    );
    c.addWithStorage(2, storageWith(voters(1, 2, 3), [1], { term: 2, vote: 0, commit: 1 }), BASIC);
    c.addWithStorage(3, storageWith(voters(1, 2, 3), [1], { term: 2, vote: 0, commit: 1 }), BASIC);
    c.raw(1).campaign();
    c.processReady(1);
    c.deliver(2);
    c.processReady(2);
    c.deliver(1);
    assert.equal(c.raw(1).status().role, "leader");
    // The leader's first append carries 3/3; hand 2 only entry 2/2 from the old term.
    c.processReady(1);
    c.dropQueued(2);
    c.dropQueued(3);
    c.raw(2).step(
      message({
        type: "app",
        from: 1,
        to: 2,
        term: 3,
        logTerm: 1,
        index: 1,
        entries: [entry(2, 2, "2")],
        commit: 1,
      }),
    );
    c.processReady(2);
    c.deliver(1);
    const st = c.raw(1).status();
    assert.equal(st.progress?.get(2)?.match, 2, "2 holds 2/2: a majority (1, 2) does");
    assert.equal(st.commit, 1, "yet 2/2 is not committed by the count");
    c.stabilize();
    assert.equal(c.raw(1).status().commit, 3, "it commits with the current term's entry");
  });

  test("a candidate whose log lacks a committed entry cannot win (Leader Completeness)", () => {
    const c = three();
    leaderOf(c, 1);
    c.isolate([3]);
    c.raw(1).propose(bytes("committed"));
    c.stabilize();
    assert.equal(c.raw(2).status().commit, 2);
    c.heal();
    c.isolate([1]);
    c.raw(3).campaign();
    c.stabilize([2, 3]);
    assert.notEqual(c.raw(3).status().role, "leader");
    c.raw(2).campaign();
    c.stabilize([2, 3]);
    assert.equal(c.raw(2).status().role, "leader");
  });
});

describe("Figure 2: persistent state is updated on stable storage before responding to RPCs", () => {
  test("a vote grant leaves only after the vote is persisted (messagesAfterPersist)", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.step(message({ type: "vote", from: 2, to: 1, term: 1 }));
    assert.deepEqual(n.takeMessages(), [], "nothing to send before persisting");
    const rd = n.ready();
    assert.deepEqual(rd.messages, []);
    assert.deepEqual(rd.hardState, { term: 1, vote: 2, commit: 0 });
    assert.equal(rd.mustSync, true);
    assert.deepEqual(
      rd.messagesAfterPersist.map((m) => m.type),
      ["voteResp"],
    );
    n.advance();
  });

  test("an append acknowledgement leaves only after the entries are persisted", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.step(message({ type: "app", from: 2, to: 1, term: 1, entries: [entry(1, 1, "x")] }));
    assert.deepEqual(n.takeMessages(), []);
    const rd = n.ready();
    assert.deepEqual(rd.messages, []);
    assert.equal(rd.entries.length, 1);
    assert.deepEqual(
      rd.messagesAfterPersist.map((m) => `${m.type} ${m.index}`),
      ["appResp 1"],
    );
    n.advance();
  });

  test("a pre-vote grant and an append rejection also wait for persistence", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s, { preVote: true });
    n.step(message({ type: "preVote", from: 2, to: 1, term: 1 }));
    n.step(message({ type: "app", from: 3, to: 1, term: 1, logTerm: 5, index: 5 }));
    assert.deepEqual(n.takeMessages(), []);
    const rd = n.ready();
    assert.deepEqual(
      rd.messagesAfterPersist.map((m) => `${m.type}${m.reject ? " rejected" : ""}`),
      ["preVoteResp", "appResp rejected"],
    );
    n.advance();
  });

  test("a candidate counts its own vote only once its term and vote are durable", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.campaign();
    n.step(message({ type: "voteResp", from: 2, to: 1, term: 1 }));
    assert.equal(n.status().role, "candidate", "one vote of three before its own is durable");
    drain(n, s);
    assert.equal(n.status().role, "leader");
  });

  test("a leader counts itself toward commit only once its entries are durable", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.campaign();
    n.step(message({ type: "voteResp", from: 2, to: 1, term: 1 }));
    drain(n, s);
    n.propose(bytes("x"));
    const rd = n.ready();
    assert.equal(rd.entries.length, 1);
    n.step(message({ type: "appResp", from: 2, to: 1, term: 1, index: 1 }));
    assert.equal(n.status().commit, 1, "the empty entry: 1 durable, 2 acknowledged");
    assert.equal(n.status().progress?.get(1)?.match, 1, "its own entry 2 is still in flight");
    s.save(rd);
    n.advance();
    assert.equal(n.status().progress?.get(1)?.match, 2);
    n.step(message({ type: "appResp", from: 2, to: 1, term: 1, index: 2 }));
    assert.equal(n.status().commit, 2);
  });

  test("committed entries are handed out only once durable locally (in this Ready or an earlier one)", () => {
    const s = storageWith(voters(1, 2, 3));
    const n = node(1, s);
    n.step(
      message({
        type: "app",
        from: 2,
        to: 1,
        term: 1,
        entries: [entry(1, 1, "a"), entry(1, 2, "b")],
        commit: 2,
      }),
    );
    const rd = n.ready();
    assert.deepEqual(
      rd.committedEntries.map((e) => e.index),
      [1, 2],
    );
    assert.deepEqual(
      rd.entries.map((e) => e.index),
      [1, 2],
      "the same Ready persists them before they are applied",
    );
    // Entries arriving while this Ready is persisted are neither in it nor applied yet.
    n.step(
      message({
        type: "app",
        from: 2,
        to: 1,
        term: 1,
        logTerm: 1,
        index: 2,
        entries: [entry(1, 3, "c")],
        commit: 3,
      }),
    );
    s.save(rd);
    n.advance();
    const next = n.ready();
    assert.deepEqual(
      next.entries.map((e) => e.index),
      [3],
    );
    assert.deepEqual(
      next.committedEntries.map((e) => e.index),
      [3],
    );
    n.advance();
  });
});

describe("6.4 read-only queries (thesis)", () => {
  test("a new leader answers no read before it has committed an entry of its own term", () => {
    const s = storageWith(voters(1));
    const n = node(1, s);
    n.campaign();
    const rd = n.ready();
    s.save(rd);
    n.advance(); // leader now, its empty entry not yet durable
    assert.equal(n.status().role, "leader");
    n.readIndex(bytes("r"));
    const pending = n.ready();
    assert.deepEqual(pending.readStates, [], "the empty entry of its term is not committed yet");
    s.save(pending);
    n.advance();
    const { readies } = drain(n, s);
    const states = readies.flatMap((r) => [...r.readStates]);
    assert.equal(states.length, 1);
    assert.equal(states[0]!.index, 1);
  });

  test("a leader confirms it still leads with a quorum's heartbeat acknowledgements before answering", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(1).readIndex(bytes("r"));
    c.processReady(1);
    assert.deepEqual(c.get(1).readStates, []);
    c.deliver(2);
    c.processReady(2);
    c.dropQueued(3);
    c.deliver(1);
    c.processReady(1);
    assert.deepEqual(
      c.get(1).readStates.map((r) => r.index),
      [1],
      "1 and 2 are a quorum",
    );
  });

  test("many reads share one confirmation round", () => {
    const c = three();
    leaderOf(c, 1);
    for (let i = 0; i < 50; i++) c.raw(1).readIndex(bytes(`r${i}`));
    const msgs = c.raw(1).takeMessages();
    assert.deepEqual(
      msgs.map((m: Message) => `${m.type}->${m.to}`),
      ["heartbeat->2", "heartbeat->3"],
    );
    c.send(msgs);
    c.stabilize();
    assert.equal(c.get(1).readStates.length, 50);
  });

  test("a follower's read is confirmed by the leader and answered to the follower", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(2).readIndex(bytes("f"));
    c.stabilize();
    assert.deepEqual(
      c.get(2).readStates.map((r) => `${r.index} ${new TextDecoder().decode(r.context)}`),
      ["1 f"],
    );
  });

  test("with lease-based reads the leader answers without a round", () => {
    const c = three({ checkQuorum: true, readOnlyOption: "leaseBased" });
    leaderOf(c, 1);
    c.raw(1).readIndex(bytes("r"));
    assert.deepEqual(c.raw(1).takeMessages(), [], "no heartbeat round");
    c.processReady(1);
    assert.equal(c.get(1).readStates.length, 1);
  });
});

describe("4.1 membership changes (thesis)", () => {
  test("a leader refuses a new change until the previous one is applied", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(1).proposeConfChange({ type: "addLearner", nodeId: 4, context: new Uint8Array(0) });
    assert.throws(
      () =>
        c.raw(1).proposeConfChange({ type: "addLearner", nodeId: 5, context: new Uint8Array(0) }),
      (e) => isRaftError(e, "CONF_CHANGE_PENDING"),
    );
    c.stabilize();
    c.raw(1).proposeConfChange({ type: "addLearner", nodeId: 5, context: new Uint8Array(0) });
  });

  test("a configuration takes effect when its entry is applied, not when it is appended", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(1).proposeConfChange({ type: "removeNode", nodeId: 3, context: new Uint8Array(0) });
    c.processReady(1);
    assert.deepEqual(c.raw(1).status().config.voters, [1, 2, 3]);
    c.stabilize();
    assert.deepEqual(c.raw(1).status().config.voters, [1, 2]);
    assert.deepEqual(c.raw(2).status().config.voters, [1, 2]);
  });

  test("a leader that removes itself steps down once the removal is applied", () => {
    const c = three();
    leaderOf(c, 1);
    c.raw(1).proposeConfChange({ type: "removeNode", nodeId: 1, context: new Uint8Array(0) });
    c.processReady(1);
    assert.equal(c.raw(1).status().role, "leader", "still leads while the removal is uncommitted");
    c.stabilize();
    assert.equal(c.raw(1).status().role, "follower");
    assert.throws(
      () => c.raw(1).propose(bytes("x")),
      (e) => isRaftError(e, "PROPOSAL_DROPPED"),
    );
  });

  test("a learner replicates but neither votes toward commit nor campaigns", () => {
    const c = new Cluster();
    c.add([1, 2, 3], { voters: [1, 2], learners: [3] }, BASIC);
    leaderOf(c, 1);
    c.isolate([2]);
    c.raw(1).propose(bytes("x"));
    c.stabilize();
    assert.equal(c.raw(3).status().lastIndex, 2, "the learner has the entry");
    assert.equal(c.raw(1).status().commit, 1, "but 1 and a learner are no quorum");
    for (let i = 0; i < 50; i++) c.raw(3).tick();
    assert.equal(c.raw(3).status().role, "follower");
  });
});

test("Bootstrap: a MemoryStorage with a configuration starts a group", () => {
  const s = new MemoryStorage({ confState: voters(1) });
  const n = new RawNode({ id: 1, storage: s });
  n.campaign();
  drain(n, s);
  n.propose(bytes("x"));
  const { readies } = drain(n, s);
  assert.deepEqual(
    committed(readies).map((e) => new TextDecoder().decode(e.data)),
    ["x"],
  );
});
