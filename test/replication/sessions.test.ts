/**
 * Client sessions (session-table.ts) through the apply path: a write sent again under its
 * session and sequence number answers with its first result and changes nothing, in
 * whatever order concurrent writes apply; unknown and expired sessions are refused; the
 * table survives a restart and a snapshot (a store checkpoint) through the store.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { WriteBatch } from "../../src/batch/write-batch.js";
import type { CasResult } from "../../src/db/kv-backend.js";
import { KvStore } from "../../src/db/kv-store.js";
import { isKvError } from "../../src/errors.js";
import type { Entry } from "../../src/raft/types.js";
import { Applier } from "../../src/replication/applier.js";
import {
  decodeCommand,
  encodeCas,
  encodeClock,
  encodeOpenSession,
  encodeWrite,
} from "../../src/replication/command.js";
import { storedKey } from "../../src/replication/keys.js";
import { upgradeMemberStore } from "../../src/replication/kv-state-machine.js";
import { readStoreState } from "../../src/replication/open-member.js";
import {
  decodeKept,
  encodeKept,
  type SessionCall,
  SessionTable,
} from "../../src/replication/session-table.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

const SELF = 7;
const membership = {
  members: [{ id: SELF, name: "a", peerAddress: "h:1", clientAddress: "", learner: false }],
  removed: [],
};
const k = Buffer.from("k");

function entry(index: number, data: Uint8Array, term = 2): Entry {
  return { index, term, type: "normal", data };
}

interface Settled {
  request: number;
  result: unknown;
  error: unknown;
}

function applierOn(store: KvStore, state: Awaited<ReturnType<typeof readStoreState>>) {
  const settled: Settled[] = [];
  const applier = new Applier(
    {
      store: () => store,
      mvcc: () => undefined,
      leases: () => undefined,
      upgrade: () => upgradeMemberStore(store),
      selfId: SELF,
      applyConfChange: () => {},
      onApplied: () => {},
      onMembership: () => {},
      settle: (request, result, error) => settled.push({ request, result, error }),
      settleAfterAdvance: (request, result, error) => settled.push({ request, result, error }),
    },
    state,
  );
  return { applier, settled };
}

async function setup(fs = new MemoryFileSystem()) {
  const store = await KvStore.open("/s", { fs, sync: false });
  const { applier, settled } = applierOn(store, { index: 1, term: 1, membership });
  return { fs, store, applier, settled };
}

const put = (v: string) => new WriteBatch().put("k", v).encode();
const cas = (request: number, from: string, to: string, session?: SessionCall) =>
  encodeCas(SELF, request, k, Buffer.from(from), Buffer.from(to), session);

async function valueOfK(store: KvStore): Promise<string | undefined> {
  const v = await store.get(storedKey(k));
  return v === undefined ? undefined : Buffer.from(v).toString();
}

function answer(settled: Settled[], request: number): Settled {
  const s = settled.find((x) => x.request === request);
  assert.ok(s !== undefined, `request ${request} was answered`);
  return s;
}

describe("client sessions", () => {
  test("commands of version 2 carry the session; version 1 stays for writes without one", () => {
    const s = { id: 300, seq: 5, ackedBelow: 4 };
    const plain = encodeWrite(SELF, 9, put("1"));
    assert.equal(plain[0], 1);
    const w = decodeCommand(encodeWrite(SELF, 9, put("1"), s));
    assert.equal(w.kind, "write");
    assert.deepEqual(w.kind === "write" ? w.session : undefined, s);
    const c = decodeCommand(cas(10, "a", "b", s));
    assert.deepEqual(c.kind === "cas" ? [c.session, Buffer.from(c.next!).toString()] : [], [
      s,
      "b",
    ]);
    assert.deepEqual(decodeCommand(encodeOpenSession(SELF, 11)), {
      kind: "openSession",
      proposer: SELF,
      request: 11,
    });
    const clock = decodeCommand(encodeClock(SELF, 1234));
    assert.equal(clock.kind === "clock" ? clock.elapsedMs : -1, 1234);
    // A version 1 command may not be of a version 2 kind.
    const bad = encodeOpenSession(SELF, 1);
    bad[0] = 1;
    assert.throws(
      () => decodeCommand(bad),
      (e: unknown) => isKvError(e, "CORRUPTION"),
    );
  });

  test("a CAS sent again under its session answers with its first result and changes nothing", async () => {
    const { store, applier, settled } = await setup();
    await applier.apply([entry(2, encodeOpenSession(SELF, 1))]);
    assert.deepEqual(answer(settled, 1).result, { id: 2, ttlMs: applier.sessions.limits.ttlMs });
    const s1 = { id: 2, seq: 1, ackedBelow: 1 };
    await applier.apply([
      entry(3, encodeWrite(SELF, 2, put("0"), { id: 2, seq: 1, ackedBelow: 1 })),
      entry(4, cas(3, "0", "1", { ...s1, seq: 2 })),
      // The same CAS again (a retry): applied again, it would fail its comparison.
      entry(5, cas(4, "0", "1", { ...s1, seq: 2 })),
    ]);
    assert.equal(await valueOfK(store), "1");
    const first = answer(settled, 3).result as CasResult;
    const again = answer(settled, 4).result as CasResult;
    assert.equal(first.applied, true);
    assert.deepEqual(again, first);
    // A put sent again is not applied again (here: it would undo the CAS).
    await applier.apply([
      entry(6, encodeWrite(SELF, 5, put("0"), { id: 2, seq: 1, ackedBelow: 1 })),
    ]);
    assert.equal(await valueOfK(store), "1");
    assert.equal(answer(settled, 5).error, undefined);
    await store.close();
  });

  test("concurrent writes apply in any order; the client's mark drops what it saw answered", async () => {
    const { store, applier, settled } = await setup();
    await applier.apply([entry(2, encodeOpenSession(SELF, 1))]);
    await applier.apply([
      entry(3, encodeWrite(SELF, 12, put("b"), { id: 2, seq: 2, ackedBelow: 1 })),
      entry(4, encodeWrite(SELF, 11, put("a"), { id: 2, seq: 1, ackedBelow: 1 })),
      entry(5, encodeWrite(SELF, 13, put("b"), { id: 2, seq: 2, ackedBelow: 1 })),
    ]);
    assert.equal(await valueOfK(store), "a");
    assert.deepEqual(
      [11, 12, 13].map((r) => answer(settled, r).error),
      [undefined, undefined, undefined],
    );
    // Seq 1 and 2 were answered: a write with mark 3 drops them; seq 1 is then refused.
    await applier.apply([
      entry(6, encodeWrite(SELF, 14, put("c"), { id: 2, seq: 3, ackedBelow: 3 })),
      entry(7, encodeWrite(SELF, 15, put("a"), { id: 2, seq: 1, ackedBelow: 3 })),
    ]);
    assert.equal(await valueOfK(store), "c");
    assert.ok(isKvError(answer(settled, 15).error, "FAILED_PRECONDITION"));
    await store.close();
  });

  test("a write of an unknown or expired session is refused and changes nothing", async () => {
    const { store, applier, settled } = await setup();
    await applier.apply([
      entry(2, encodeWrite(SELF, 1, put("x"), { id: 99, seq: 1, ackedBelow: 1 })),
    ]);
    assert.ok(isKvError(answer(settled, 1).error, "SESSION_EXPIRED"));
    assert.equal(await valueOfK(store), undefined);
    await applier.apply([entry(3, encodeOpenSession(SELF, 2))]);
    const ttl = applier.sessions.limits.ttlMs;
    // Idle for the TTL exactly: kept; one millisecond more: expired.
    await applier.apply([entry(4, encodeClock(SELF, ttl))]);
    assert.ok(applier.sessions.has(3));
    await applier.apply([entry(5, encodeClock(SELF, 1))]);
    assert.ok(!applier.sessions.has(3));
    await applier.apply([entry(6, cas(3, "", "y", { id: 3, seq: 1, ackedBelow: 1 }))]);
    assert.ok(isKvError(answer(settled, 3).error, "SESSION_EXPIRED"));
    assert.equal(await valueOfK(store), undefined);
    await store.close();
  });

  test("the table survives a restart and a snapshot: a retry is still recognised", async () => {
    const { fs, store, applier } = await setup();
    const s = { id: 2, seq: 1, ackedBelow: 1 };
    await applier.apply([
      entry(2, encodeOpenSession(SELF, 1)),
      entry(3, encodeWrite(SELF, 2, put("0"))),
      entry(4, cas(3, "0", "1", s)),
      entry(5, encodeClock(SELF, 500)),
    ]);
    await store.checkpoint("/snap");
    await store.close();
    for (const dir of ["/s", "/snap"]) {
      const reopened = await KvStore.open(dir, { fs, sync: false });
      const state = await readStoreState(reopened);
      const { applier: again, settled } = applierOn(reopened, state);
      assert.equal(again.sessions.clusterTime, 500, dir);
      await again.apply([entry(6, cas(9, "0", "1", s))]);
      assert.deepEqual(
        answer(settled, 9).result,
        { applied: true, current: Buffer.from("1") },
        dir,
      );
      assert.equal(await valueOfK(reopened), "1");
      await reopened.close();
    }
  });

  test("opening a session past the limit evicts the least recently active", () => {
    const t = new SessionTable({ ttlMs: 1000, maxSessions: 2, maxResults: 2 });
    const sink = { put: () => {}, delete: () => {} };
    t.open(10, sink);
    t.open(11, sink);
    t.advance(5, sink);
    assert.equal(t.decide({ id: 10, seq: 1, ackedBelow: 1 }, sink).kind, "apply");
    t.open(12, sink);
    assert.deepEqual([t.has(10), t.has(11), t.has(12)], [true, false, true]);
    // The results kept per session are bounded.
    assert.equal(t.decide({ id: 10, seq: 2, ackedBelow: 1 }, sink).kind, "apply");
    const third = t.decide({ id: 10, seq: 3, ackedBelow: 1 }, sink);
    assert.equal(third.kind, "refused");
  });

  test("kept results round-trip", () => {
    for (const kept of [
      { cas: undefined },
      { cas: { applied: false, current: undefined } },
      { cas: { applied: true, current: Buffer.from("v") } },
    ]) {
      assert.deepEqual(decodeKept(encodeKept(kept)), kept);
    }
  });
});
