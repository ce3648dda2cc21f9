import assert from "node:assert/strict";
import { describe as suite, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import {
  encodeInternalKey,
  KIND_DELETE,
  KIND_PUT,
  MAX_SEQUENCE,
} from "../../src/key/internal-key.js";
import { Block, BlockIterator } from "../../src/sstable/block.js";
import { BlockBuilder } from "../../src/sstable/block-builder.js";
import {
  at,
  bytes,
  type Entry,
  lowerBound,
  randomUserKeys,
  rng,
  scanBackward,
  scanForward,
  show,
  upperBoundForPrev,
  versionedEntries,
} from "./helpers.js";

function buildBlock(entries: readonly Entry[], restartInterval: number): Block {
  const b = new BlockBuilder(restartInterval);
  for (const e of entries) b.add(encodeInternalKey(e.key, e.seq, e.kind), e.value);
  return new Block(b.finish().slice(), "test-block", 0);
}

for (const restartInterval of [1, 3, 16]) {
  suite(`a block with restart interval ${restartInterval}`, () => {
    const r = rng(1000 + restartInterval);
    const entries = versionedEntries(r, randomUserKeys(r, 300), 30);
    const block = buildBlock(entries, restartInterval);

    test("has one restart point per interval", () => {
      assert.equal(block.numRestarts, Math.ceil(entries.length / restartInterval));
    });

    test("iterates forward through every entry in order", () => {
      assert.deepEqual(scanForward(block.iterator()).map(show), entries.map(show));
    });

    test("iterates backward through every entry in reverse order", () => {
      assert.deepEqual(scanBackward(block.iterator()).map(show), entries.map(show).reverse());
    });

    test("seek finds the first entry at or after any target", () => {
      const it = block.iterator();
      const probes: Array<[Uint8Array, number]> = [];
      for (const e of entries) {
        probes.push([e.key, e.seq], [e.key, e.seq + 1], [e.key, e.seq - 1], [e.key, MAX_SEQUENCE]);
        const longer = new Uint8Array(e.key.length + 1);
        longer.set(e.key);
        probes.push([longer, 0], [e.key, 0]);
      }
      probes.push([new Uint8Array(0), MAX_SEQUENCE], [bytes("\xff\xff\xff\xff\xff\xff\xff"), 0]);
      for (const [key, seq] of probes) {
        it.seek(key, seq);
        assert.equal(at(it), show(entries[lowerBound(entries, key, seq)]));
      }
    });

    test("seekForPrev finds the last entry at or before any target", () => {
      const it = block.iterator();
      for (const e of entries) {
        for (const seq of [e.seq, e.seq + 1, e.seq - 1, 0, MAX_SEQUENCE]) {
          it.seekForPrev(e.key, seq);
          assert.equal(at(it), show(entries[upperBoundForPrev(entries, e.key, seq)]));
        }
      }
      it.seekForPrev(new Uint8Array(0), MAX_SEQUENCE);
      assert.equal(it.valid(), false);
    });

    test("mixed next and prev moves agree with the model", () => {
      const it = block.iterator();
      const rr = rng(7);
      let pos = Math.floor(rr() * entries.length);
      const start = entries[pos]!;
      it.seek(start.key, start.seq);
      for (let step = 0; step < 2000; step++) {
        if (pos < 0 || pos >= entries.length) {
          assert.equal(it.valid(), false);
          pos = Math.floor(rr() * entries.length);
          const e = entries[pos]!;
          it.seek(e.key, e.seq);
        }
        assert.equal(at(it), show(entries[pos]));
        if (rr() < 0.5) {
          it.next();
          pos++;
        } else {
          it.prev();
          pos--;
        }
      }
    });
  });
}

suite("a block", () => {
  test("with no entries is 8 bytes and iterates as empty", () => {
    const data = new BlockBuilder(16).finish();
    assert.deepEqual([...data], [0, 0, 0, 0, 1, 0, 0, 0]);
    const it = new Block(data.slice()).iterator();
    it.seekToFirst();
    assert.equal(it.valid(), false);
    it.seekToLast();
    assert.equal(it.valid(), false);
    it.seek(bytes("a"), 1);
    assert.equal(it.valid(), false);
    it.seekForPrev(bytes("a"), 1);
    assert.equal(it.valid(), false);
  });

  test("stores shared prefixes once between restarts", () => {
    const b = new BlockBuilder(16);
    b.add(encodeInternalKey(bytes("prefix-aaaa"), 5, KIND_PUT), bytes("1"));
    b.add(encodeInternalKey(bytes("prefix-aaab"), 5, KIND_PUT), bytes("2"));
    const data = b.finish();
    // Second entry: shares 10 bytes ("prefix-aaa"), 1 + 8 unshared.
    const second = 3 + 11 + 8 + 1;
    assert.deepEqual([...data.subarray(second, second + 3)], [10, 9, 1]);
  });

  test("keeps entries with empty values and huge values", () => {
    const big = new Uint8Array(100_000).fill(7);
    const entries: Entry[] = [
      { key: bytes("a"), seq: 3, kind: KIND_PUT, value: new Uint8Array(0) },
      { key: bytes("a"), seq: 2, kind: KIND_DELETE, value: new Uint8Array(0) },
      { key: bytes("b"), seq: 1, kind: KIND_PUT, value: big },
    ];
    const block = buildBlock(entries, 16);
    assert.deepEqual(scanForward(block.iterator()).map(show), entries.map(show));
  });

  test("key and value accessors return views, reused key buffer", () => {
    const block = buildBlock(
      [
        { key: bytes("k1"), seq: 9, kind: KIND_PUT, value: bytes("v1") },
        { key: bytes("k2"), seq: 8, kind: KIND_DELETE, value: bytes("") },
      ],
      16,
    );
    const it = new BlockIterator(block);
    it.seekToFirst();
    const value = it.value;
    assert.equal(value.buffer, block.data.buffer);
    assert.equal(it.seq, 9);
    assert.equal(it.kind, KIND_PUT);
    it.next();
    assert.equal(it.kind, KIND_DELETE);
    assert.deepEqual([...value], [...bytes("v1")]);
  });

  function corruptionOf(fn: () => void): string {
    try {
      fn();
    } catch (err) {
      assert.ok(isKvError(err, "CORRUPTION"), `expected CORRUPTION, got ${String(err)}`);
      assert.equal(err.file, "f.sst");
      return err.message;
    }
    return "no error";
  }

  test("rejects a restart array that cannot fit or is out of order", () => {
    assert.match(
      corruptionOf(() => new Block(Uint8Array.of(1, 2), "f.sst", 0)),
      /too short/,
    );
    assert.match(
      corruptionOf(() => new Block(Uint8Array.of(0, 0, 0, 0, 9, 0, 0, 0), "f.sst", 0)),
      /restart count/,
    );
    assert.match(
      corruptionOf(() => new Block(Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0), "f.sst", 0)),
      /restart count 0/,
    );
    const good = buildBlock(
      [
        { key: bytes("a"), seq: 1, kind: KIND_PUT, value: bytes("x") },
        { key: bytes("b"), seq: 1, kind: KIND_PUT, value: bytes("y") },
      ],
      1,
    ).data.slice();
    // Swap the two restart offsets.
    const r = good.length - 12;
    const copy = good.slice();
    copy.set(good.subarray(r + 4, r + 8), r);
    copy.set(good.subarray(r, r + 4), r + 4);
    assert.match(
      corruptionOf(() => new Block(copy, "f.sst", 128)),
      /offset 128.*restart point/,
    );
  });

  test("reports entries whose lengths run past the block as CORRUPTION", () => {
    const data = buildBlock(
      [
        { key: bytes("a"), seq: 1, kind: KIND_PUT, value: bytes("x") },
        { key: bytes("b"), seq: 1, kind: KIND_PUT, value: bytes("y") },
      ],
      16,
    ).data.slice();
    const bad = data.slice();
    bad[2] = 100; // value length of the first entry
    assert.match(
      corruptionOf(() => new Block(bad, "f.sst", 0).iterator().seekToFirst()),
      /bad entry at offset 0/,
    );
    const badShared = data.slice();
    badShared[0] = 5; // shared bytes of the first entry, with no previous key
    assert.match(
      corruptionOf(() => new Block(badShared, "f.sst", 0).iterator().seekToFirst()),
      /bad entry/,
    );
    const badKind = data.slice();
    badKind[3 + 1] = 7; // kind byte of the first key "a"
    assert.match(
      corruptionOf(() => new Block(badKind, "f.sst", 0).iterator().seekToFirst()),
      /unknown kind/,
    );
    const shortKey = data.slice();
    shortKey[1] = 3; // unshared key bytes: 3 < 8
    shortKey[2] = 0;
    assert.match(
      corruptionOf(() => new Block(shortKey, "f.sst", 0).iterator().seekToFirst()),
      /key of 3 bytes/,
    );
  });
});
