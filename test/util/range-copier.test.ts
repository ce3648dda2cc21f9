/**
 * RangeCopier copies exactly the range asked for, at every length around its word and
 * loop thresholds, from and into arrays that start inside their buffers, and follows a
 * change of source or destination array (it keeps views of the last ones).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { RangeCopier } from "../../src/util/range-copier.js";

function patterned(n: number, seed: number): Uint8Array {
  const a = new Uint8Array(n);
  for (let i = 0; i < n; i++) a[i] = (seed + i * 13 + (i >>> 8)) & 0xff;
  return a;
}

test("copies src[from, from + n) to dst[at, ...) and nothing else, for n from 0 to 70", () => {
  const copier = new RangeCopier();
  const src = patterned(200, 1);
  for (let n = 0; n <= 70; n++) {
    for (const [from, at] of [
      [0, 0],
      [3, 5],
      [7, 1],
      [200 - n, 100],
    ] as const) {
      const dst = new Uint8Array(200).fill(0xee);
      copier.copy(src, from, n, dst, at);
      const expected = new Uint8Array(200).fill(0xee);
      expected.set(src.subarray(from, from + n), at);
      assert.deepEqual(dst, expected, `n ${n}, from ${from}, at ${at}`);
    }
  }
});

test("arrays that start inside their buffers, and a new source or destination each call", () => {
  const copier = new RangeCopier();
  const shared = new SharedArrayBuffer(256);
  const chunk = new Uint8Array(shared);
  chunk.set(patterned(256, 7));
  const buffers = [new Uint8Array(64), new Uint8Array(64)];
  for (let round = 0; round < 4; round++) {
    const src = round % 2 === 0 ? chunk.subarray(9 + round) : patterned(100, round);
    const outer = buffers[round % 2]!;
    outer.fill(0);
    const dst = outer.subarray(3);
    copier.copy(src, 2, 40, dst, 1);
    assert.deepEqual(dst.subarray(1, 41), src.subarray(2, 42), `round ${round}`);
    assert.equal(outer[3], 0);
    assert.equal(outer[45], 0);
  }
  copier.forget();
  const dst = new Uint8Array(20);
  copier.copy(chunk, 0, 20, dst, 0);
  assert.deepEqual(dst, chunk.subarray(0, 20));
});
