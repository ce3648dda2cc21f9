import assert from "node:assert/strict";
import { test } from "node:test";
import { MergingIterator } from "../../src/iterator/merging-iterator.js";
import { formatInternalKey, KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { Memtable } from "../../src/memtable/memtable.js";
import { randInt, rng, testSeed } from "../support/random.js";

const b = (s: string) => Buffer.from(s);

function entries(it: MergingIterator, reverse = false): string[] {
  const out: string[] = [];
  if (reverse)
    for (it.seekToLast(); it.valid(); it.prev())
      out.push(formatInternalKey(it.key, it.seq, it.kind));
  else
    for (it.seekToFirst(); it.valid(); it.next())
      out.push(formatInternalKey(it.key, it.seq, it.kind));
  return out;
}

test("merging yields every entry of every source in internal-key order, both ways", () => {
  const a = new Memtable();
  const c = new Memtable();
  a.add(1, KIND_PUT, b("apple"), b("1"));
  a.add(5, KIND_PUT, b("cherry"), b("5"));
  c.add(3, KIND_DELETE, b("apple"), b(""));
  c.add(2, KIND_PUT, b("banana"), b("2"));
  c.add(4, KIND_PUT, b("cherry"), b("4"));
  const it = new MergingIterator([a.iterator(), c.iterator()]);
  const forward = ["apple#3,DEL", "apple#1,PUT", "banana#2,PUT", "cherry#5,PUT", "cherry#4,PUT"];
  assert.deepEqual(entries(it), forward);
  assert.deepEqual(entries(it, true), [...forward].reverse());
});

test("next and prev can be mixed freely, matching a sorted list of all entries", () => {
  const seed = testSeed();
  const r = rng(seed);
  const sources = [new Memtable(), new Memtable(), new Memtable()];
  const all: Array<{ key: string; seq: number }> = [];
  for (let seq = 1; seq <= 300; seq++) {
    const key = `k${String(randInt(r, 60)).padStart(3, "0")}`;
    sources[randInt(r, 3)]!.add(seq, KIND_PUT, b(key), b(String(seq)));
    all.push({ key, seq });
  }
  all.sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : y.seq - x.seq));
  const it = new MergingIterator(sources.map((s) => s.iterator()));
  it.seekToFirst();
  let pos = 0;
  for (let step = 0; step < 2000; step++) {
    assert.ok(it.valid(), `seed ${seed}: invalid at ${pos}`);
    assert.equal(
      `${Buffer.from(it.key).toString()}#${it.seq}`,
      `${all[pos]!.key}#${all[pos]!.seq}`,
      `seed ${seed}`,
    );
    const forward = r() < 0.6;
    if (forward && pos + 1 < all.length) {
      it.next();
      pos++;
    } else if (!forward && pos > 0) {
      it.prev();
      pos--;
    }
  }
});

test("seek and seekForPrev land on the first entry at or after, and the last at or before", () => {
  const a = new Memtable();
  const c = new Memtable();
  a.add(10, KIND_PUT, b("b"), b(""));
  c.add(20, KIND_PUT, b("b"), b(""));
  c.add(5, KIND_PUT, b("d"), b(""));
  const it = new MergingIterator([a.iterator(), c.iterator()]);
  it.seek(b("b"), 15);
  assert.equal(formatInternalKey(it.key, it.seq, it.kind), "b#10,PUT");
  it.seek(b("c"), 100);
  assert.equal(formatInternalKey(it.key, it.seq, it.kind), "d#5,PUT");
  it.seekForPrev(b("c"), 0);
  assert.equal(formatInternalKey(it.key, it.seq, it.kind), "b#10,PUT");
  it.seekForPrev(b("a"), 0);
  assert.equal(it.valid(), false);
});
