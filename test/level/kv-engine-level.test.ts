/**
 * KvEngineLevel beyond what the abstract-level suite checks: the stored key layout and
 * keyPrefix, durability across reopen with default options, clear() over many batches,
 * seek on a pinned snapshot, data that went through flushes and compactions, the lock,
 * and the sync write option.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { open } from "../../src/index.js";
import {
  CLEAR_BATCH_KEYS,
  KvEngineLevel,
  type KvEngineLevelOptions,
} from "../../src/level/index.js";
import { tempDir } from "../support/temp-dir.js";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = tempDir("kv-level-");
  try {
    await fn(dir.path);
  } finally {
    dir.remove();
  }
}

async function level<K = string, V = string>(
  dir: string,
  options?: KvEngineLevelOptions<K, V>,
): Promise<KvEngineLevel<K, V>> {
  const db = new KvEngineLevel<K, V>(dir, options);
  await db.open();
  return db;
}

const key = (i: number) => `k${String(i).padStart(5, "0")}`;

describe("KvEngineLevel", () => {
  test("keys are stored behind a 0x00 byte; engine keys without it are invisible", async () => {
    await withDir(async (dir) => {
      const store = await open(dir);
      await store.put("outside", "x");
      await store.close();

      const db = await level(dir);
      await db.put("", "empty key");
      await db.put("a", "1");
      assert.deepEqual(await db.iterator().all(), [
        ["", "empty key"],
        ["a", "1"],
      ]);
      await db.clear();
      await db.put("b", "2");
      await db.close();

      const again = await open(dir);
      const rows = (await again.scan()).map(([k, v]) => [k.toString("latin1"), v.toString()]);
      assert.deepEqual(rows, [
        ["\u0000b", "2"],
        ["outside", "x"],
      ]);
      await again.close();
    });
  });

  test('keyPrefix "" shares the engine keyspace and rejects the empty key', async () => {
    await withDir(async (dir) => {
      const store = await open(dir);
      await store.put("engine", "e");
      await store.close();

      const db = await level(dir, { keyPrefix: "" });
      assert.equal(await db.get("engine"), "e");
      await db.put("level", "l");
      await assert.rejects(db.put("", "x"), { code: "LEVEL_INVALID_KEY" });
      await assert.rejects(db.batch([{ type: "put", key: "", value: "x" }]), {
        code: "LEVEL_INVALID_KEY",
      });
      assert.deepEqual(await db.keys().all(), ["engine", "level"]);
      await db.close();
    });
  });

  test("a custom keyPrefix with 0xff bytes bounds ranges correctly", async () => {
    await withDir(async (dir) => {
      const store = await open(dir);
      await store.put(Buffer.from([0xfe]), "below");
      await store.put(Buffer.from([0xff, 0xff, 0x00]), "above");
      await store.close();
      const db = await level<Uint8Array, string>(dir, {
        keyPrefix: Uint8Array.of(0xfe, 0xff),
        keyEncoding: "view",
      });
      await db.put(Uint8Array.of(0xff), "top");
      await db.put(Uint8Array.of(), "empty");
      assert.deepEqual(await db.values().all(), ["empty", "top"]);
      assert.deepEqual(await db.values({ reverse: true }).all(), ["top", "empty"]);
      await db.close();
    });
  });

  test("writes made with default options survive close and reopen", async () => {
    await withDir(async (dir) => {
      const db = await level<string, unknown>(dir, { valueEncoding: "json" });
      await db.put("a", { n: 1 });
      await db.batch([
        { type: "put", key: "b", value: [2] },
        { type: "del", key: "a" },
      ]);
      await db.batch().put("c", "three").write();
      await db.close();
      await db.open();
      assert.deepEqual(await db.iterator().all(), [
        ["b", [2]],
        ["c", "three"],
      ]);
      await db.close();
    });
  });

  test("the sync write option is accepted by put, del, batch and chained batch", async () => {
    await withDir(async (dir) => {
      const db = await level(dir);
      await db.put("a", "1", { sync: false });
      await db.del("a", { sync: false });
      await db.batch([{ type: "put", key: "b", value: "2" }], { sync: true });
      await db
        .batch()
        .put("c", "3")
        .write({ sync: false } as object);
      assert.deepEqual(await db.keys().all(), ["b", "c"]);
      await db.close();
    });
  });

  test("clear() of a range spanning several delete batches, forward and reverse with limit", async () => {
    await withDir(async (dir) => {
      const db = await level(dir);
      const n = CLEAR_BATCH_KEYS * 2 + 500;
      const chained = db.batch();
      for (let i = 0; i < n; i++) chained.put(key(i), String(i));
      await chained.write();

      await db.clear({ gte: key(100), lt: key(n - 100) });
      const left = await db.keys().all();
      assert.equal(left.length, 200);
      assert.equal(left[99], key(99));
      assert.equal(left[100], key(n - 100));

      await db.clear({ reverse: true, limit: 150 });
      assert.deepEqual(await db.keys().all(), [...Array(50).keys()].map(key));

      await db.clear();
      assert.deepEqual(await db.keys().all(), []);
      await db.close();
    });
  });

  test("clear() on a sublevel leaves the rest", async () => {
    await withDir(async (dir) => {
      const db = await level(dir);
      const sub = db.sublevel("s");
      await sub.batch(
        [...Array(CLEAR_BATCH_KEYS + 10).keys()].map((i) => ({
          type: "put" as const,
          key: key(i),
          value: "v",
        })),
      );
      await db.put("root", "r");
      await sub.clear();
      assert.deepEqual(await db.keys().all(), ["root"]);
      await db.close();
    });
  });

  test("seek moves both ways, stays in the range, and reads the iterator's snapshot", async () => {
    await withDir(async (dir) => {
      const db = await level(dir);
      await db.batch([..."abcdefg"].map((k) => ({ type: "put" as const, key: k, value: k })));
      const it = db.keys({ gt: "b", lte: "f" });
      await db.del("d");
      await db.put("e2", "new");
      it.seek("e");
      assert.deepEqual(await it.nextv(10), ["e", "f"]);
      it.seek("a"); // before the range: starts at its lower bound
      assert.equal(await it.next(), "c");
      it.seek("d");
      assert.equal(await it.next(), "d"); // deleted after the iterator was made
      it.seek("z");
      assert.equal(await it.next(), undefined);
      await it.close();

      const rev = db.keys({ reverse: true, lt: "f" });
      rev.seek("c");
      assert.deepEqual(await rev.all(), ["c", "b", "a"]);
      await db.close();
    });
  });

  test("an iterator on an explicit snapshot reads it; once the snapshot is closed, reads fail", async () => {
    await withDir(async (dir) => {
      const db = await level(dir);
      await db.put("a", "1");
      await db.put("b", "2");
      const snapshot = db.snapshot();
      const it = db.iterator({ snapshot });
      await db.put("a", "changed");
      assert.deepEqual(await it.next(), ["a", "1"]);
      it.seek("a");
      assert.deepEqual(await it.next(), ["a", "1"]);
      await snapshot.close();
      it.seek("b"); // does not throw: the iterator still holds the engine snapshot
      await assert.rejects(it.next(), { code: "LEVEL_SNAPSHOT_NOT_OPEN" });
      await assert.rejects(db.get("a", { snapshot }), { code: "LEVEL_SNAPSHOT_NOT_OPEN" });
      await it.close();
      assert.equal(await db.get("a"), "changed");
      await db.close();
    });
  });

  test("reads, seeks and clear over data in flushed and compacted tables", async () => {
    await withDir(async (dir) => {
      const db = await level(dir, { writeBufferSize: 16 << 10, compactionMode: "inline" });
      const value = "x".repeat(100);
      for (let round = 0; round < 3; round++) {
        const b = db.batch();
        for (let i = round; i < 3000; i += 3) b.put(key(i), value + round);
        await b.write();
      }
      await db.clear({ gte: key(1000), lt: key(2000) });
      assert.equal((await db.keys().all()).length, 2000);
      assert.equal(await db.get(key(999)), `${value}0`);
      assert.equal(await db.get(key(1500)), undefined);
      const it = db.keys({ reverse: true });
      it.seek(key(1999));
      assert.equal(await it.next(), key(999));
      await it.close();
      assert.deepEqual(await db.getMany([key(0), key(1), key(2), key(1001)]), [
        `${value}0`,
        `${value}1`,
        `${value}2`,
        undefined,
      ]);
      assert.deepEqual(await db.hasMany([key(2999), key(1999)]), [true, false]);
      await db.close();
    });
  });

  test("a second database on the same directory fails to open with cause LEVEL_LOCKED", async () => {
    await withDir(async (dir) => {
      const db = await level(dir);
      const other = new KvEngineLevel(dir);
      await assert.rejects(other.open(), (err: Error & { code?: string; cause?: unknown }) => {
        assert.equal(err.code, "LEVEL_DATABASE_NOT_OPEN");
        assert.equal((err.cause as { code?: string }).code, "LEVEL_LOCKED");
        return true;
      });
      await db.close();
    });
  });

  test("the manifest says what the adapter does", async () => {
    await withDir(async (dir) => {
      const db = new KvEngineLevel(dir);
      const s = db.supports;
      assert.equal(s.implicitSnapshots, true);
      assert.equal(s.explicitSnapshots, true);
      assert.equal(s.has, true);
      assert.equal(s.seek, true);
      assert.equal(s.permanence, true);
      assert.equal(s.createIfMissing, true);
      assert.equal(s.errorIfExists, true);
      assert.equal(s.deferredOpen, true);
      assert.equal((s as { getSync?: boolean }).getSync, true);
      assert.deepEqual(s.signals, { iterators: true });
      assert.equal(s.encodings["buffer"], true);
      assert.equal(s.encodings["view"], true);
      assert.equal(s.encodings["utf8"], true);
      await db.put("k", "v");
      assert.equal(db.getSync("k"), "v");
      assert.equal(db.getSync("absent"), undefined);
      await db.close();
    });
  });
});
