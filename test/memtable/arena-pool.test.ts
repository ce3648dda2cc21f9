/**
 * Memtable references and arena reuse: a memtable's arena and tree nodes go back to its
 * ArenaPool only when the last reference is dropped; until then its entries read as
 * written, after that every use throws; a later memtable reuses the chunks and nodes and
 * reads its own entries back.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { ArenaPool } from "../../src/memtable/arena-pool.js";
import { Memtable } from "../../src/memtable/memtable.js";
import { randInt, rng } from "../support/random.js";

const key = (i: number) => Buffer.from(`key-${String(i).padStart(6, "0")}`);
const value = (tag: string, i: number) => Buffer.from(`${tag}-${i}-`.padEnd(100, tag));

/** Adds entry i tagged `tag` as `filled` makes it (every 7th a delete), for `check`. */
function addEntry(m: Memtable, tag: string, i: number, seq0 = 1): void {
  const del = i % 7 === 3;
  m.add(seq0 + i, del ? KIND_DELETE : KIND_PUT, key(i), del ? Buffer.alloc(0) : value(tag, i));
}

/** A memtable of n entries tagged `tag` (about 130 bytes of arena each). */
function filled(pool: ArenaPool | undefined, tag: string, n: number, seq0 = 1): Memtable {
  const m = new Memtable(pool);
  for (let i = 0; i < n; i++) addEntry(m, tag, i, seq0);
  return m;
}

/** Fills a memtable with n entries and releases it; returns the nodes then pooled. */
function poolNodesOf(pool: ArenaPool, n: number): number {
  filled(pool, "a", n).unref();
  return pool.pooledNodes;
}

function check(m: Memtable, tag: string, n: number, seq0 = 1): void {
  for (let i = 0; i < n; i++) {
    const e = m.get(key(i), Number.MAX_SAFE_INTEGER);
    assert.ok(e !== undefined, `key ${i}`);
    assert.equal(e.seq, seq0 + i);
    if (i % 7 === 3) assert.equal(e.kind, KIND_DELETE);
    else assert.deepEqual(Buffer.from(e.value), value(tag, i));
  }
  let count = 0;
  const it = m.iterator();
  for (it.seekToFirst(); it.valid(); it.next()) {
    assert.deepEqual(Buffer.from(it.key), key(count));
    count++;
  }
  assert.equal(count, n);
}

test("the arena is kept while any reference is held, and pooled at the last unref", () => {
  const pool = new ArenaPool(8 << 20);
  const m = filled(pool, "a", 5000);
  const view = m.ref(); // a read view's reference
  const held = m.get(key(11), Number.MAX_SAFE_INTEGER)!.value;
  m.unref(); // the store lets go after the flush
  assert.equal(m.live, true);
  assert.equal(pool.pooledBytes, 0, "nothing pooled while a view holds the memtable");
  check(m, "a", 5000);
  // Another memtable allocating meanwhile cannot get those chunks.
  const other = filled(pool, "b", 5000, 10_000);
  assert.equal(pool.reused, 0);
  assert.deepEqual(Buffer.from(held), value("a", 11));
  view.unref();
  assert.equal(m.live, false);
  assert.ok(pool.pooledBytes > 5000 * 100, `${pool.pooledBytes} bytes pooled`);
  check(other, "b", 5000, 10_000);
});

test("a released memtable refuses every use", () => {
  const m = filled(new ArenaPool(1 << 20), "a", 10);
  m.unref();
  assert.throws(() => m.get(key(1), 100), /after its release/);
  assert.throws(() => m.iterator(), /after its release/);
  assert.throws(() => m.add(100, KIND_PUT, key(1), value("x", 1)), /after its release/);
  assert.throws(() => m.image(), /after its release/);
  assert.throws(() => m.ref(), /after its release/);
  assert.throws(() => m.unref(), /after its release/);
});

test("a later memtable reuses the chunks, overwrites them, and reads its own entries", () => {
  const pool = new ArenaPool(8 << 20);
  const first = filled(pool, "a", 20_000);
  const chunks = new Set(first.image().buffers);
  first.unref();
  const pooled = pool.pooledBytes;
  assert.ok(pooled > 0);
  // Different key and value sizes, so entries do not line up with the old ones.
  const second = new Memtable(pool);
  for (let i = 0; i < 20_000; i++)
    second.add(i + 1, KIND_PUT, Buffer.from(`k${i}`), value("z", i).subarray(0, 37 + (i % 50)));
  assert.ok(pool.reused > 0, "chunks were reused");
  const reused = pool.reused;
  const reusedChunks = second.image().buffers.filter((b) => chunks.has(b));
  assert.equal(reusedChunks.length, reused);
  // The image took the first image's index buffer (same size: same entry count).
  assert.equal(pool.reused, reused + 1);
  for (let i = 0; i < 20_000; i++) {
    const e = second.get(Buffer.from(`k${i}`), Number.MAX_SAFE_INTEGER);
    assert.deepEqual(Buffer.from(e!.value), value("z", i).subarray(0, 37 + (i % 50)), `k${i}`);
  }
  const imageBytes = second.image().seqs.buffer.byteLength;
  assert.equal(
    pool.pooledBytes,
    pooled - reusedChunks.reduce((n, b) => n + b.byteLength, 0) - imageBytes,
  );
});

test("a later memtable reuses the tree nodes: random inserts, gets and iterators stay exact", () => {
  const pool = new ArenaPool(8 << 20);
  const pooledNodes = poolNodesOf(pool, 20_000);
  // 20k entries in nodes of 64: hundreds of leaves and several inner nodes.
  assert.ok(pooledNodes > 300, `${pooledNodes} nodes pooled`);
  // Random order, so that reused leaves and inner nodes split everywhere, and fewer
  // entries than before, so that some pooled nodes (leaves and inner) stay unused.
  const n = 15_000;
  const order = Array.from({ length: n }, (_, i) => i);
  const r = rng(7);
  for (let i = n - 1; i > 0; i--) {
    const j = randInt(r, i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const second = new Memtable(pool);
  const it = second.iterator(); // opened before the inserts: it re-finds its place
  for (const i of order) addEntry(second, "b", i);
  assert.ok(pool.pooledNodes < pooledNodes - 100, "nodes were taken from the pool");
  check(second, "b", n);
  let count = 0;
  for (it.seekToLast(); it.valid(); it.prev()) {
    assert.deepEqual(Buffer.from(it.key), key(n - 1 - count));
    count++;
  }
  assert.equal(count, n);
  for (let i = 1; i < n; i += 98) {
    it.seek(key(i), Number.MAX_SAFE_INTEGER);
    assert.equal(it.seq, i + 1);
    if (i % 7 !== 3) assert.deepEqual(Buffer.from(it.value), value("b", i));
  }
});

test("an iterator of a released memtable throws instead of reading reused nodes", () => {
  const pool = new ArenaPool(8 << 20);
  const m = filled(pool, "a", 2000);
  const it = m.iterator();
  it.seekToFirst();
  m.unref();
  filled(pool, "b", 2000); // takes the nodes and chunks
  assert.throws(() => it.next(), /after the memtable's release/);
  assert.throws(() => it.seekToFirst(), /after the memtable's release/);
  assert.throws(() => it.seek(key(5), 10), /after the memtable's release/);
  assert.throws(() => it.seekForPrev(key(5), 10), /after the memtable's release/);
});

test("the pool keeps at most maxNodes nodes", () => {
  const pool = new ArenaPool(64 << 10);
  assert.equal(pool.maxNodes, 64);
  filled(pool, "a", 20_000).unref();
  assert.equal(pool.pooledNodes, 64);
});

test("the pool keeps at most maxBytes; big entries' chunks are not pooled", () => {
  const small = new ArenaPool(64 << 10);
  const m = filled(small, "a", 10_000);
  m.unref();
  assert.ok(small.pooledBytes <= 64 << 10 && small.pooledBytes > 0, `${small.pooledBytes}`);

  const pool = new ArenaPool(64 << 20);
  const big = new Memtable(pool);
  big.add(1, KIND_PUT, key(1), Buffer.alloc(600 << 10, 1));
  big.unref();
  assert.equal(pool.pooledBytes, 0, "a 600 KiB entry's own chunk is left to the collector");
});

test("without a pool, release just drops the arena", () => {
  const m = filled(undefined, "a", 100);
  m.unref();
  assert.equal(m.live, false);
});

test("an image's index lives in pooled shared memory, reused by later images", () => {
  const pool = new ArenaPool(8 << 20);
  const first = filled(pool, "a", 20_000);
  const image = first.image();
  const buffer = image.seqs.buffer;
  assert.ok(buffer instanceof SharedArrayBuffer);
  assert.equal(image.positions.buffer, buffer);
  assert.equal(image.keyLengths.buffer, buffer);
  assert.equal(buffer.byteLength % (64 << 10), 0);
  assert.ok(buffer.byteLength >= 20_000 * 16);
  first.unref();
  // A memtable of a few entries more or less takes the same buffer, and its image reads
  // its own entries (the buffer held the first image's).
  const second = filled(pool, "b", 19_900, 50_000);
  const again = second.image();
  assert.equal(again.seqs.buffer, buffer);
  assert.equal(again.seqs.length, 19_900);
  const it = second.iterator();
  let i = 0;
  for (it.seekToFirst(); it.valid(); it.next(), i++) {
    assert.equal(again.seqs[i], it.seq);
    assert.equal(again.keyLengths[i], it.key.length);
  }
  assert.equal(i, 19_900);
});

test("pooled nodes change roles (inner to leaf, leaf to inner) in three-level trees", () => {
  // 200k entries: more than 64 inner nodes, so the root's children are inner nodes too.
  const pool = new ArenaPool(64 << 20);
  const pooled = poolNodesOf(pool, 200_000);
  assert.ok(pooled > 3000, `${pooled} nodes pooled`);
  // Descending inserts split differently: leaves become inner nodes and the other way.
  const second = new Memtable(pool);
  for (let i = 150_000 - 1; i >= 0; i--) addEntry(second, "c", i);
  check(second, "c", 150_000);
  second.unref();
  // And once more, in the filled() order, from the nodes the descending tree left.
  const third = filled(pool, "d", 180_000);
  check(third, "d", 180_000);
  third.unref();
  assert.ok(pool.pooledNodes <= pool.maxNodes);
});
