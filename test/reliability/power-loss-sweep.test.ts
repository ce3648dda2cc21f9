/**
 * Power-loss sweep over the whole-run workload (workload.ts: WAL rotations, flushes, a
 * manifest swap at reopen, compaction installs, scans): the in-memory file system is
 * crash-cloned just before file operation N, keeping 0%, 50% or 100% of the unsynced
 * changes (growing files surviving as a prefix, ext4 data=ordered; names not made durable
 * by a directory sync are lost). Every clone must open, hold every batch acknowledged
 * before the crash and exactly a prefix of history, and pass `verify` (no problem; a torn
 * log tail and leftover files are notes). test/db/flush-crash and compaction-crash do the
 * same for their workloads with concurrent writers; this one adds the scans, the tools
 * check and a single sweep over the full run.
 *
 * The same for a run with flushes and compactions in the worker thread (one retention).
 *
 * Default: every 4th operation (seeded offset) per retention, every 8th in worker mode.
 * KV_STRESS=1: every one. KV_SEED=<seed> replays.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type KvStore, open } from "../../src/index.js";
import { verifyStore } from "../../src/tools/verify.js";
import { assertHoldsPrefix, countOps, describeOp } from "../support/crash-points.js";
import { CrashRun } from "../support/crash-run.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { KEYS, OPTIONS, workload } from "./workload.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const STRIDE = Number(process.env["KV_SWEEP_STRIDE"] ?? (STRESS ? 1 : 4));
const WORKER_STRIDE = STRESS ? 1 : 2 * STRIDE;

/** The sweep of `retention` with flushes and compactions in `mode`. */
async function sweep(
  retention: number,
  mode: "inline" | "worker",
  stride: number,
  t: { diagnostic: (s: string) => void },
): Promise<void> {
  const seed = testSeed();
  // Dry run: the operations, and proof the run covers what the sweep is about.
  const dry = new CrashRun({ seed });
  const clean = await workload(seed, dry, mode);
  assert.equal(clean.error, undefined, String(clean.error));
  const ops = dry.fs.log;
  const logs = countOps(ops, (op) => op.kind === "createWritable" && op.path.endsWith(".log"));
  const tables = countOps(ops, (op) => op.kind === "createWritable" && op.path.endsWith(".sst"));
  const swaps = countOps(ops, (op) => op.kind === "rename" && (op.to ?? "").endsWith("/CURRENT"));
  const removes = countOps(ops, (op) => op.kind === "remove" && op.path.endsWith(".sst"));
  assert.ok(
    logs >= 5 && tables >= 5 && swaps >= 2 && removes >= 2,
    `seed ${seed}: ${logs} logs, ${tables} tables, ${swaps} CURRENT swaps, ${removes} table removals`,
  );

  const offset = randInt(rng(seed + retention * 7), stride);
  const run = new CrashRun({ seed, retention, crashAt: (index) => index % stride === offset });
  const result = await workload(seed, run, mode);
  assert.equal(result.error, undefined, String(result.error));
  // The same seed, the same operations in the same order (whichever thread issues them).
  assert.deepEqual(run.fs.log.map(describeOp), ops.map(describeOp), `seed ${seed}: replay`);
  const byWorker = run.crashes.filter((c) => c.byWorker).length;
  if (mode === "worker") assert.ok(byWorker >= 20, `only ${byWorker} crash points in the worker`);
  else assert.equal(byWorker, 0);
  let notes = 0;
  for (const crash of run.crashes) {
    const where = `seed ${seed} (KV_SEED=${seed}), ${retention * 100}% kept, ${mode}, crash before op #${crash.index} (${describeOp(crash.op)})`;
    // The crashed directory as it is, before open repairs anything: no damage.
    if (await crash.clone.exists("/db/CURRENT")) {
      const report = await verifyStore("/db", { fs: crash.clone });
      assert.deepEqual(report.problems, [], `${where}: verify`);
      notes += report.notes.length;
    }
    let db: KvStore;
    try {
      db = await open("/db", { ...OPTIONS, fs: crash.clone });
    } catch (err) {
      assert.fail(`${where}: does not open: ${String(err)}`);
    }
    try {
      await assertHoldsPrefix(where, db, result.history, crash.durablePrefix, KEYS);
    } finally {
      await db.close();
    }
  }
  t.diagnostic(
    `seed ${seed}: ${ops.length} file operations (${logs} logs, ${tables} tables, ${swaps} CURRENT swaps, ${removes} table removals), ${run.crashes.length} crash points (${byWorker} in the worker), ${result.acked} batches, ${notes} verify notes (${mode})`,
  );
}

describe("power-loss sweep over a whole run", () => {
  for (const retention of [0, 0.5, 1]) {
    test(`a power loss before any file operation, keeping ${retention * 100}% of unsynced data, loses nothing acknowledged`, async (t) => {
      await sweep(retention, "inline", STRIDE, t);
    });
  }
  // Flushes and compactions in the worker thread, on the in-memory file system through the
  // lockstep proxy; one retention, every WORKER_STRIDE-th operation.
  test("worker flushes and compactions: a power loss before any file operation, keeping 50% of unsynced data, loses nothing acknowledged", async (t) => {
    await sweep(0.5, "worker", WORKER_STRIDE, t);
  });
});
