/**
 * WriteSession: single-flight opening, a server without sessions turning them off, the
 * mark moving past writes once every lower one settled (in any order), kept writes
 * holding the mark until the window is full, and a new session after expiry.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_WINDOW, WriteSession } from "../../src/client/write-session.js";

const UNSUPPORTED = new Error("unimplemented");

function session(ids: bigint[] = [7n, 8n]) {
  let opens = 0;
  const s = new WriteSession(
    () => {
      opens++;
      const id = ids.shift();
      return id === undefined ? Promise.reject(UNSUPPORTED) : Promise.resolve({ id, ttlMs: 1000n });
    },
    (err) => err === UNSUPPORTED,
  );
  return { s, opens: () => opens };
}

test("concurrent writes share one OpenSession; a server without sessions turns them off", async () => {
  const { s, opens } = session([7n]);
  assert.deepEqual(await Promise.all([s.open(), s.open(), s.open()]), [7n, 7n, 7n]);
  assert.equal(opens(), 1);
  const none = session([]);
  assert.equal(await none.s.open(), undefined);
  assert.equal(await none.s.open(), undefined);
  assert.equal(none.opens(), 1, "asked once");
});

test("the mark passes a write once it and every lower one settled, in any order", async () => {
  const { s } = session();
  const id = (await s.open())!;
  const [a, b, c] = [s.next(id), s.next(id), s.next(id)];
  assert.deepEqual([a.seq, b.seq, c.seq, c.ackedBelow], [1n, 2n, 3n, 1n]);
  s.settled(id, 2);
  s.settled(id, 3);
  assert.equal(s.mark, 1);
  assert.equal(s.again(id, 1n).ackedBelow, 1n);
  s.settled(id, 1);
  assert.equal(s.mark, 4);
  assert.equal(s.next(id).ackedBelow, 4n);
});

test("a kept write holds the mark until the window is full, then is given up", async () => {
  const { s } = session();
  const id = (await s.open())!;
  const first = s.next(id);
  let givenUp = false;
  s.keep(id, Number(first.seq), () => {
    givenUp = true;
  });
  for (let i = 2; i <= MAX_WINDOW; i++) s.settled(id, Number(s.next(id).seq));
  assert.equal(s.mark, 1, "held by the kept write");
  assert.equal(givenUp, false);
  const past = s.next(id);
  assert.equal(givenUp, true);
  assert.equal(past.ackedBelow, BigInt(MAX_WINDOW + 1));
});

test("after the cluster refused the session the next write opens a new one, numbered from 1", async () => {
  const { s, opens } = session([7n, 8n]);
  const id = (await s.open())!;
  s.next(id);
  let givenUp = false;
  s.keep(id, 1, () => {
    givenUp = true;
  });
  s.expired(id);
  const fresh = (await s.open())!;
  assert.equal(fresh, 8n);
  assert.equal(opens(), 2);
  assert.equal(givenUp, true, "writes kept in the old session are given up");
  assert.deepEqual(s.next(fresh), { id: 8n, seq: 1n, ackedBelow: 1n });
});
