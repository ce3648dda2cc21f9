import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeReadPosition, encodeReadPosition, ReadOnlyQueue } from "../../src/raft/read-only.js";

const ctx = (s: string) => new TextEncoder().encode(s);

test("a round covers every request queued before it; a majority's echo confirms them in order", () => {
  const q = new ReadOnlyQueue();
  q.add({ from: 1, context: ctx("a"), index: 5 });
  q.add({ from: 2, context: ctx("b"), index: 6 });
  assert.equal(q.needsRound(), true);
  const round = q.roundContext(1);
  assert.equal(decodeReadPosition(round), 2);
  assert.equal(q.needsRound(), false);
  q.add({ from: 1, context: ctx("c"), index: 7 });
  assert.equal(q.needsRound(), true, "a later request needs a later round");
  assert.deepEqual(q.advance([1, 2, 3]), [], "only the leader's own acknowledgement so far");
  q.recvAck(2, 2);
  assert.deepEqual(
    q.advance([1, 2, 3]).map((r) => r.index),
    [5, 6],
  );
  q.recvAck(3, 3);
  assert.deepEqual(q.advance([1, 2, 3]), [], "the leader's own ack covers only 2");
  q.roundContext(1);
  assert.deepEqual(
    q.advance([1, 2, 3]).map((r) => r.index),
    [7],
  );
  assert.equal(q.pending, 0);
});

test("acknowledgements from non-voters do not count", () => {
  const q = new ReadOnlyQueue();
  q.add({ from: 1, context: ctx("a"), index: 5 });
  q.roundContext(1);
  q.recvAck(4, 1);
  q.recvAck(5, 1);
  assert.deepEqual(q.advance([1, 2, 3]), []);
});

test("read positions round-trip; garbage decodes as none", () => {
  for (const p of [1, 127, 128, 2 ** 40])
    assert.equal(decodeReadPosition(encodeReadPosition(p)), p);
  assert.equal(decodeReadPosition(new Uint8Array(0)), 0);
  assert.equal(decodeReadPosition(new Uint8Array([0x80])), 0);
  assert.equal(decodeReadPosition(new Uint8Array([1, 2])), 0);
});
