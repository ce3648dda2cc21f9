import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Entry, HardState, Message, RaftRole } from "../../../src/raft/types.js";
import { type RecoveredLog, SafetyChecker, SafetyViolation } from "./safety-checker.js";

const enc = new TextEncoder();

function entry(index: number, term: number, data = `e${index}.${term}`): Entry {
  return { index, term, type: "normal", data: enc.encode(data) };
}

function hs(term: number, vote: number, commit: number): HardState {
  return { term, vote, commit };
}

function fresh(overrides: Partial<RecoveredLog> = {}): RecoveredLog {
  return {
    hardState: hs(0, 0, 1),
    snapshotIndex: 1,
    snapshotTerm: 1,
    entries: [],
    repairThrough: undefined,
    applied: 1,
    ...overrides,
  };
}

function msg(
  type: Message["type"],
  from: number,
  to: number,
  term: number,
  fields: Partial<Message> = {},
): Message {
  return {
    type,
    from,
    to,
    term,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    snapshot: undefined,
    reject: false,
    rejectHint: 0,
    context: new Uint8Array(0),
    ...fields,
  };
}

interface ReadyLike {
  softState?: { role: RaftRole };
  hardState?: HardState;
  entries: Entry[];
}

/** A group of `n` nodes started from the bootstrap snapshot at index 1. */
function group(n: number): SafetyChecker {
  const c = new SafetyChecker();
  c.bootstrap(1, 1);
  for (let id = 1; id <= n; id++) c.started(id, fresh());
  return c;
}

/** Hands out a Ready and persists it. */
function cycle(c: SafetyChecker, id: number, rd: ReadyLike): void {
  c.readyHandedOut(id, rd);
  c.persisted(id);
}

function violates(property: string, f: () => void): void {
  assert.throws(f, (err: unknown) => err instanceof SafetyViolation && err.property === property);
}

/** Node 1 leads term 2 with entries 2..3 replicated to node 2 and committed. */
function leaderWithCommit(): SafetyChecker {
  const c = group(3);
  cycle(c, 1, { hardState: hs(2, 1, 1), entries: [] });
  cycle(c, 1, { softState: { role: "leader" }, entries: [entry(2, 2), entry(3, 2)] });
  cycle(c, 2, { hardState: hs(2, 1, 1), entries: [entry(2, 2), entry(3, 2)] });
  cycle(c, 1, { hardState: hs(2, 1, 3), entries: [] });
  return c;
}

describe("SafetyChecker", () => {
  test("a healthy sequence passes", () => {
    const c = leaderWithCommit();
    c.applying(1, entry(2, 2));
    c.applying(1, entry(3, 2));
    cycle(c, 2, { hardState: hs(2, 1, 3), entries: [] });
    c.applying(2, entry(2, 2));
    assert.equal(c.commitIndex, 3);
  });

  test("two leaders in one term violate Election Safety", () => {
    const c = leaderWithCommit();
    cycle(c, 3, { hardState: hs(2, 3, 1), entries: [] });
    violates("Election Safety", () =>
      c.readyHandedOut(3, { softState: { role: "leader" }, entries: [] }),
    );
  });

  test("two vote grants in one term violate Election Safety", () => {
    const c = group(3);
    cycle(c, 2, { hardState: hs(2, 1, 1), entries: [] });
    c.sending(2, msg("voteResp", 2, 1, 2));
    cycle(c, 2, { hardState: hs(2, 3, 1), entries: [] });
    violates("Election Safety", () => c.sending(2, msg("voteResp", 2, 3, 2)));
  });

  test("a vote granted before it is durable violates the durability promise", () => {
    const c = group(3);
    c.readyHandedOut(2, { hardState: hs(2, 1, 1), entries: [] });
    violates("Durability", () => c.sending(2, msg("voteResp", 2, 1, 2)));
    // Once persisted it may go; a rejection never needs durability.
    c.persisted(2);
    c.sending(2, msg("voteResp", 2, 1, 2));
    c.sending(2, msg("voteResp", 2, 3, 2, { reject: true }));
  });

  test("an append acknowledged before it is durable violates the durability promise", () => {
    const c = group(3);
    cycle(c, 2, { hardState: hs(2, 0, 1), entries: [entry(2, 2)] });
    c.sending(2, msg("appResp", 2, 1, 2, { index: 2 }));
    c.readyHandedOut(2, { entries: [entry(3, 2)] });
    c.sending(2, msg("appResp", 2, 1, 2, { index: 2 }));
    violates("Durability", () => c.sending(2, msg("appResp", 2, 1, 2, { index: 3 })));
  });

  test("an acknowledgement of entries a newer leader replaced in the same Ready fails", () => {
    // Entry 3 of term 2 arrives, then a term-3 leader replaces it before the Ready is cut:
    // a term-2 acknowledgement of 3 after that Ready vouches for what the node never kept.
    const c = group(3);
    cycle(c, 2, { hardState: hs(2, 1, 1), entries: [entry(2, 2)] });
    cycle(c, 2, { hardState: hs(3, 0, 1), entries: [entry(3, 3)] });
    c.sending(2, msg("appResp", 2, 3, 3, { index: 3 }));
    c.sending(2, msg("appResp", 2, 1, 2, { index: 2 }));
    violates("Durability", () => c.sending(2, msg("appResp", 2, 1, 2, { index: 3 })));
    violates("Durability", () => c.sending(2, msg("appResp", 2, 1, 2, { index: 4 })));
  });

  test("a Ready that carries entries or a new vote without asking for a sync fails", () => {
    const c = group(3);
    violates("Durability", () => c.readyHandedOut(2, { entries: [entry(2, 2)], mustSync: false }));
    const d = group(3);
    violates("Durability", () =>
      d.readyHandedOut(2, { hardState: hs(2, 1, 1), entries: [], mustSync: false }),
    );
    // Only the commit index changed: no sync needed.
    const e = leaderWithCommit();
    e.readyHandedOut(2, { hardState: hs(2, 1, 3), entries: [], mustSync: false });
  });

  test("a leader's commit index must be durable on a majority of voters", () => {
    const voters = (): number[][] => [[1, 2, 3]];
    const c = group(3);
    cycle(c, 1, { hardState: hs(2, 1, 1), entries: [] });
    cycle(c, 1, { softState: { role: "leader" }, entries: [entry(2, 2), entry(3, 2)] });
    // Node 2 holds the entries but has not persisted them yet.
    c.readyHandedOut(2, { hardState: hs(2, 1, 1), entries: [entry(2, 2), entry(3, 2)] });
    violates("Commit", () => c.readyHandedOut(1, { hardState: hs(2, 1, 3), entries: [] }, voters));
    const d = group(3);
    cycle(d, 1, { hardState: hs(2, 1, 1), entries: [] });
    cycle(d, 1, { softState: { role: "leader" }, entries: [entry(2, 2), entry(3, 2)] });
    cycle(d, 2, { hardState: hs(2, 1, 1), entries: [entry(2, 2), entry(3, 2)] });
    d.readyHandedOut(1, { hardState: hs(2, 1, 3), entries: [] }, voters);
    // Under a configuration the decision may have used, one majority suffices.
    const e = group(4);
    cycle(e, 1, { hardState: hs(2, 1, 1), entries: [] });
    cycle(e, 1, { softState: { role: "leader" }, entries: [entry(2, 2)] });
    cycle(e, 4, { hardState: hs(2, 1, 1), entries: [entry(2, 2)] });
    e.readyHandedOut(1, { hardState: hs(2, 1, 2), entries: [] }, () => [
      [1, 2, 3],
      [1, 4],
    ]);
  });

  test("a leader that overwrites its own entries violates Leader Append-Only", () => {
    const c = leaderWithCommit();
    cycle(c, 1, { entries: [entry(4, 2)] });
    violates("Leader Append-Only", () => c.readyHandedOut(1, { entries: [entry(4, 2, "other")] }));
  });

  test("two logs with the same entry but different histories violate Log Matching", () => {
    const c = group(3);
    cycle(c, 1, { hardState: hs(2, 1, 1), entries: [entry(2, 2), entry(3, 2)] });
    violates("Log Matching", () =>
      c.readyHandedOut(2, {
        hardState: hs(2, 1, 1),
        entries: [entry(2, 2, "different"), entry(3, 2)],
      }),
    );
  });

  test("a leader elected without a committed entry violates Leader Completeness", () => {
    const c = leaderWithCommit();
    cycle(c, 3, { hardState: hs(3, 3, 1), entries: [] });
    violates("Leader Completeness", () =>
      c.readyHandedOut(3, { softState: { role: "leader" }, entries: [entry(2, 3)] }),
    );
  });

  test("a candidate that notices late that it won an older term may lead it", () => {
    // Node 3 won term 1 long ago, stalled, and learns it after term 2 committed 2..3.
    const c = leaderWithCommit();
    cycle(c, 3, { hardState: hs(1, 3, 1), entries: [] });
    cycle(c, 3, { softState: { role: "leader" }, entries: [entry(2, 1)] });
    // It must still hold what was committed before term 1, and may commit nothing.
    violates("Leader Completeness", () =>
      c.readyHandedOut(3, { hardState: hs(1, 3, 2), entries: [] }),
    );
  });

  test("a commit index over a different entry than the committed one fails", () => {
    const c = leaderWithCommit();
    cycle(c, 3, { hardState: hs(2, 1, 1), entries: [entry(2, 1, "stale")] });
    violates("Leader Completeness", () =>
      c.readyHandedOut(3, { hardState: hs(2, 1, 2), entries: [] }),
    );
  });

  test("a leader that commits an entry of an earlier term by counting replicas fails", () => {
    // Entry 2 of term 1 sits on nodes 1 and 2; node 1 leads term 2 and appends entry 3.
    const setUp = (): SafetyChecker => {
      const c = group(3);
      cycle(c, 1, { hardState: hs(1, 1, 1), entries: [entry(2, 1)] });
      cycle(c, 2, { hardState: hs(1, 1, 1), entries: [entry(2, 1)] });
      cycle(c, 1, { hardState: hs(2, 1, 1), entries: [] });
      cycle(c, 1, { softState: { role: "leader" }, entries: [entry(3, 2)] });
      return c;
    };
    violates("Commit", () => setUp().readyHandedOut(1, { hardState: hs(2, 1, 2), entries: [] }));
    // Committing its own entry 3 commits entry 2 with it.
    const c = setUp();
    c.readyHandedOut(1, { hardState: hs(2, 1, 3), entries: [] });
    assert.equal(c.commitIndex, 3);
  });

  test("a leader re-elected in the next term within one Ready cycle is a new leader", () => {
    // Node 1 led term 2; its next Ready carries term 3 but no soft state (still leader).
    const c = leaderWithCommit();
    cycle(c, 1, { hardState: hs(3, 1, 3), entries: [entry(4, 3)] });
    cycle(c, 2, { hardState: hs(3, 1, 3), entries: [entry(4, 3)] });
    c.readyHandedOut(1, { hardState: hs(3, 1, 4), entries: [] });
    assert.equal(c.commitIndex, 4);
    // Election Safety holds for such a term too.
    const d = leaderWithCommit();
    cycle(d, 2, { hardState: hs(3, 2, 3), entries: [] });
    cycle(d, 2, { softState: { role: "leader" }, entries: [entry(4, 3)] });
    violates("Election Safety", () => d.readyHandedOut(1, { hardState: hs(3, 1, 3), entries: [] }));
  });

  test("a leader may hand out a commit index it learned as a follower", () => {
    // Node 1 leads term 2 and sends commit 3 before handing it out itself; node 2 learns
    // it and wins term 3 before its next Ready.
    const setUp = (): SafetyChecker => {
      const c = group(3);
      cycle(c, 1, { hardState: hs(2, 1, 1), entries: [] });
      cycle(c, 1, { softState: { role: "leader" }, entries: [entry(2, 2), entry(3, 2)] });
      cycle(c, 2, { hardState: hs(2, 1, 1), entries: [entry(2, 2), entry(3, 2)] });
      return c;
    };
    const elect = (c: SafetyChecker): void =>
      c.readyHandedOut(2, { softState: { role: "leader" }, hardState: hs(3, 2, 3), entries: [] });
    const c = setUp();
    c.sending(1, msg("app", 1, 2, 2, { commit: 3 }));
    elect(c);
    assert.equal(c.commitIndex, 3);
    // Beyond what is known committed, an entry of an earlier term is not.
    violates("Commit", () => elect(setUp()));
  });

  test("a commit index that goes back fails", () => {
    const c = leaderWithCommit();
    violates("Commit", () => c.readyHandedOut(1, { hardState: hs(2, 1, 2), entries: [] }));
  });

  test("a read index below the commit index known when the read was asked fails", () => {
    const c = group(3);
    c.readRequested(2, "early");
    cycle(c, 1, { hardState: hs(2, 1, 1), entries: [] });
    cycle(c, 1, { softState: { role: "leader" }, entries: [entry(2, 2), entry(3, 2)] });
    cycle(c, 2, { hardState: hs(2, 1, 1), entries: [entry(2, 2), entry(3, 2)] });
    cycle(c, 1, { hardState: hs(2, 1, 3), entries: [] });
    // Asked before 3 was committed: index 1 is still a correct answer.
    c.readAnswered(2, "early", 1);
    c.readRequested(2, "late");
    c.readRequested(3, "late");
    violates("Read Index", () => c.readAnswered(2, "late", 2));
    c.readAnswered(3, "late", 3);
    // A duplicate answer is not judged again.
    c.readAnswered(3, "late", 1);
  });

  test("applying out of order, uncommitted, or differently violates State Machine Safety", () => {
    const c = leaderWithCommit();
    violates("State Machine Safety", () => c.applying(1, entry(3, 2)));
    c.applying(1, entry(2, 2));
    c.applying(1, entry(3, 2));
    violates("State Machine Safety", () => c.applying(1, entry(4, 2)));
    cycle(c, 2, { hardState: hs(2, 1, 3), entries: [] });
    violates("State Machine Safety", () => c.applying(2, entry(2, 2, "changed")));
  });

  test("recovery that loses a durable entry, term or vote violates durability", () => {
    const c = group(3);
    cycle(c, 2, { hardState: hs(2, 1, 1), entries: [entry(2, 2)] });
    c.crashed(2);
    violates("Durability", () => c.started(2, fresh({ hardState: hs(1, 0, 1) })));
    violates("Durability", () => c.started(2, fresh({ hardState: hs(2, 3, 1) })));
    violates("Durability", () => c.started(2, fresh({ hardState: hs(2, 1, 1), entries: [] })));
    // What was in flight may be lost; a report of damage (repair) excuses the loss.
    c.started(2, fresh({ hardState: hs(2, 1, 1), entries: [entry(2, 2)] }));
    c.readyHandedOut(2, { entries: [entry(3, 2)] });
    c.crashed(2);
    c.started(2, fresh({ hardState: hs(2, 1, 1), entries: [entry(2, 2)] }));
    c.crashed(2);
    c.started(2, fresh({ hardState: hs(2, 1, 1), repairThrough: 2 }));
  });

  test("a node under repair may neither vote nor lead", () => {
    const c = group(3);
    cycle(c, 2, { hardState: hs(2, 0, 1), entries: [entry(2, 2), entry(3, 2)] });
    c.crashed(2);
    c.started(2, fresh({ hardState: hs(2, 0, 1), repairThrough: 3 }));
    cycle(c, 2, { hardState: hs(3, 1, 1), entries: [] });
    violates("Repair", () => c.sending(2, msg("voteResp", 2, 1, 3)));
    // Healed once its log reaches the repair point again.
    cycle(c, 2, { entries: [entry(2, 2), entry(3, 2)] });
    c.sending(2, msg("voteResp", 2, 1, 3));
  });
});
