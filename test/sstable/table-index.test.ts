import assert from "node:assert/strict";
import { test } from "node:test";
import {
  encodeInternalKey,
  KIND_DELETE,
  KIND_PUT,
  MAX_SEQUENCE,
} from "../../src/key/internal-key.js";
import { Block } from "../../src/sstable/block.js";
import { BlockBuilder } from "../../src/sstable/block-builder.js";
import { TableIndex } from "../../src/sstable/table-index.js";
import { putVarint } from "../../src/util/coding.js";
import { bytes, randomBytes, rng } from "./helpers.js";

/** An index block over the given user keys (one version each), block i at offset 100 i. */
function indexOf(keys: readonly Uint8Array[]): TableIndex {
  const b = new BlockBuilder(1);
  const handle = new Uint8Array(20);
  keys.forEach((k, i) => {
    const n = putVarint(handle, putVarint(handle, 0, i * 100), 95);
    b.add(encodeInternalKey(k, 50, KIND_PUT), handle.subarray(0, n));
  });
  return TableIndex.decode(new Block(b.finish().slice(), "idx", 0), keys.length * 100 + 1000);
}

test("the index's integer fast path answers like whole-key comparison", () => {
  const r = rng(99);
  // Keys sharing a long prefix, with zero bytes, different lengths, and a last key outside
  // the prefix (like a short successor).
  const prefix = bytes("common/prefix/");
  const set = new Map<string, Uint8Array>();
  while (set.size < 3000) {
    const tail = randomBytes(r, Math.floor(r() * 12));
    for (let i = 0; i < tail.length; i++) if (r() < 0.3) tail[i] = 0;
    const k = new Uint8Array(prefix.length + tail.length);
    k.set(prefix);
    k.set(tail, prefix.length);
    set.set(Buffer.from(k).toString("hex"), k);
  }
  const keys = [...set.values()].sort((a, b) => Buffer.compare(a, b));
  keys.push(bytes("d"));
  const index = indexOf(keys);
  assert.equal(index.count, keys.length);
  const probes: Uint8Array[] = [bytes(""), bytes("common"), bytes("common/prefix"), bytes("zz")];
  for (const k of keys) {
    probes.push(k, Uint8Array.of(...k, 0), Uint8Array.of(...k, 0, 0, 0, 0, 0, 0, 0, 0, 1));
    if (k.length > 0) probes.push(k.subarray(0, k.length - 1));
  }
  for (const k of probes) {
    for (const [seq, kind] of [
      [MAX_SEQUENCE, KIND_PUT],
      [50, KIND_PUT],
      [50, KIND_DELETE],
      [49, KIND_PUT],
      [51, KIND_PUT],
    ] as const) {
      const t = encodeInternalKey(k, seq, kind);
      assert.equal(
        index.findFirstGE(t, t.length),
        index.findFirstGESlow(t, t.length),
        `${Buffer.from(k).toString("hex")}#${seq}`,
      );
    }
  }
});
