/**
 * Power loss at every file operation of a run that flushes: the run writes enough (with a
 * tiny write buffer) to switch memtables and logs many times, flush level-0 tables, log a
 * manifest edit per flush, delete old logs, and close and reopen in the middle (a reopen
 * writes a new manifest and swaps CURRENT). The in-memory file system is crash-cloned just
 * before operation N (FaultInjectingFileSystem's onOp hook), keeping 0%, 50% or 100% of
 * the unsynced changes, growing files surviving as a prefix (ext4 data=ordered). Every
 * clone must open, hold every write acknowledged as durable before the crash, and hold
 * exactly a prefix of the history of batches (no hole, no partial batch).
 *
 * A dry run counts the operations; then one run clones before each chosen N (every N when
 * the run has at most 200 operations, else a seeded sample of 200 that takes the renames,
 * removes, creates, truncations and directory syncs first, up to half of it). KV_STRESS=1
 * crashes before every N, with 5 seeds per test. A failure prints the seed; KV_SEED=<seed> replays it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryFileSystem, type OpenOptions, open } from "../../src/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import type { FileSystem, WritableFile } from "../../src/vfs/file-system.js";
import {
  type CrashPoint,
  chooseCrashPoints,
  countOps,
  describeOp,
  openCrashed,
} from "../support/crash-points.js";
import { CrashRun } from "../support/crash-run.js";
import { GatedFileSystem } from "../support/gated-file-system.js";
import { type Batch, batchGenerator } from "../support/history.js";
import { testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const KEYS = 40;
const BATCHES = 80;
const WRITERS = 3;
const MAX_CRASH_POINTS = 200;
const SEEDS = STRESS ? 5 : 1;

// The smallest write buffer: ~10 entries per memtable (~72 bytes of memtable overhead each).
const STORE_OPTIONS: OpenOptions = { writeBufferSize: 1024, blockSize: 256 };

type CompactionMode = "inline" | "worker";

interface RunResult {
  history: Batch[];
  crashes: CrashPoint[];
  ops: FileOp[];
  flushes: number;
}

/**
 * The workload: BATCHES batches from WRITERS concurrent writers, with a close and reopen
 * after half of them, flushes and compactions in `mode`. Clones the file system before
 * every operation index in `crashAt`.
 */
async function runWorkload(
  seed: number,
  retention: number,
  syncShare: number,
  crashAt: ReadonlySet<number>,
  mode: CompactionMode,
): Promise<RunResult> {
  const run = new CrashRun({ seed, retention, crashAt: (index) => crashAt.has(index) });
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 4, syncShare });
  const options = { ...STORE_OPTIONS, compactionMode: mode, fs: run.fs };
  let flushes = 0;
  for (const until of [BATCHES / 2, BATCHES]) {
    const db = await open("/db", options);
    await run.write(db, next, until, WRITERS);
    flushes += db.stats().flushes;
    await db.close();
    run.closed();
  }
  return { history: run.history, crashes: run.crashes, ops: run.fs.log, flushes };
}

async function checkCrash(
  seed: number,
  history: readonly Batch[],
  crash: CrashPoint,
): Promise<void> {
  const where = `seed ${seed} (replay with KV_SEED=${seed}), crash before op #${crash.index} (${describeOp(crash.op)})`;
  const { db } = await openCrashed(where, crash, STORE_OPTIONS, history, KEYS);
  try {
    // The recovered store keeps working.
    await db.put("after", "crash");
    await db.flush();
  } finally {
    await db.close();
  }
}

async function crashEverywhere(
  retention: number,
  syncShare: number,
  mode: CompactionMode,
  t: { diagnostic: (s: string) => void },
): Promise<void> {
  const base = testSeed();
  for (let s = 0; s < SEEDS; s++) {
    const seed = base + s;
    const dry = await runWorkload(seed, retention, syncShare, new Set(), mode);
    // The run must exercise what this test is about.
    const sst = countOps(dry.ops, (op) => op.kind === "createWritable" && op.path.endsWith(".sst"));
    const logs = countOps(
      dry.ops,
      (op) => op.kind === "createWritable" && op.path.endsWith(".log"),
    );
    const logRemoves = countOps(dry.ops, (op) => op.kind === "remove" && op.path.endsWith(".log"));
    const manifestAppends = countOps(
      dry.ops,
      (op) => op.kind === "append" && op.path.includes("MANIFEST-"),
    );
    const currentSwaps = countOps(
      dry.ops,
      (op) => op.kind === "rename" && (op.to ?? "").endsWith("/CURRENT"),
    );
    assert.ok(sst >= 5, `seed ${seed}: only ${sst} tables written`);
    assert.ok(logs >= 5, `seed ${seed}: only ${logs} logs created`);
    assert.ok(logRemoves >= 3, `seed ${seed}: only ${logRemoves} logs deleted`);
    assert.ok(manifestAppends >= sst, `seed ${seed}: ${manifestAppends} manifest appends`);
    assert.ok(currentSwaps >= 2, `seed ${seed}: ${currentSwaps} CURRENT swaps`);

    const crashAt = chooseCrashPoints(seed, dry.ops, MAX_CRASH_POINTS, STRESS);
    const run = await runWorkload(seed, retention, syncShare, crashAt, mode);
    // The same seed, the same operations in the same order (whichever thread issues them).
    assert.deepEqual(run.ops.map(describeOp), dry.ops.map(describeOp), `seed ${seed}: replay`);
    for (const crash of run.crashes) await checkCrash(seed, run.history, crash);
    t.diagnostic(
      `seed ${seed}: ${dry.ops.length} file operations (${run.ops.length} in the checked run), ` +
        `${run.crashes.length} crash points checked; ${sst} tables, ${logs} logs created, ` +
        `${logRemoves} logs deleted, ${currentSwaps} CURRENT swaps, ${dry.flushes} flushes (${mode})`,
    );
    assert.equal(run.crashes.length, crashAt.size);
    const byWorker = run.crashes.filter((c) => c.byWorker).length;
    if (mode === "worker") assert.ok(byWorker >= 20, `only ${byWorker} crash points in the worker`);
    else assert.equal(byWorker, 0);
  }
}

describe("power loss during flushes, log rotation and reopen", () => {
  test("a durable write made after a memtable switch also makes the sync: false writes before it (in the previous log) durable", async () => {
    const mem = new MemoryFileSystem();
    const fs = new GatedFileSystem(mem);
    fs.hold(); // the flush of the old memtable stays in progress
    const db = await open("/db", { fs, writeBufferSize: 4096 });
    let n = 0;
    while (db.stats().memtableBytes < 4096) {
      await db.put(`early${n}`, `v${n}`, { sync: false });
      n++;
    }
    // This write switches memtables (and logs) first, then is synced in the new log.
    await db.put("durable", "yes", { sync: true });
    assert.equal(db.stats().immutableMemtables, 1, "the old memtable is being flushed");
    assert.equal(db.stats().flushes, 0);
    const crashed = mem.crashClone({ unsyncedRetention: 0 });
    fs.release();
    await db.close();

    const after = await open("/db", { fs: crashed });
    try {
      assert.equal(String(await after.get("durable")), "yes", "the acknowledged durable write");
      const lost: string[] = [];
      for (let i = 0; i < n; i++)
        if ((await after.get(`early${i}`)) === undefined) lost.push(`early${i}`);
      assert.deepEqual(
        lost,
        [],
        `the durable write survived without the ${lost.length} of ${n} writes made before it ` +
          "(they were in the previous log, closed without a sync)",
      );
    } finally {
      await after.close();
    }
  });

  test("a flush that installs while a memtable switch closes the old log keeps that log live", async () => {
    const mem = new MemoryFileSystem();
    const gated = new GatedFileSystem(mem); // holds table syncs: flushes stay in progress
    let holdLogClose = false;
    let closeArrived!: () => void;
    const arrived = new Promise<void>((resolve) => {
      closeArrived = resolve;
    });
    let releaseClose!: () => void;
    const released = new Promise<void>((resolve) => {
      releaseClose = resolve;
    });
    // The file system, with the close of a log file held once holdLogClose is set.
    const fs: FileSystem = Object.create(gated, {
      createWritable: {
        value: async (path: string): Promise<WritableFile> => {
          const file = await gated.createWritable(path);
          if (!path.endsWith(".log")) return file;
          return new Proxy(file, {
            get(target, prop) {
              if (prop === "close") {
                return async () => {
                  if (holdLogClose) {
                    holdLogClose = false;
                    closeArrived();
                    await released;
                  }
                  return target.close();
                };
              }
              const v: unknown = Reflect.get(target, prop);
              return typeof v === "function" ? v.bind(target) : v;
            },
          });
        },
      },
    });
    gated.hold();
    const db = await open("/db", { fs, writeBufferSize: 4096 });
    const fill = async (prefix: string): Promise<number> => {
      let n = 0;
      while (db.stats().memtableBytes < 4096) await db.put(`${prefix}${n++}`, "v", { sync: false });
      return n;
    };
    await fill("a");
    await db.put("a-last", "v", { sync: false }); // switches: the "a" memtable's flush is held
    assert.equal(db.stats().immutableMemtables, 1);
    const n = await fill("b");
    holdLogClose = true;
    const switching = db.put("b-last", "v", { sync: false }); // switches again: holds at the "b" log's close
    await arrived;
    // The "a" flush completes and installs its version edit while the switch waits; the
    // "b" flush that follows it stays held, so the "b" writes are in their log only.
    gated.release();
    gated.hold();
    while (db.stats().flushes < 1) await new Promise((resolve) => setImmediate(resolve));
    releaseClose();
    await switching;
    const crashed = mem.crashClone({ unsyncedRetention: 1 });
    gated.release();
    await db.close();

    const after = await open("/db", { fs: crashed });
    try {
      const lost: string[] = [];
      for (let i = 0; i < n; i++) if ((await after.get(`b${i}`)) === undefined) lost.push(`b${i}`);
      assert.deepEqual(lost, [], `${lost.length} of the ${n} writes in the closing log were lost`);
      assert.equal(String(await after.get("b-last")), "v");
    } finally {
      await after.close();
    }
  });

  for (const retention of [0, 0.5, 1]) {
    test(`a crash before any file operation, keeping ${retention * 100}% of unsynced data, loses no durable write and leaves a prefix (durable writes)`, async (t) => {
      await crashEverywhere(retention, 1, "inline", t);
    });
  }
  for (const retention of [0, 0.5]) {
    test(`a crash before any file operation, keeping ${retention * 100}% of unsynced data, leaves a prefix covering every durable ack (sync: false writes mixed in)`, async (t) => {
      await crashEverywhere(retention, 0.6, "inline", t);
    });
  }
  // Flushes in the worker thread, on the in-memory file system through the lockstep
  // proxy: one retention each (the others differ only in what the clones keep).
  test("worker flushes: a crash before any file operation, keeping 50% of unsynced data, loses no durable write and leaves a prefix (durable writes)", async (t) => {
    await crashEverywhere(0.5, 1, "worker", t);
  });
  test("worker flushes: a crash before any file operation, keeping none of the unsynced data, leaves a prefix covering every durable ack (sync: false writes mixed in)", async (t) => {
    await crashEverywhere(0, 0.6, "worker", t);
  });
});
