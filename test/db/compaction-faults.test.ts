/**
 * I/O errors during compaction.
 *
 * 1. Every file operation of a manual compaction fails once: a store (in-memory file system
 *    behind a FaultInjectingFileSystem) holds data in several level-0 tables - overwrites
 *    and deletes across them - with compaction triggers too high for anything to compact
 *    on its own. For N = 0, 1, ... a fresh copy of that store gets an injector failing the
 *    Nth file operation from then on, and `compactRange()` runs: it resolves, or rejects
 *    with a KvError. Then (injector removed) every key reads back correctly (get and
 *    iteration), and so it does after reopening on the same files, which leaves no orphan
 *    table. The sweep stops at the first N whose run the injector never touched.
 *    KV_SEED replays the data; KV_STRESS=1 uses three seeds and more data.
 *
 * 2. A compaction failing in the background (every output table create fails) is retried
 *    with back-off (stats().compaction.failures grows; the retries are spaced 100, 200,
 *    400, 800 ms apart) and after 5 failures in a row the store reports backgroundError
 *    and refuses writes, while reads still work.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  type KvStore,
  MemoryFileSystem,
  type OpenOptions,
  open,
} from "../../src/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import { ticks } from "../support/gated-file-system.js";
import { randInt, rng, testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const SEEDS = STRESS ? 3 : 1;
const KEYS = STRESS ? 400 : 100;
const FLUSHES = 5;

/** Nothing compacts on its own; small blocks and output tables make many file operations. */
const QUIET: OpenOptions = {
  writeBufferSize: 1 << 20,
  blockSize: STRESS ? 256 : 1024,
  l0CompactionTrigger: 100,
  l0SlowdownTrigger: 100,
  l0StopTrigger: 100,
  targetFileSize: 4096,
  maxBytesForLevelBase: 16384,
  levelSizeMultiplier: 4,
  compactionMode: "inline",
};

const keyOf = (i: number) => `key${String(i).padStart(5, "0")}`;
type Model = Map<string, string>;

/** A store with FLUSHES overlapping level-0 tables of puts, overwrites and deletes. */
async function build(seed: number): Promise<{ mem: MemoryFileSystem; model: Model }> {
  const mem = new MemoryFileSystem();
  const r = rng(seed);
  const model: Model = new Map();
  const db = await open("/db", { ...QUIET, fs: mem });
  for (let f = 0; f < FLUSHES; f++) {
    const batch = db.batch();
    for (let j = 0; j < KEYS / 2; j++) {
      const k = keyOf(randInt(r, KEYS));
      if (f > 0 && r() < 0.2) {
        batch.delete(k);
        model.delete(k);
      } else {
        const v = `${f}.${j}.${"v".repeat(randInt(r, 80))}`;
        batch.put(k, v);
        model.set(k, v);
      }
    }
    await db.write(batch);
    await db.flush();
  }
  const s = db.stats();
  assert.equal(s.levelFiles[0], FLUSHES, "the data is in level-0 tables");
  assert.equal(s.compaction.compactions + s.compaction.trivialMoves, 0, "nothing compacted yet");
  await db.close();
  return { mem, model };
}

/** Copies a MemoryFileSystem (everything synced by close, so nothing is lost). */
const copyOf = (mem: MemoryFileSystem) => mem.crashClone({ unsyncedRetention: 1 });

async function checkModel(db: KvStore, model: Model, where: string): Promise<void> {
  for (let i = 0; i < KEYS; i++) {
    const k = keyOf(i);
    const v = await db.get(k);
    const got = v === undefined ? undefined : Buffer.from(v).toString();
    assert.equal(got, model.get(k), `${where}: get ${k}`);
  }
  const expected = [...model.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
  const actual = (await db.iterator().all()).map(([k, v]) => [k.toString(), v.toString()]);
  assert.deepEqual(actual, expected, `${where}: a full scan`);
}

const describeOp = (op: FileOp) =>
  `${op.kind} ${op.path}${op.to === undefined ? "" : ` -> ${op.to}`}`;

describe("I/O errors during compaction", () => {
  test("compactRange failing at any one of its file operations rejects with a KvError or succeeds, and loses no data, now or after reopening", async (t) => {
    const base = testSeed();
    for (let s = 0; s < SEEDS; s++) {
      const seed = base + s;
      const { mem: built, model } = await build(seed);
      const outcomes = { ok: 0, rejected: 0, fatal: 0 };
      let n = 0;
      for (; ; n++) {
        const mem = copyOf(built);
        const fs = new FaultInjectingFileSystem(mem);
        let failedOp: FileOp | undefined;
        const where = () =>
          `seed ${seed} (replay with KV_SEED=${seed}), failing op #${n}` +
          (failedOp === undefined ? " (never reached)" : ` (${describeOp(failedOp)})`);
        const db = await open("/db", { ...QUIET, fs });
        let seen = 0;
        fs.setInjector((op) => {
          if (seen++ !== n) return false;
          failedOp = op;
          return true;
        });
        let error: unknown;
        try {
          await db.compactRange();
        } catch (err) {
          error = err;
        }
        // Let the obsolete-file sweep that follows an install run under the injector too.
        await ticks(20);
        fs.setInjector(undefined);
        if (error !== undefined) {
          assert.ok(
            isKvError(error),
            `${where()}: compactRange rejected with a non-KvError: ${String(error)}`,
          );
          assert.ok(failedOp !== undefined, `${where()}: failed without an injected fault`);
          outcomes.rejected++;
          if (failedOp.kind !== "remove" && db.stats().backgroundError === undefined) {
            // An inline job that failed removed its outputs: only the version's tables are left.
            const tables = (await mem.list("/db")).filter((f) => f.endsWith(".sst"));
            const listed = db.stats().levelFiles.reduce((x, y) => x + y, 0);
            assert.equal(
              tables.length,
              listed,
              `${where()}: a failed compaction left ${tables.length - listed} table files behind`,
            );
          }
        } else {
          outcomes.ok++;
        }
        const stats = db.stats();
        if (stats.backgroundError !== undefined) outcomes.fatal++;
        if (failedOp === undefined) {
          assert.equal(error, undefined, where());
          assert.equal(stats.levelFiles[0], 0, `${where()}: level 0 was compacted`);
        }
        await checkModel(db, model, `${where()}, after compactRange`);
        await db.close().catch((err: unknown) => {
          assert.ok(isKvError(err), `${where()}: close failed with ${String(err)}`);
        });

        const again = await open("/db", { ...QUIET, fs: mem });
        try {
          await checkModel(again, model, `${where()}, after reopening`);
          const tables = (await mem.list("/db")).filter((f) => f.endsWith(".sst"));
          const listed = again.stats().levelFiles.reduce((a, b) => a + b, 0);
          assert.equal(
            tables.length,
            listed,
            `${where()}: after reopening, ${tables.length} table files but ${listed} in the version`,
          );
          // And the store can still compact everything.
          await again.compactRange();
          await checkModel(again, model, `${where()}, after reopening and compacting`);
        } finally {
          await again.close();
        }
        if (failedOp === undefined) break;
      }
      t.diagnostic(
        `seed ${seed}: ${n} file operations each failed once; compactRange succeeded ` +
          `${outcomes.ok - 1} times and rejected ${outcomes.rejected} times ` +
          `(${outcomes.fatal} left a background error)`,
      );
      assert.ok(n >= 20, `seed ${seed}: only ${n} file operations in a compaction`);
      assert.ok(outcomes.rejected > 0, "some failures must reach the caller");
    }
  });

  test("a compaction failing in the background is retried with back-off, and after 5 failures in a row the store refuses writes but still serves reads", async () => {
    const mem = new MemoryFileSystem();
    // Only compaction outputs fail: the table files the compaction job creates (a flush
    // creates its table from src/compaction/level0-table.ts, which the stack tells apart).
    const fs = new FaultInjectingFileSystem(mem, {
      injector: (op) =>
        op.kind === "createWritable" &&
        op.path.endsWith(".sst") &&
        (new Error().stack ?? "").includes("compaction-job"),
    });
    const db = await open("/db", {
      fs,
      writeBufferSize: 4096,
      l0CompactionTrigger: 2,
      compactionMode: "inline",
    });
    const model: Model = new Map();
    try {
      let i = 0;
      while (db.stats().levelFiles[0]! < 2) {
        const k = keyOf(i % 200);
        const v = `value-${i}-${"x".repeat(50)}`;
        await db.put(k, v);
        model.set(k, v);
        i++;
        assert.ok(i < 10_000, "level 0 never reached the trigger");
      }
      // Wait for the first failure.
      const started = performance.now();
      for (let w = 0; db.stats().compaction.failures === 0; w++) {
        assert.ok(w < 1000, "the compaction never failed");
        await ticks(1);
      }
      const firstFailure = performance.now();
      assert.equal(db.stats().compaction.consecutiveFailures, 1);
      // No hot retry loop: the next attempt waits for the back-off (100 ms).
      await ticks(20);
      assert.equal(db.stats().compaction.failures, 1, "retried without a back-off");
      assert.equal(db.stats().backgroundError, undefined, "one failure is not fatal");
      // Writes still work between retries.
      await db.put("between", "retries");
      model.set("between", "retries");

      const failureTimes: number[] = [firstFailure];
      while (db.stats().compaction.failures < 5) {
        const before = db.stats().compaction.failures;
        await new Promise((resolve) => setTimeout(resolve, 10));
        const s = db.stats();
        if (s.compaction.failures > before) failureTimes.push(performance.now());
        assert.equal(s.compaction.consecutiveFailures, s.compaction.failures);
        assert.ok(performance.now() - started < 10_000, "5 failures never happened");
      }
      const s = db.stats();
      assert.equal(s.compaction.failures, 5);
      assert.equal(s.compaction.consecutiveFailures, 5);
      assert.equal(s.compaction.compactions, 0);
      assert.ok(s.backgroundError !== undefined, "the store reports its background error");
      assert.match(s.backgroundError!, /5 times in a row/);
      assert.match(s.compaction.lastError ?? "", /injected fault/);
      // Back-off: the four retries waited about 100 + 200 + 400 + 800 ms (lower bounds only).
      const waited = failureTimes.at(-1)! - failureTimes[0]!;
      assert.ok(waited >= 1400, `the 4 retries came within ${waited.toFixed(0)} ms`);
      for (let j = 2; j < failureTimes.length; j++) {
        const gap = failureTimes[j]! - failureTimes[j - 1]!;
        const previous = failureTimes[j - 1]! - failureTimes[j - 2]!;
        assert.ok(gap > previous, `retry gaps grow: ${failureTimes.map((x) => x.toFixed(0))}`);
      }

      // Writes are refused ...
      await assert.rejects(db.put("after", "fatal"), (err: unknown) => isKvError(err));
      await assert.rejects(db.write(db.batch().put("a", "b")), (err: unknown) => isKvError(err));
      // ... and no more compactions are tried.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(db.stats().compaction.failures, 5, "no retry after giving up");
      // Reads still work.
      await checkModel(db, model, "after the store gave up compacting");
      assert.equal(await db.get("after"), undefined);
    } finally {
      await db.close().catch(() => {});
    }
    // Reopened, with the faults gone, the store has everything and compacts.
    const again = await open("/db", { fs: mem, writeBufferSize: 4096, l0CompactionTrigger: 2 });
    try {
      await checkModel(again, model, "after reopening");
      await again.compactRange();
      assert.equal(again.stats().levelFiles[0], 0);
      await checkModel(again, model, "after reopening and compacting");
    } finally {
      await again.close();
    }
  });
});
