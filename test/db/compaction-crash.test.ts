/**
 * Power loss at every file operation of a run that compacts: like flush-crash.test.ts, but
 * with tiny compaction settings (level 0 -> 1 after every second flush, 2 KiB output
 * tables, an 8 KiB level 1, each deeper level 4x larger), so the run writes compaction
 * outputs, fsyncs them and the directory, logs "delete inputs, add outputs" edits in the
 * manifest, deletes the inputs, and closes and reopens in the middle (abandoning a running
 * compaction and rolling the manifest over). The in-memory file system is crash-cloned just
 * before operation N, keeping 0%, 50% or 100% of the unsynced changes, growing files
 * surviving as a prefix (ext4 data=ordered). Every clone must open, hold every write
 * acknowledged as durable before the crash and exactly a prefix of the history of batches,
 * agree between get and iteration, keep working, and - once the store it opened is idle -
 * hold no orphan table: every *.sst in the directory is listed in the version (an output
 * written before the crash but never installed is swept at open).
 *
 * A dry run counts the operations (and asserts the run compacted several times); then one
 * run clones before each chosen N: a seeded sample of 150 that takes the structural
 * operations (creates, renames, removes, truncations, directory syncs) first, up to half of
 * it. KV_STRESS=1 crashes before every N, with 3 seeds per test. A failure prints the seed;
 * KV_SEED=<seed> replays it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type KvStore, type MemoryFileSystem, type OpenOptions, open } from "../../src/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import {
  type CrashPoint,
  chooseCrashPoints,
  countOps,
  describeOp,
  openCrashed,
} from "../support/crash-points.js";
import { CrashRun } from "../support/crash-run.js";
import { eventually } from "../support/gated-file-system.js";
import { type Batch, batchGenerator, diffStates, readState } from "../support/history.js";
import { testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const KEYS = 40;
const BATCHES = 160;
const WRITERS = 3;
const MAX_CRASH_POINTS = 150;
const SEEDS = STRESS ? 3 : 1;

const STORE_OPTIONS: OpenOptions = {
  // The smallest write buffer: ~10 entries per memtable (~72 bytes of memtable overhead each).
  writeBufferSize: 1024,
  blockSize: 256,
  l0CompactionTrigger: 2,
  targetFileSize: 2048,
  maxBytesForLevelBase: 8192,
  levelSizeMultiplier: 4,
  compactionMode: "inline",
};

interface RunResult {
  history: Batch[];
  crashes: CrashPoint[];
  ops: FileOp[];
  flushes: number;
  compactions: number;
}

/**
 * The workload: BATCHES batches from WRITERS concurrent writers, with a close and reopen
 * after half of them, flushes and compactions in `mode`. Clones the file system before
 * every operation index in `crashAt`.
 */
async function runWorkload(
  seed: number,
  retention: number,
  crashAt: ReadonlySet<number>,
  mode: "inline" | "worker",
): Promise<RunResult> {
  const run = new CrashRun({ seed, retention, crashAt: (index) => crashAt.has(index) });
  // Mostly durable writes, some sync: false ones mixed in.
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 4, syncShare: 0.8 });
  const options = { ...STORE_OPTIONS, compactionMode: mode, fs: run.fs };
  let flushes = 0;
  let compactions = 0;
  for (const until of [BATCHES / 2, BATCHES]) {
    const db = await open("/db", options);
    await run.write(db, next, until, WRITERS);
    const s = db.stats();
    flushes += s.flushes;
    compactions += s.compaction.compactions + s.compaction.trivialMoves;
    assert.equal(s.compaction.failures, 0, `seed ${seed}: ${s.compaction.lastError}`);
    await db.close();
    run.closed();
  }
  return { history: run.history, crashes: run.crashes, ops: run.fs.log, flushes, compactions };
}

async function tableFiles(fs: MemoryFileSystem): Promise<string[]> {
  return (await fs.list("/db")).filter((n) => n.endsWith(".sst")).sort();
}

const tablesInVersion = (db: KvStore) => db.stats().levelFiles.reduce((a, b) => a + b, 0);

/**
 * Waits until the store is idle (no compaction running) and the sweep has run: every
 * table file in the directory is listed in the version. Returns a description when not.
 */
async function orphanTables(db: KvStore, fs: MemoryFileSystem): Promise<string | undefined> {
  let files: string[] = [];
  const ok = await eventually(async () => {
    if (db.stats().compaction.running) return false;
    files = await tableFiles(fs);
    return files.length === tablesInVersion(db);
  }, 400);
  if (ok) return undefined;
  const s = db.stats();
  return (
    `${files.length} table files (${files.join(" ")}) but the version lists ` +
    `${tablesInVersion(db)} (levels ${s.levelFiles.join("/")}), compaction running: ` +
    `${s.compaction.running}`
  );
}

async function checkCrash(
  seed: number,
  history: readonly Batch[],
  crash: CrashPoint,
): Promise<void> {
  const where = `seed ${seed} (replay with KV_SEED=${seed}), crash before op #${crash.index} (${describeOp(crash.op)})`;
  const { db, state: actual } = await openCrashed(where, crash, STORE_OPTIONS, history, KEYS);
  try {
    // No table written before the crash is left behind without being in the version.
    const orphans = await orphanTables(db, crash.clone);
    if (orphans !== undefined) assert.fail(`${where}: orphan table files after open: ${orphans}`);
    // The recovered store keeps working, compactions included.
    await db.put("after", "crash");
    await db.compactRange();
    assert.equal(String(await db.get("after")), "crash", `${where}: a write after recovery`);
    const again = await readState((k) => db.get(k), KEYS);
    assert.equal(diffStates(actual, again), "", `${where}: compactRange changed the data`);
  } finally {
    await db.close();
  }
}

async function crashEverywhere(
  retention: number,
  mode: "inline" | "worker",
  t: { diagnostic: (s: string) => void },
): Promise<void> {
  const base = testSeed();
  for (let s = 0; s < SEEDS; s++) {
    const seed = base + s;
    const dry = await runWorkload(seed, retention, new Set(), mode);
    // The run must exercise what this test is about.
    const sst = countOps(dry.ops, (op) => op.kind === "createWritable" && op.path.endsWith(".sst"));
    const sstRemoves = countOps(dry.ops, (op) => op.kind === "remove" && op.path.endsWith(".sst"));
    const currentSwaps = countOps(
      dry.ops,
      (op) => op.kind === "rename" && (op.to ?? "").endsWith("/CURRENT"),
    );
    assert.ok(
      dry.compactions >= 4,
      `seed ${seed}: only ${dry.compactions} compactions installed (${dry.flushes} flushes)`,
    );
    assert.ok(sstRemoves >= 4, `seed ${seed}: only ${sstRemoves} tables deleted`);
    assert.ok(currentSwaps >= 2, `seed ${seed}: ${currentSwaps} CURRENT swaps`);

    const crashAt = chooseCrashPoints(seed, dry.ops, MAX_CRASH_POINTS, STRESS);
    const run = await runWorkload(seed, retention, crashAt, mode);
    // The same seed, the same operations in the same order (whichever thread issues them).
    assert.deepEqual(run.ops.map(describeOp), dry.ops.map(describeOp), `seed ${seed}: replay`);
    for (const crash of run.crashes) await checkCrash(seed, run.history, crash);
    t.diagnostic(
      `seed ${seed}: ${dry.ops.length} file operations (${run.ops.length} in the checked run), ` +
        `${run.crashes.length} crash points checked; ${dry.flushes} flushes, ` +
        `${dry.compactions} compactions, ${sst} tables written, ${sstRemoves} deleted, ` +
        `${currentSwaps} CURRENT swaps (${mode})`,
    );
    assert.equal(run.crashes.length, crashAt.size);
    const byWorker = run.crashes.filter((c) => c.byWorker).length;
    if (mode === "worker") assert.ok(byWorker >= 20, `only ${byWorker} crash points in the worker`);
    else assert.equal(byWorker, 0);
  }
}

describe("power loss during compactions", () => {
  for (const retention of [0, 0.5, 1]) {
    test(`a crash before any file operation of a compacting run, keeping ${retention * 100}% of unsynced data, loses no durable write, leaves a prefix and no orphan table`, async (t) => {
      await crashEverywhere(retention, "inline", t);
    });
  }
  // Flushes and compactions in the worker thread, on the in-memory file system through
  // the lockstep proxy: one retention (the others differ only in what the clones keep).
  test("worker compactions: a crash before any file operation of a compacting run, keeping 50% of unsynced data, loses no durable write, leaves a prefix and no orphan table", async (t) => {
    await crashEverywhere(0.5, "worker", t);
  });
});
