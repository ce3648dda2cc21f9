/**
 * Error-injection sweep (Pebble errorfs style) over a whole run: open, durable batches (a
 * tiny write buffer: log rotations and flushes), an explicit flush, background and
 * manual compactions (compactRange), full forward and reverse scans, a close, a reopen
 * and more writes, a final close. The run is repeated with the Nth file operation failing
 * (EIO; a failed fsync also drops the file's unsynced data, as a kernel may) for N = 0, 1,
 * 2, ... until a run passes untouched by the injector.
 *
 * Each run must end in success or in a KvError (never another exception, a hang or a
 * crash); a scan that succeeds must show exactly the acknowledged writes. Afterwards, the
 * directory as left, and a power-loss clone of it (unsynced data dropped), must open and
 * hold every acknowledged batch, and exactly a prefix of history (a failed batch is never
 * half applied), and pass `verify` (no damage, only notes).
 *
 * Default: every 3rd N (from a seeded offset) - about a third of the runs. KV_STRESS=1:
 * every N, for 2 seeds. KV_SEED=<seed> replays the batches.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  type KvStore,
  MemoryFileSystem,
  open,
} from "../../src/index.js";
import { verifyStore } from "../../src/tools/verify.js";
import { describeOp } from "../support/crash-points.js";
import {
  applyBatch,
  diffStates,
  type Model,
  matchingPrefix,
  readState,
} from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { KEYS, OPTIONS, workload } from "./workload.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const STRIDE = Number(process.env["KV_SWEEP_STRIDE"] ?? (STRESS ? 1 : 3));
const SEEDS = STRESS ? 2 : 1;

/**
 * Runs the workload of `seed` with file operation `n` failing and checks the directory as
 * left and after a power loss (see the module comment). Returns the run.
 */
async function checkOne(
  seed: number,
  n: number,
): Promise<{ error: unknown; acked: number; opCount: number }> {
  const mem = new MemoryFileSystem();
  const fs = new FaultInjectingFileSystem(mem, {
    injector: FaultInjectingFileSystem.failNth(n),
    dropUnsyncedOnSyncFailure: true,
    keepLog: true,
  });
  const run = await workload(seed, fs, { acked: 0 });
  const failedOp = fs.log[n];
  const where = `seed ${seed} (KV_SEED=${seed}), failing op #${n}${failedOp === undefined ? "" : ` (${describeOp(failedOp)})`}`;
  if (run.error !== undefined) {
    assert.ok(isKvError(run.error), `${where}: ended with a non-KvError: ${String(run.error)}`);
  }
  for (const [name, target] of [
    ["as left", mem],
    ["after a power loss", mem.crashClone({ unsyncedRetention: 0, seed })],
  ] as const) {
    let db: KvStore;
    try {
      db = await open("/db", { ...OPTIONS, fs: target });
    } catch (err) {
      // A run that failed before the store was ever created leaves nothing to open.
      if (run.acked === 0 && run.history.length === 0) continue;
      assert.fail(`${where}: the directory ${name} does not open: ${String(err)}`);
    }
    try {
      const actual = await readState((k) => db.get(k), KEYS);
      const m = matchingPrefix(new Map(), run.history, run.acked, actual);
      if (m < 0) {
        const expected: Model = new Map();
        for (const b of run.history.slice(0, run.acked)) applyBatch(expected, b);
        assert.fail(
          `${where}: ${name}, the state is no prefix of history covering the ${run.acked} acknowledged batches (${String(run.error)})\n${diffStates(expected, actual)}`,
        );
      }
    } finally {
      await db.close();
    }
    const report = await verifyStore("/db", { fs: target });
    assert.deepEqual(report.problems, [], `${where}: ${name}, verify`);
  }
  return { error: run.error, acked: run.acked, opCount: fs.opCount };
}

// Fixed: flush() after a failed background flush used to switch memtables and flush the
// failed one with the newest log as the manifest's log number, deleting the log of the
// memtable in between. Now flush() refuses after a background error, and a flush records
// the log of the next unflushed memtable.
test("regression: a failed flush, then flush(): the memtable written after the failure is not lost (seed 1444140284, op 199)", async () => {
  await checkOne(1444140284, 199);
});

test("failing each file operation of an open/write/flush/compact/scan/close run loses nothing acknowledged", async (t) => {
  const base = testSeed();
  let runs = 0;
  let failedRuns = 0;
  let ackedChecked = 0;
  let totalOps = 0;
  for (let s = 0; s < SEEDS; s++) {
    const seed = base + s;
    const offset = randInt(rng(seed), STRIDE);
    let lastOps = 0;
    for (let n = offset; ; n += STRIDE) {
      const run = await checkOne(seed, n);
      runs++;
      lastOps = run.opCount;
      if (run.error !== undefined) failedRuns++;
      ackedChecked += run.acked;
      if (run.error === undefined && run.opCount <= n) break;
    }
    totalOps += lastOps;
  }
  t.diagnostic(
    `${runs} runs (${failedRuns} ended in an error), ${totalOps} file operations in the clean runs, ${ackedChecked} acknowledged batches checked, stride ${STRIDE}, seed ${base}`,
  );
  assert.ok(failedRuns > runs / 2, "most runs must hit their injected fault");
});
