/**
 * Memtable arena reuse in the store: flushed memtables give their arena chunks to the
 * next memtables, but only once no read view lists them. An iterator, a snapshot and
 * values read before many flushes (whose memtables' chunks are reused meanwhile) still
 * read exactly what they read before; current reads see the newest values. Both with the
 * flush on the worker thread (real files) and inline (in-memory file system).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type KvStore, MemoryFileSystem, type OpenOptions, open } from "../../src/index.js";
import type { ArenaPool } from "../../src/memtable/arena-pool.js";
import { tempDir } from "../support/temp-dir.js";

const KEYS = 1500;
const ROUNDS = 12;
const key = (i: number) => Buffer.from(`key-${String(i).padStart(6, "0")}`);
const value = (round: number, i: number) => Buffer.from(`r${round}-k${i}-`.padEnd(90, "v"));

function poolOf(db: KvStore): ArenaPool {
  return (db as unknown as { memtables: { arenaPool: ArenaPool } }).memtables.arenaPool;
}

async function writeRound(db: KvStore, round: number): Promise<void> {
  for (let i = 0; i < KEYS; i += 100) {
    const batch = db.batch();
    for (let j = i; j < i + 100; j++) batch.put(key(j), value(round, j));
    await db.write(batch, { sync: false });
  }
}

async function run(dir: string, options: OpenOptions): Promise<void> {
  const db = await open(dir, { ...options, writeBufferSize: 64 << 10, sync: false });
  try {
    await writeRound(db, 0);
    const snapshot = db.snapshot();
    const it = db.iterator();
    const early = await db.get(key(7));
    // Read a little, so the iterator holds positions in the memtables it started with.
    const first = await it.next();
    assert.deepEqual(first.value, [key(0), value(0, 0)]);

    for (let round = 1; round <= ROUNDS; round++) await writeRound(db, round);
    await db.flush();
    assert.ok(db.stats().flushes >= ROUNDS, `${db.stats().flushes} flushes`);
    assert.ok(poolOf(db).reused > 0, "later memtables reused flushed memtables' chunks");

    assert.deepEqual(early, value(0, 7));
    let i = 1;
    for await (const [k, v] of it) {
      assert.deepEqual([k, v], [key(i), value(0, i)], `iterator at ${i}`);
      i++;
    }
    assert.equal(i, KEYS);
    for (let j = 0; j < KEYS; j += 37) {
      assert.deepEqual(await db.get(key(j), { snapshot }), value(0, j), `snapshot get ${j}`);
      assert.deepEqual(await db.get(key(j)), value(ROUNDS, j), `get ${j}`);
      assert.deepEqual(db.getSync(key(j)), value(ROUNDS, j), `getSync ${j}`);
    }
    snapshot.release();
  } finally {
    await db.close();
  }
}

describe("memtable arena reuse", () => {
  test("flushes on the worker thread", async () => {
    const d = tempDir("kv-arena-");
    try {
      await run(d.path, {});
    } finally {
      d.remove();
    }
  });

  test("inline flushes", async () => {
    await run("/db", { fs: new MemoryFileSystem(), compactionMode: "inline" });
  });
});
