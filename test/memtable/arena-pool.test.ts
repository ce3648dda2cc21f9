/**
 * Memtable references and arena reuse: a memtable's arena goes back to its ArenaPool only
 * when the last reference is dropped; until then its entries read as written, after that
 * every use throws; a later memtable reuses the chunks and reads its own entries back.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { ArenaPool } from "../../src/memtable/arena-pool.js";
import { Memtable } from "../../src/memtable/memtable.js";

const key = (i: number) => Buffer.from(`key-${String(i).padStart(6, "0")}`);
const value = (tag: string, i: number) => Buffer.from(`${tag}-${i}-`.padEnd(100, tag));

/** A memtable of n entries tagged `tag` (about 130 bytes of arena each). */
function filled(pool: ArenaPool | undefined, tag: string, n: number, seq0 = 1): Memtable {
  const m = new Memtable(pool);
  for (let i = 0; i < n; i++)
    m.add(
      seq0 + i,
      i % 7 === 3 ? KIND_DELETE : KIND_PUT,
      key(i),
      i % 7 === 3 ? Buffer.alloc(0) : value(tag, i),
    );
  return m;
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
  const reusedChunks = second.image().buffers.filter((b) => chunks.has(b));
  assert.equal(reusedChunks.length, pool.reused);
  for (let i = 0; i < 20_000; i++) {
    const e = second.get(Buffer.from(`k${i}`), Number.MAX_SAFE_INTEGER);
    assert.deepEqual(Buffer.from(e!.value), value("z", i).subarray(0, 37 + (i % 50)), `k${i}`);
  }
  assert.equal(pool.pooledBytes, pooled - reusedChunks.reduce((n, b) => n + b.byteLength, 0));
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
