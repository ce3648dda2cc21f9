import assert from "node:assert/strict";
import { test } from "node:test";
import v8 from "node:v8";
import vm from "node:vm";
import {
  compareInternal,
  formatInternalKey,
  KIND_DELETE,
  KIND_PUT,
  MAX_SEQUENCE,
  type ValueKind,
} from "../../src/key/internal-key.js";
import {
  ENTRY_OVERHEAD_BYTES,
  Memtable,
  type MemtableEntry,
  type MemtableIterator,
} from "../../src/memtable/memtable.js";
import { bytes as bytesOf, text } from "../support/bytes.js";
import { randInt, rng } from "../support/random.js";

const b = bytesOf;
const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);

/** Byte equality (the model's values are unique per insert, so this identifies the entry). */
const sameBytes = (x: Uint8Array, y: Uint8Array): boolean => Buffer.compare(x, y) === 0;

/** `key#seq,KIND` of an entry, for readable assertion failures. */
function show(e: { key: Uint8Array; seq: number; kind: number }): string {
  return formatInternalKey(e.key, e.seq, e.kind);
}

function scanForward(m: Memtable): string[] {
  const out: string[] = [];
  const it = m.iterator();
  for (it.seekToFirst(); it.valid(); it.next()) out.push(show(it));
  return out;
}

function scanBackward(m: Memtable): string[] {
  const out: string[] = [];
  const it = m.iterator();
  for (it.seekToLast(); it.valid(); it.prev()) out.push(show(it));
  return out;
}

/** Integers in [0, n) from the tests' seeded PRNG: the same seed gives the same sequence. */
function makeRandom(seed: number): (n: number) => number {
  const r = rng(seed);
  return (n: number) => randInt(r, n);
}

test("get returns the newest version at or below the read sequence", () => {
  const m = new Memtable();
  m.add(1, KIND_PUT, b("k"), b("v1"));
  m.add(5, KIND_PUT, b("k"), b("v5"));
  m.add(9, KIND_PUT, b("k"), b("v9"));
  m.add(3, KIND_PUT, b("j"), b("j3"));
  m.add(4, KIND_PUT, b("l"), b("l4"));
  const e = m.get(b("k"), 100);
  assert.ok(e);
  assert.equal(e.seq, 9);
  assert.equal(e.kind, KIND_PUT);
  assert.deepEqual(e.value, b("v9"));
  assert.deepEqual(e.key, b("k"));
  assert.equal(m.get(b("k"), 9)?.seq, 9);
  assert.equal(m.get(b("k"), 8)?.seq, 5);
  assert.equal(m.get(b("k"), 0), undefined);
  assert.equal(m.get(b("kk"), 100), undefined);
  assert.equal(m.get(b(""), 100), undefined);
});

test("get at an older sequence sees the older value", () => {
  const m = new Memtable();
  m.add(10, KIND_PUT, b("apple"), b("red"));
  m.add(20, KIND_PUT, b("apple"), b("green"));
  assert.deepEqual(m.get(b("apple"), 15)?.value, b("red"));
  assert.deepEqual(m.get(b("apple"), 20)?.value, b("green"));
  assert.equal(m.get(b("apple"), 9), undefined);
});

test("sequence numbers across 32-bit boundaries up to MAX_SEQUENCE keep their order and value", () => {
  // Slots store a sequence as two int32 halves: every boundary where a half wraps or turns
  // negative, in an order that makes inserts land before, between and after each other.
  const seqs = [
    2 ** 31 - 1,
    2 ** 32 + 1,
    1,
    MAX_SEQUENCE,
    2 ** 31,
    2 ** 32 - 1,
    2 ** 40 + 2 ** 31,
    2 ** 32,
    MAX_SEQUENCE - 1,
    2 ** 33 - 1,
  ];
  const m = new Memtable();
  for (const seq of seqs) {
    m.add(seq, KIND_PUT, b("k"), b(String(seq)));
    m.add(seq, KIND_PUT, b(`k${seq}`), b("x"));
  }
  const descending = [...seqs].sort((x, y) => y - x);
  const it = m.iterator();
  const got: number[] = [];
  for (it.seek(b("k"), MAX_SEQUENCE); it.valid() && it.key.length === 1; it.next())
    got.push(it.seq);
  assert.deepEqual(got, descending);
  for (const seq of seqs) {
    assert.equal(m.get(b("k"), seq)?.seq, seq);
    assert.deepEqual(m.get(b("k"), seq)?.value, b(String(seq)));
    assert.equal(m.get(b(`k${seq}`), MAX_SEQUENCE)?.seq, seq);
  }
  assert.equal(m.get(b("k"), 2 ** 32 - 2)?.seq, 2 ** 31);
  const image = m.image();
  assert.deepEqual([...image.seqs.subarray(0, seqs.length)], descending);
});

test("a tombstone is returned as a tombstone", () => {
  const m = new Memtable();
  m.add(1, KIND_PUT, b("k"), b("v"));
  m.add(2, KIND_DELETE, b("k"), new Uint8Array(0));
  const e = m.get(b("k"), 2);
  assert.ok(e);
  assert.equal(e.kind, KIND_DELETE);
  assert.equal(e.seq, 2);
  assert.equal(e.value.length, 0);
  assert.equal(m.get(b("k"), 1)?.kind, KIND_PUT);
});

test("add copies the key and value: changing the caller's arrays afterwards changes nothing", () => {
  const m = new Memtable();
  const shared = b("keyvalue");
  const key = shared.subarray(0, 3);
  const value = shared.subarray(3);
  m.add(1, KIND_PUT, key, value);
  shared.fill(0x7a);
  const e = m.get(b("key"), 1);
  assert.ok(e);
  assert.notEqual(e.key, key);
  assert.notEqual(e.value.buffer, shared.buffer);
  assert.deepEqual(e.key, b("key"));
  assert.deepEqual(e.value, b("value"));
  assert.equal(m.get(b("zzz"), 1), undefined);
  const it = m.iterator();
  it.seekToFirst();
  assert.deepEqual(it.key, b("key"));
  assert.deepEqual(it.value, b("value"));
  assert.notEqual(it.key.buffer, shared.buffer);
});

test("keys that are prefixes of each other sort shorter first", () => {
  const m = new Memtable();
  const keys = [
    bytes(0x61, 0x62, 0x00),
    bytes(0x61, 0x62),
    bytes(0x61),
    bytes(),
    bytes(0x61, 0x62, 0x00, 0x00),
    bytes(0x61, 0x62, 0xff),
    bytes(0x61, 0x62, 0x00, 0x01),
  ];
  keys.forEach((k, i) => {
    m.add(i + 1, KIND_PUT, k, bytes(i));
  });
  assert.deepEqual(scanForward(m), [
    "0x#4,PUT",
    "a#3,PUT",
    "ab#2,PUT",
    "0x616200#1,PUT",
    "0x61620000#5,PUT",
    "0x61620001#7,PUT",
    "0x6162ff#6,PUT",
  ]);
  for (const [i, k] of keys.entries()) assert.deepEqual(m.get(k, 100)?.value, bytes(i));
});

test("keys longer than the 16-byte prefix compare on their remaining bytes", () => {
  const m = new Memtable();
  const base = new Uint8Array(16).fill(0xff);
  const k = (...tail: number[]): Uint8Array => Uint8Array.from([...base, ...tail]);
  const keys = [k(0x00), k(), k(0xff, 0x00), k(0x00, 0x00), k(0xff), base.subarray(0, 15)];
  keys.forEach((key, i) => {
    m.add(i + 1, KIND_PUT, key, bytes(i));
  });
  const it = m.iterator();
  const order: number[] = [];
  for (it.seekToFirst(); it.valid(); it.next()) order.push(it.value[0]!);
  // base[0..15) < base < base+00 < base+00 00 < base+ff < base+ff 00
  assert.deepEqual(order, [5, 1, 0, 3, 4, 2]);
  for (const [i, key] of keys.entries()) assert.deepEqual(m.get(key, 100)?.value, bytes(i));
  assert.equal(m.get(k(0x01), 100), undefined);
});

test("forward iteration yields internal-key order, newest version of a key first", () => {
  const m = new Memtable();
  m.add(3, KIND_PUT, b("b"), b("b3"));
  m.add(1, KIND_PUT, b("a"), b("a1"));
  m.add(7, KIND_DELETE, b("b"), b(""));
  m.add(5, KIND_PUT, b("c"), b("c5"));
  m.add(2, KIND_PUT, b("b"), b("b2"));
  m.add(4, KIND_PUT, b("a"), b("a4"));
  assert.deepEqual(scanForward(m), [
    "a#4,PUT",
    "a#1,PUT",
    "b#7,DEL",
    "b#3,PUT",
    "b#2,PUT",
    "c#5,PUT",
  ]);
});

test("reverse iteration yields exactly the reverse of forward iteration", () => {
  const m = new Memtable();
  const rand = makeRandom(7);
  for (let i = 1; i <= 3000; i++) {
    m.add(i, i % 5 === 0 ? KIND_DELETE : KIND_PUT, bytes(rand(40), rand(3), 0x00), bytes(i & 0xff));
  }
  const forward = scanForward(m);
  assert.equal(forward.length, 3000);
  assert.deepEqual(scanBackward(m), forward.reverse());
});

test("an empty memtable has no entries and its iterators are invalid", () => {
  const m = new Memtable();
  assert.equal(m.count, 0);
  assert.equal(m.approximateBytes, 0);
  assert.equal(m.get(b("x"), 10), undefined);
  const it = m.iterator();
  assert.equal(it.valid(), false);
  it.seekToFirst();
  assert.equal(it.valid(), false);
  it.seekToLast();
  assert.equal(it.valid(), false);
  it.seek(b("x"), 10);
  assert.equal(it.valid(), false);
  it.seekForPrev(b("x"), 10);
  assert.equal(it.valid(), false);
});

test("seek lands on the first entry at or after the target internal key", () => {
  const m = new Memtable();
  m.add(5, KIND_PUT, b("b"), b(""));
  m.add(3, KIND_PUT, b("b"), b(""));
  m.add(4, KIND_PUT, b("d"), b(""));
  const it = m.iterator();
  const at = (key: string, seq: number): string => {
    it.seek(b(key), seq);
    return it.valid() ? show(it) : "end";
  };
  assert.equal(at("a", 1), "b#5,PUT");
  assert.equal(at("b", 9), "b#5,PUT");
  assert.equal(at("b", 5), "b#5,PUT");
  assert.equal(at("b", 4), "b#3,PUT");
  assert.equal(at("b", 2), "d#4,PUT");
  assert.equal(at("c", 100), "d#4,PUT");
  assert.equal(at("d", 3), "end");
  assert.equal(at("e", 100), "end");
});

test("seekForPrev lands on the last entry at or before the target internal key", () => {
  const m = new Memtable();
  m.add(5, KIND_PUT, b("b"), b(""));
  m.add(3, KIND_PUT, b("b"), b(""));
  m.add(4, KIND_PUT, b("d"), b(""));
  const it = m.iterator();
  const at = (key: string, seq: number): string => {
    it.seekForPrev(b(key), seq);
    return it.valid() ? show(it) : "start";
  };
  assert.equal(at("a", 1), "start");
  assert.equal(at("b", 9), "start");
  assert.equal(at("b", 5), "b#5,PUT");
  assert.equal(at("b", 4), "b#5,PUT");
  assert.equal(at("b", 3), "b#3,PUT");
  assert.equal(at("b", 0), "b#3,PUT");
  assert.equal(at("c", 100), "b#3,PUT");
  assert.equal(at("d", 5), "b#3,PUT");
  assert.equal(at("d", 4), "d#4,PUT");
  assert.equal(at("z", 0), "d#4,PUT");
});

test("an iterator stays correct while inserts happen between its steps", () => {
  const m = new Memtable();
  // Even keys first; then walk forward, inserting odd keys (enough to split many nodes)
  // on both sides of the iterator's position between steps.
  const key = (i: number): Uint8Array => b(`k${String(i).padStart(6, "0")}`);
  let seq = 0;
  for (let i = 0; i < 2000; i += 2) m.add(++seq, KIND_PUT, key(i), b(""));
  const it = m.iterator();
  it.seekToFirst();
  const seen: number[] = [];
  let odd = 1;
  for (let step = 0; it.valid(); step++) {
    seen.push(Number(text(it.key).slice(1)));
    // Between steps: a key behind the iterator ("a..." sorts before "k...") and three odd
    // keys ahead of it (they advance faster than the iterator, so it meets them all).
    m.add(++seq, KIND_PUT, b(`a${step}`), b(""));
    for (let r = 0; r < 3 && odd < 2000; r++, odd += 2) m.add(++seq, KIND_PUT, key(odd), b(""));
    it.next();
  }
  assert.deepEqual(
    seen,
    Array.from({ length: 2000 }, (_, i) => i),
  );
  assert.equal(m.count, 4000);

  // Backwards too: walk from the end while inserting keys on both sides.
  const m2 = new Memtable();
  for (let i = 0; i < 2000; i += 2) m2.add(i + 1, KIND_PUT, key(i), b(""));
  const it2 = m2.iterator();
  it2.seekToLast();
  const back: number[] = [];
  let s2 = 10_000;
  for (let step = 0; it2.valid(); step++) {
    back.push(Number(text(it2.key).slice(1)));
    m2.add(++s2, KIND_PUT, b(`z${step}`), b("")); // behind the iterator
    if (step < 900) m2.add(++s2, KIND_PUT, key(step * 2 + 1), b("")); // ahead of it
    it2.prev();
  }
  for (let i = 1; i < back.length; i++) assert.ok(back[i - 1]! > back[i]!, `reverse order at ${i}`);
  for (let i = 0; i < 2000; i += 2) assert.ok(back.includes(i), `missed k${i} backwards`);
});

test("an entry returned by get or an iterator stays valid after further inserts", () => {
  const m = new Memtable();
  m.add(1, KIND_PUT, b("m"), b("v"));
  const e = m.get(b("m"), 1);
  const it = m.iterator();
  it.seek(b("m"), 1);
  const held = it.entry;
  for (let i = 0; i < 500; i++) m.add(i + 2, KIND_PUT, b(`a${i}`), b(""));
  assert.equal(show(e!), "m#1,PUT");
  assert.equal(show(held), "m#1,PUT");
  assert.equal(show(it), "m#1,PUT");
  it.prev();
  assert.equal(text(it.key), "a99");
});

test("count and approximateBytes grow with each insert", () => {
  const m = new Memtable();
  m.add(1, KIND_PUT, b("abc"), new Uint8Array(100));
  assert.equal(m.count, 1);
  assert.equal(m.approximateBytes, 103 + ENTRY_OVERHEAD_BYTES);
  m.add(2, KIND_DELETE, b("abc"), new Uint8Array(0));
  assert.equal(m.count, 2);
  assert.equal(m.approximateBytes, 106 + 2 * ENTRY_OVERHEAD_BYTES);
  let last = m.approximateBytes;
  for (let i = 0; i < 1000; i++) {
    m.add(i + 3, KIND_PUT, b(`key${i}`), new Uint8Array(i % 50));
    assert.ok(m.approximateBytes > last);
    last = m.approximateBytes;
  }
  assert.equal(m.count, 1002);
});

test("empty values and empty keys are stored and returned as empty views", () => {
  const m = new Memtable();
  m.add(1, KIND_PUT, b("a"), new Uint8Array(0));
  m.add(2, KIND_DELETE, b("b"), new Uint8Array(0));
  m.add(3, KIND_PUT, new Uint8Array(0), new Uint8Array(0));
  m.add(4, KIND_PUT, b("c"), b("x"));
  for (const [k, kind] of [
    ["a", KIND_PUT],
    ["b", KIND_DELETE],
    ["", KIND_PUT],
  ] as const) {
    const e = m.get(b(k), 10);
    assert.ok(e, k);
    assert.equal(e.kind, kind);
    assert.equal(e.value.length, 0);
    assert.deepEqual(e.key, b(k));
  }
  assert.deepEqual(m.get(b("c"), 10)?.value, b("x"));
  const it = m.iterator();
  const seen: string[] = [];
  for (it.seekToFirst(); it.valid(); it.next()) seen.push(`${show(it)}=${it.value.length}`);
  assert.deepEqual(seen, ["0x#3,PUT=0", "a#1,PUT=0", "b#2,DEL=0", "c#4,PUT=1"]);
});

test("values larger than an arena chunk round-trip, between small entries", () => {
  const m = new Memtable();
  // 256 KiB is the arena's largest chunk; 32 KiB the size above which an entry gets its own.
  const sizes = [300_000, 1 << 20, 40_000, 32 * 1024, 256 * 1024 - 5, 3 << 20];
  const pattern = (n: number, seed: number): Uint8Array => {
    const v = new Uint8Array(n);
    for (let i = 0; i < n; i++) v[i] = (i * 31 + seed) & 0xff;
    return v;
  };
  let seq = 0;
  for (const [i, n] of sizes.entries()) {
    m.add(++seq, KIND_PUT, b(`big${i}`), pattern(n, i));
    m.add(++seq, KIND_PUT, b(`small${i}`), b(`v${i}`));
  }
  // A key larger than a chunk, too.
  const bigKey = pattern(70_000, 99);
  m.add(++seq, KIND_PUT, bigKey, b("bigkey"));
  for (const [i, n] of sizes.entries()) {
    const e = m.get(b(`big${i}`), seq);
    assert.ok(e);
    assert.equal(e.value.length, n);
    assert.ok(sameBytes(e.value, pattern(n, i)), `big${i}`);
    assert.deepEqual(m.get(b(`small${i}`), seq)?.value, b(`v${i}`));
  }
  assert.deepEqual(m.get(bigKey, seq)?.value, b("bigkey"));
  assert.ok(sameBytes(m.get(bigKey, seq)!.key, bigKey));
  const it = m.iterator();
  it.seek(b("big1"), seq);
  assert.equal(it.value.length, 1 << 20);
  it.next();
  assert.equal(text(it.key), "big2");
  assert.equal(it.value.length, 40_000);
});

test("many entries across arena chunk boundaries keep their bytes", () => {
  const m = new Memtable();
  const rand = makeRandom(11);
  const n = 30_000;
  // Entries of 6..~1.5k bytes (plus one of 20 KiB every 1000) fill many chunks, with
  // chunk ends falling at all kinds of offsets.
  const valueFor = (i: number): Uint8Array => {
    const len = i % 1000 === 999 ? 20_000 : i % 7 === 0 ? 1500 + (i % 13) : i % 50;
    const v = new Uint8Array(len);
    for (let j = 0; j < len; j++) v[j] = (i + j * 7) & 0xff;
    return v;
  };
  const keyFor = (i: number): Uint8Array =>
    b(`key${String(i).padStart(6, "0")}${"x".repeat(i % 23)}`);
  // One buffer reused for every add, as a caller decoding batches into a scratch buffer.
  const scratch = new Uint8Array(64 * 1024);
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rand(i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  for (const [s, i] of order.entries()) {
    const k = keyFor(i);
    const v = valueFor(i);
    scratch.set(k, 0);
    scratch.set(v, k.length);
    m.add(
      s + 1,
      KIND_PUT,
      scratch.subarray(0, k.length),
      scratch.subarray(k.length, k.length + v.length),
    );
    scratch.fill(0xee, 0, k.length + v.length);
  }
  assert.equal(m.count, n);
  for (let i = 0; i < n; i++) {
    const e = m.get(keyFor(i), n);
    assert.ok(e, `key ${i}`);
    assert.ok(sameBytes(e.value, valueFor(i)), `value ${i}`);
  }
  const it = m.iterator();
  let i = 0;
  for (it.seekToFirst(); it.valid(); it.next(), i++) {
    assert.ok(sameBytes(it.key, keyFor(i)), `scan key ${i}`);
    assert.ok(sameBytes(it.value, valueFor(i)), `scan value ${i}`);
  }
  assert.equal(i, n);
});

test("entries and views handed out stay unchanged while the table grows", () => {
  const m = new Memtable();
  m.add(1, KIND_PUT, b("first"), b("value-1"));
  const e = m.get(b("first"), 1)!;
  const it = m.iterator();
  it.seekToFirst();
  const key = it.key;
  const value = it.value;
  for (let i = 0; i < 20_000; i++) m.add(i + 2, KIND_PUT, b(`k${i}`), new Uint8Array(100).fill(i));
  assert.deepEqual(e.key, b("first"));
  assert.deepEqual(e.value, b("value-1"));
  assert.deepEqual(key, b("first"));
  assert.deepEqual(value, b("value-1"));
  it.next();
  assert.deepEqual(key, b("first"));
});

test("ascending, descending and interleaved insert orders all iterate sorted", () => {
  for (const order of ["ascending", "descending", "zigzag"] as const) {
    const m = new Memtable();
    const n = 5000;
    for (let i = 0; i < n; i++) {
      const k = order === "ascending" ? i : order === "descending" ? n - 1 - i : i % 2 ? n - i : i;
      m.add(i + 1, KIND_PUT, b(`k${String(k).padStart(5, "0")}`), bytes(k & 0xff));
    }
    const keys = scanForward(m).map((s) => s.split("#")[0]!);
    assert.equal(keys.length, n, order);
    assert.deepEqual(keys, [...keys].sort(), order);
    assert.equal(new Set(keys).size, n, order);
    for (let k = 0; k < n; k += 97) {
      assert.deepEqual(m.get(b(`k${String(k).padStart(5, "0")}`), n)?.value, bytes(k & 0xff));
    }
  }
});

// ---- approximateBytes against measured memory ------------------------------------------

/** `gc` without --expose-gc: the flag may be set at run time, then read from a new context. */
function getGc(): () => void {
  v8.setFlagsFromString("--expose-gc");
  return vm.runInNewContext("gc") as () => void;
}

/**
 * Fills a memtable as the write path does (views into per-batch buffers, random key order)
 * until approximateBytes reaches `target`; returns approximateBytes / measured growth of
 * heap + ArrayBuffer memory (everything the table keeps alive, key and value bytes too).
 */
function approximateOverReal(keyLen: number, valueLen: number, target: number): number {
  const gc = getGc();
  const rand = makeRandom(5);
  const used = (): number => {
    gc();
    gc();
    const u = process.memoryUsage();
    return u.heapUsed + u.arrayBuffers;
  };
  const before = used();
  const m = new Memtable();
  const entryBytes = keyLen + valueLen;
  let batch = new Uint8Array(0);
  for (let i = 0; m.approximateBytes < target; i++) {
    const at = (i % 16) * entryBytes;
    if (at === 0) batch = new Uint8Array(16 * entryBytes);
    const digits = String(rand(1_000_000_000)).padStart(keyLen, "0");
    for (let j = 0; j < keyLen; j++) batch[at + j] = digits.charCodeAt(j % digits.length);
    const key = batch.subarray(at, at + keyLen);
    m.add(i + 1, KIND_PUT, key, batch.subarray(at + keyLen, at + entryBytes));
  }
  batch = new Uint8Array(0);
  const real = used() - before;
  assert.ok(m.count > 0);
  return m.approximateBytes / real;
}

test("approximateBytes stays within 20% of the memory a table really holds", () => {
  for (const [keyLen, valueLen] of [
    [16, 100],
    [24, 2000],
  ] as const) {
    const ratio = approximateOverReal(keyLen, valueLen, 4 << 20);
    assert.ok(
      ratio > 0.8 && ratio < 1.2,
      `keys ${keyLen} B, values ${valueLen} B: approximateBytes / real = ${ratio.toFixed(2)}`,
    );
  }
});

// ---- Randomized comparison with a sorted-array model ---------------------------------

interface ModelEntry {
  key: Uint8Array;
  seq: number;
  kind: ValueKind;
  value: Uint8Array;
}

function cmpEntry(a: ModelEntry, key: Uint8Array, seq: number, kind: number): number {
  return compareInternal(a.key, a.seq, a.kind, key, seq, kind);
}

/** Index of the first model entry >= (key, seq, kind). */
function lowerBound(model: ModelEntry[], key: Uint8Array, seq: number, kind: number): number {
  let lo = 0;
  let hi = model.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmpEntry(model[mid]!, key, seq, kind) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first model entry > (key, seq, kind). */
function upperBound(model: ModelEntry[], key: Uint8Array, seq: number, kind: number): number {
  let lo = 0;
  let hi = model.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cmpEntry(model[mid]!, key, seq, kind) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function runRandomized(seed: number, ops: number): void {
  const rand = makeRandom(seed);
  const m = new Memtable();
  const model: ModelEntry[] = [];
  const usedSeqs = new Set<number>();
  // Keys: random lengths 0..24 over a small alphabet rich in 0x00 and 0xff, some sharing a
  // 16-byte prefix, so that equal prefixes, prefix keys and long keys all occur.
  const alphabet = [0x00, 0x00, 0x01, 0x61, 0x62, 0x7f, 0x80, 0xfe, 0xff, 0xff];
  const longPrefix = Uint8Array.from({ length: 16 }, (_, i) => alphabet[i % alphabet.length]!);
  const pool: Uint8Array[] = [];
  const randomKey = (): Uint8Array => {
    if (pool.length > 0 && rand(3) === 0) return pool[rand(pool.length)]!;
    const longOne = rand(4) === 0;
    const len = longOne ? 16 + rand(6) : rand(8);
    const k = new Uint8Array(len);
    for (let i = 0; i < len; i++) {
      k[i] = longOne && i < 16 ? longPrefix[i]! : rand(5) === 0 ? rand(256) : alphabet[rand(10)]!;
    }
    if (longOne && rand(4) === 0) k[rand(16)] = rand(256);
    pool.push(k);
    return k;
  };
  const check = (cond: boolean, what: () => string): void => {
    if (!cond) assert.fail(what());
  };
  const same = (it: MemtableIterator, idx: number, what: string): void => {
    const want = model[idx];
    const got = it.valid() ? show(it) : "none";
    check(want === undefined ? !it.valid() : got === show(want), () => {
      return `${what}: got ${got}, want ${want === undefined ? "none" : show(want)}`;
    });
    if (want !== undefined && it.valid())
      check(sameBytes(it.value, want.value), () => `${what}: value`);
  };

  // A long-lived iterator, moved now and then while inserts go on around it.
  const live = m.iterator();
  let liveEntry: MemtableEntry | null = null;
  let maxSeq = 0;

  for (let op = 0; op < ops; op++) {
    const r = rand(100);
    if (r < 55 || model.length === 0) {
      const key = randomKey();
      let seq = rand(4) === 0 ? rand(2 * ops + 10) : maxSeq + 1 + rand(3);
      while (usedSeqs.has(seq)) seq++;
      usedSeqs.add(seq);
      maxSeq = Math.max(maxSeq, seq);
      const kind: ValueKind = rand(5) === 0 ? KIND_DELETE : KIND_PUT;
      const value = Uint8Array.of(op & 0xff, op >>> 8);
      m.add(seq, kind, key, value);
      const e = { key, seq, kind, value };
      model.splice(lowerBound(model, key, seq, kind), 0, e);
    } else if (r < 80) {
      const key = rand(4) === 0 ? randomKey() : model[rand(model.length)]!.key;
      const seq = rand(maxSeq + 2);
      const got = m.get(key, seq);
      const i = lowerBound(model, key, seq, KIND_PUT);
      const c = model[i];
      const want = c !== undefined && Buffer.compare(c.key, key) === 0 ? c : undefined;
      check(
        got === undefined
          ? want === undefined
          : want !== undefined && sameBytes(got.value, want.value),
        () => {
          const g = got ? show(got) : "none";
          return `get(${formatInternalKey(key, seq, KIND_PUT)}): got ${g}, want ${want ? show(want) : "none"}`;
        },
      );
    } else if (r < 90) {
      const it = m.iterator();
      const key = rand(3) === 0 ? randomKey() : model[rand(model.length)]!.key;
      const seq = rand(maxSeq + 2);
      const forPrev = rand(2) === 0;
      let idx: number;
      if (forPrev) {
        it.seekForPrev(key, seq);
        idx = upperBound(model, key, seq, KIND_DELETE) - 1; // the last entry <= (key, seq, 0)
        if (idx < 0) idx = model.length; // none
      } else {
        it.seek(key, seq);
        idx = lowerBound(model, key, seq, KIND_PUT);
      }
      const what = `${forPrev ? "seekForPrev" : "seek"}(${formatInternalKey(key, seq, 0)})`;
      same(it, idx, what);
      for (let step = 0; step < 5 && it.valid(); step++) {
        if (rand(2) === 0) {
          it.next();
          idx++;
          same(it, idx, `${what} then next`);
        } else {
          it.prev();
          idx = idx === 0 ? model.length : idx - 1;
          same(it, idx, `${what} then prev`);
        }
      }
    } else if (r < 98) {
      // Move the long-lived iterator one step; it must land next to where it was.
      if (liveEntry === null || !live.valid()) {
        if (rand(2) === 0) {
          live.seekToFirst();
          same(live, 0, "seekToFirst");
        } else {
          live.seekToLast();
          same(live, model.length - 1, "seekToLast");
        }
      } else {
        const at = lowerBound(model, liveEntry.key, liveEntry.seq, liveEntry.kind);
        check(
          model[at] !== undefined && show(model[at]!) === show(liveEntry),
          () => "live entry lost",
        );
        if (rand(2) === 0) {
          live.next();
          same(live, at + 1, `live next from ${show(liveEntry)}`);
        } else {
          live.prev();
          same(live, at === 0 ? model.length : at - 1, `live prev from ${show(liveEntry)}`);
        }
      }
      liveEntry = live.valid() ? live.entry : null;
    } else {
      const forward = scanForward(m);
      check(
        forward.length === model.length,
        () => `scan length ${forward.length}, want ${model.length}`,
      );
      assert.deepEqual(forward, model.map(show));
      assert.deepEqual(scanBackward(m), model.map(show).reverse());
      assert.equal(m.count, model.length);
    }
  }
  assert.deepEqual(scanForward(m), model.map(show));
}

test("random operations match a sorted-array model", () => {
  const seed = Number(process.env["MEMTABLE_SEED"] ?? Date.now() % 1_000_000_007);
  try {
    runRandomized(seed, 10_000);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`seed ${seed} (rerun with MEMTABLE_SEED=${seed}): ${message}`, {
      cause: err,
    });
  }
});

test("random operations match the model for several fixed seeds", () => {
  for (const seed of [1, 2, 3, 42, 1234567]) {
    try {
      runRandomized(seed, 4000);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(`seed ${seed}: ${message}`, { cause: err });
    }
  }
});
