/**
 * Reads are not blocked by a compaction in the worker thread (real file system): while a
 * long `compactRange()` rewrites several megabytes of level-0 tables, gets and iterators
 * keep completing, with correct values. Shown by ordering, not timing: an event log
 * records each read's completion and the compaction's, and many reads must come before
 * the compaction's.
 *
 * And an iterator opened before the compaction reads the tables it started on: after the
 * compaction has installed new tables, it still yields exactly the data of its view, those
 * old tables stay on disk while it is open, and the sweep deletes them once it is closed.
 *
 * KV_STRESS=1 uses 4x the data. KV_SEED replays the data and the keys read.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type KvStore, open } from "../../src/index.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { tempDir } from "../support/temp-dir.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const KEYS = STRESS ? 160_000 : 40_000;
const BATCH = 1000;

const dirs: Array<{ remove: () => void }> = [];
after(() => {
  for (const d of dirs) d.remove();
});

const keyOf = (i: number) => `key${String(i).padStart(9, "0")}`;
const valueFor = (i: number, round: number) =>
  `${round}:${i}:${"abcdefghijklmnopqrstuvwxyz".repeat(4)}`;

const tableFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".sst"))
    .sort();
const tablesInVersion = (db: KvStore) => db.stats().levelFiles.reduce((a, b) => a + b, 0);
const immediate = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A store with every key written twice (the second round overwrites it), in many
 * overlapping level-0 tables that nothing compacts on its own.
 */
async function loaded(): Promise<{ db: KvStore; dir: string }> {
  const d = tempDir("kv-reads-");
  dirs.push(d);
  const dir = join(d.path, "db");
  const db = await open(dir, {
    compactionMode: "worker",
    writeBufferSize: 1 << 20,
    l0CompactionTrigger: 1000,
    l0SlowdownTrigger: 1000,
    l0StopTrigger: 1000,
  });
  for (let round = 0; round < 2; round++) {
    for (let start = 0; start < KEYS; start += BATCH) {
      const batch = db.batch();
      for (let i = start; i < start + BATCH; i++) batch.put(keyOf(i), valueFor(i, round));
      await db.write(batch, { sync: false });
    }
  }
  await db.flush();
  assert.ok(db.stats().levelFiles[0]! >= 8, `levels ${db.stats().levelFiles}`);
  assert.equal(db.stats().compaction.compactions, 0);
  return { db, dir };
}

describe("reads during a compaction in the worker thread", () => {
  test("gets and iterators complete, with correct values, while a long compactRange runs (many reads finish before it does)", async (t) => {
    const seed = testSeed();
    const r = rng(seed);
    const { db } = await loaded();
    try {
      const events: string[] = [];
      let done = false;
      const compaction = db.compactRange().then(() => {
        events.push("compaction");
        done = true;
      });
      let gets = 0;
      let scans = 0;
      const wrong: string[] = [];
      while (!done) {
        const i = randInt(r, KEYS);
        const v = await db.get(keyOf(i));
        if (v?.toString() !== valueFor(i, 1)) wrong.push(`get ${keyOf(i)}: ${v?.toString()}`);
        events.push("get");
        gets++;
        if (gets % 10 === 0) {
          // A fresh iterator over a short range, opened while the compaction runs.
          const from = randInt(r, KEYS - 20);
          const entries = await db.iterator({ gte: keyOf(from), limit: 20 }).all();
          for (let j = 0; j < 20; j++) {
            if (entries[j]?.[1].toString() !== valueFor(from + j, 1)) {
              wrong.push(`iterator at ${keyOf(from + j)}: ${entries[j]?.[0].toString()}`);
            }
          }
          events.push("iterator");
          scans++;
        }
        // Give the event loop a turn (the worker's messages are delivered there).
        await immediate();
      }
      await compaction;
      const compactionAt = events.indexOf("compaction");
      const readsBefore = events.slice(0, compactionAt).length;
      const itersBefore = events.slice(0, compactionAt).filter((e) => e === "iterator").length;
      const s = db.stats();
      t.diagnostic(
        `seed ${seed}: ${KEYS} keys x 2; ${readsBefore} reads (${itersBefore} iterators) ` +
          `completed before compactRange resolved; ${s.compaction.compactions} compactions, ` +
          `${s.compaction.bytesRead} bytes read, levels ${s.levelFiles.join("/")}`,
      );
      assert.deepEqual(wrong.slice(0, 10), [], `seed ${seed}: wrong values during compaction`);
      assert.ok(s.compaction.compactions >= 1);
      assert.equal(s.levelFiles[0], 0, "the compaction emptied level 0");
      assert.ok(
        readsBefore >= 50,
        `only ${readsBefore} reads completed before the compaction did: reads wait for it`,
      );
      assert.ok(itersBefore >= 5, `only ${itersBefore} iterators completed during the compaction`);
      assert.equal(gets, events.filter((e) => e === "get").length);
      assert.ok(scans >= itersBefore);
    } finally {
      await db.close();
    }
  });

  test("an iterator opened before a compaction yields its data after the compaction finished, its old tables stay until it closes, then are deleted", async () => {
    const { db, dir } = await loaded();
    try {
      const oldTables = tableFiles(dir);
      const it = db.iterator();
      // Start reading before the compaction.
      let next = 0;
      const expectNext = async (where: string) => {
        const e = await it.next();
        assert.equal(e.done, false, `${where}: ended at ${next}`);
        const [k, v] = e.value!;
        assert.equal(k.toString(), keyOf(next), where);
        assert.equal(v.toString(), valueFor(next, 1), where);
        next++;
      };
      for (let j = 0; j < 100; j++) await expectNext("before the compaction");

      // Writes after the iterator was opened are not seen by it.
      await db.put(keyOf(KEYS - 1), "changed later");
      await db.delete(keyOf(500));
      await db.compactRange();
      assert.equal(db.stats().levelFiles[0], 0, "the compaction emptied level 0");
      // Give the sweep time to (wrongly) delete pinned tables.
      await sleep(100);
      const present = new Set(tableFiles(dir));
      const missing = oldTables.filter((f) => !present.has(f));
      assert.deepEqual(missing, [], "tables of the open iterator's view were deleted");
      assert.ok(
        present.size > tablesInVersion(db),
        "the old tables are on disk besides the new ones",
      );

      // The iterator goes on with the data of its view, to the end.
      while (next < KEYS) await expectNext(`after the compaction, key ${next}`);
      const end = await it.next();
      assert.equal(end.done, true, "the iterator ends after the last key");

      it.close();
      let left: string[] = [];
      for (let w = 0; w < 500; w++) {
        const now = new Set(tableFiles(dir));
        left = oldTables.filter((f) => now.has(f));
        if (left.length === 0 && now.size === tablesInVersion(db)) break;
        await sleep(10);
      }
      assert.deepEqual(left, [], "the old tables are deleted once the iterator is closed");
      assert.equal(tableFiles(dir).length, tablesInVersion(db), "only tables of the version");
      assert.equal((await db.get(keyOf(KEYS - 1)))?.toString(), "changed later");
      assert.equal(await db.get(keyOf(500)), undefined);
    } finally {
      await db.close();
    }
  });
});
