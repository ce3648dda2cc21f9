/**
 * WriteBatch encoding (docs/format/write-batch.md) and decodeBatch: round trips, views
 * into batches that sit inside a larger buffer, and malformed batches (CORRUPTION).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BATCH_HEADER_SIZE,
  batchCount,
  batchSequence,
  decodeBatch,
  encodeSingleDelete,
  encodeSinglePut,
  setBatchSequence,
  validateBatch,
  WriteBatch,
} from "../../src/batch/write-batch.js";
import { isKvError } from "../../src/errors.js";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";

interface Decoded {
  seq: number;
  kind: number;
  key: string;
  value: string;
}

function decoded(rep: Uint8Array): Decoded[] {
  const out: Decoded[] = [];
  decodeBatch(rep, (seq, kind, key, value) =>
    out.push({
      seq,
      kind,
      key: Buffer.from(key).toString("latin1"),
      value: Buffer.from(value).toString("latin1"),
    }),
  );
  return out;
}

test("puts and deletes round-trip in order with consecutive sequence numbers", () => {
  const b = new WriteBatch();
  b.put("apple", "red");
  b.delete(Uint8Array.of(0, 255, 7));
  b.put(Buffer.from("big"), "x".repeat(300)); // past one-byte varints
  b.put("empty", "");
  assert.equal(b.count, 4);
  const rep = b.encode();
  assert.equal(rep.length, b.byteSize);
  assert.equal(batchCount(rep), 4);
  setBatchSequence(rep, 41);
  assert.equal(batchSequence(rep), 41);
  assert.deepEqual(decoded(rep), [
    { seq: 41, kind: KIND_PUT, key: "apple", value: "red" },
    { seq: 42, kind: KIND_DELETE, key: "\x00\xff\x07", value: "" },
    { seq: 43, kind: KIND_PUT, key: "big", value: "x".repeat(300) },
    { seq: 44, kind: KIND_PUT, key: "empty", value: "" },
  ]);
  validateBatch(rep);
});

test("an encoding stays as it was whatever the batch and other batches do afterwards", () => {
  // encode hands out the batch's own buffer until the batch changes (copy on write), and
  // buffers a batch outgrows are reused by other batches: neither may touch an encoding
  // a pending write still holds.
  const fill = (b: WriteBatch, tag: string, n: number) => {
    for (let i = 0; i < n; i++) b.put(`${tag}${i}`, `${tag}-value-${i}`.repeat(4));
  };
  const a = new WriteBatch();
  fill(a, "a", 2000); // grows through several buffer sizes
  const first = a.encode();
  const firstCopy = Buffer.from(first);
  setBatchSequence(first, 7); // as the commit path does
  firstCopy.writeUInt32LE(7, 0);
  const again = a.encode(); // unchanged batch: its earlier encoding may be pending
  assert.notEqual(again.buffer, first.buffer);
  assert.equal(batchSequence(again), 0, "a new encoding starts at sequence 0");
  setBatchSequence(again, 9000);
  assert.equal(batchSequence(first), 7);
  a.put("a-more", "x"); // copy on write
  a.delete("a0");
  const others: WriteBatch[] = [];
  for (let k = 0; k < 4; k++) {
    const b = new WriteBatch();
    fill(b, `b${k}-`, 3000); // takes the buffers a and the others outgrew
    others.push(b);
  }
  a.clear();
  fill(a, "c", 500);
  assert.deepEqual(Buffer.from(first), firstCopy, "the first encoding changed");
  assert.equal(batchCount(first), 2000);
  assert.equal(batchSequence(again), 9000);
  assert.equal(decoded(again).length, 2000);
  const later = decoded(a.encode());
  assert.equal(later.length, 500);
  assert.equal(later[0]?.key, "c0");
  for (const [k, b] of others.entries()) {
    const got = decoded(b.encode());
    assert.equal(got.length, 3000);
    assert.equal(got[2999]?.value, `b${k}--value-2999`.repeat(4));
  }
});

test("decoded keys and values are views of the batch at its own offset in a larger buffer", () => {
  const b = new WriteBatch();
  for (let i = 0; i < 50; i++) b.put(`key-${i}`, `value-${i}`.repeat(i % 5));
  const encoded = b.encode();
  // The batch 13 bytes into a bigger ArrayBuffer, as a Buffer slice and as a Uint8Array.
  const backing = new ArrayBuffer(encoded.length + 40);
  const asBuffer = Buffer.from(backing, 13, encoded.length);
  asBuffer.set(encoded);
  const asBytes = new Uint8Array(backing, 13, encoded.length);
  for (const rep of [asBuffer, asBytes]) {
    const want = decoded(encoded);
    assert.deepEqual(decoded(rep), want);
    decodeBatch(rep, (_seq, _kind, key, value) => {
      assert.equal(key.buffer, backing);
      assert.equal(value.length === 0 || value.buffer === backing, true);
      assert.ok(key.byteOffset >= 13 + BATCH_HEADER_SIZE && key.byteOffset < 13 + rep.length);
    });
  }
});

test("the single-entry encodings equal a one-entry WriteBatch", () => {
  const same = (a: Uint8Array, b: Uint8Array) => assert.deepEqual(Buffer.from(a), Buffer.from(b));
  same(encodeSinglePut("k", "v"), new WriteBatch().put("k", "v").encode());
  same(encodeSingleDelete("k"), new WriteBatch().delete("k").encode());
  const key = Uint8Array.from([1, 2, 3]);
  same(
    encodeSinglePut(key, new Uint8Array(0)),
    new WriteBatch().put(key, new Uint8Array(0)).encode(),
  );
  // Big enough to get memory of its own, not a slab's.
  const big = new Uint8Array(20_000).fill(7);
  same(encodeSinglePut(key, big), new WriteBatch().put(key, big).encode());
});

test("single-entry encodings share slabs but never each other's bytes", () => {
  const reps: Array<[Uint8Array, string, string]> = [];
  // ~150 KB in all: more than two slabs; a delete and a big put in between.
  for (let i = 0; i < 1200; i++) {
    const key = `key-${i}`;
    const value = i % 100 === 7 ? "" : `value-${i}-`.padEnd(100 + (i % 30), "v");
    reps.push([i % 100 === 7 ? encodeSingleDelete(key) : encodeSinglePut(key, value), key, value]);
    if (i === 600) encodeSinglePut("big", "x".repeat(10_000));
  }
  // The commit path writes the sequence into each; that must not touch the others.
  reps.forEach(([rep], i) => {
    setBatchSequence(rep, 1000 + i);
  });
  reps.forEach(([rep, key, value], i) => {
    assert.equal(batchSequence(rep), 1000 + i);
    const seen: string[] = [];
    decodeBatch(rep, (seq, kind, k, v) => {
      assert.equal(seq, 1000 + i);
      assert.equal(kind, value === "" ? KIND_DELETE : KIND_PUT);
      seen.push(Buffer.from(k).toString(), Buffer.from(v).toString());
    });
    assert.deepEqual(seen, [key, value]);
  });
  const buffers = new Set(reps.map(([rep]) => rep.buffer));
  assert.ok(buffers.size >= 2 && buffers.size < 10, `${buffers.size} slabs`);
});

test("malformed batches are CORRUPTION", () => {
  const good = new WriteBatch().put("key", "value").delete("gone").encode();
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ["shorter than its header", good.subarray(0, 5), /shorter than its header/],
    ["an unknown kind", Uint8Array.from(good).fill(9, 12, 13), /unknown entry kind 9/],
    ["a key past the end", good.subarray(0, 14), /key length past the end/],
    ["a value past the end", good.subarray(0, 20), /value length past the end/],
    [
      "a count that disagrees",
      (() => {
        const r = Uint8Array.from(good);
        r[8] = 3;
        return r;
      })(),
      /header says 3 entries, found 2/,
    ],
  ];
  for (const [what, rep, message] of cases) {
    assert.throws(
      () => validateBatch(rep),
      (err) => isKvError(err, "CORRUPTION") && message.test(err.message),
      what,
    );
  }
});
