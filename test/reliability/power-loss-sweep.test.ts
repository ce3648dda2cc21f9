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
 * Default: every 2nd operation (seeded offset) per retention. KV_STRESS=1: every one.
 * KV_SEED=<seed> replays.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FaultInjectingFileSystem, type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { verifyStore } from "../../src/tools/verify.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import { countOps, describeOp, expectedAfter } from "../support/crash-points.js";
import { diffStates, matchingPrefix, readState } from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { KEYS, OPTIONS, workload } from "./workload.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const STRIDE = Number(process.env["KV_SWEEP_STRIDE"] ?? (STRESS ? 1 : 2));

interface Crash {
  index: number;
  op: FileOp;
  clone: MemoryFileSystem;
  acked: number;
}

describe("power-loss sweep over a whole run", () => {
  for (const retention of [0, 0.5, 1]) {
    test(`a power loss before any file operation, keeping ${retention * 100}% of unsynced data, loses nothing acknowledged`, async (t) => {
      const seed = testSeed();
      // Dry run: the operations, and proof the run covers what the sweep is about.
      const dry = new FaultInjectingFileSystem(new MemoryFileSystem(), { keepLog: true });
      const clean = await workload(seed, dry, { acked: 0 });
      assert.equal(clean.error, undefined, String(clean.error));
      const logs = countOps(
        dry.log,
        (op) => op.kind === "createWritable" && op.path.endsWith(".log"),
      );
      const tables = countOps(
        dry.log,
        (op) => op.kind === "createWritable" && op.path.endsWith(".sst"),
      );
      const swaps = countOps(
        dry.log,
        (op) => op.kind === "rename" && (op.to ?? "").endsWith("/CURRENT"),
      );
      const removes = countOps(dry.log, (op) => op.kind === "remove" && op.path.endsWith(".sst"));
      assert.ok(
        logs >= 5 && tables >= 5 && swaps >= 2 && removes >= 2,
        `seed ${seed}: ${logs} logs, ${tables} tables, ${swaps} CURRENT swaps, ${removes} table removals`,
      );

      const offset = randInt(rng(seed + retention * 7), STRIDE);
      const mem = new MemoryFileSystem();
      const progress = { acked: 0 };
      const crashes: Crash[] = [];
      const fs = new FaultInjectingFileSystem(mem, {
        keepLog: true,
        onOp: (op, index) => {
          if (index % STRIDE !== offset) return;
          crashes.push({
            index,
            op,
            clone: mem.crashClone({
              unsyncedRetention: retention,
              seed: seed + index,
              appendsSurviveAsPrefix: true,
            }),
            acked: progress.acked,
          });
        },
      });
      const run = await workload(seed, fs, progress);
      assert.equal(run.error, undefined, String(run.error));
      let notes = 0;
      for (const crash of crashes) {
        const where = `seed ${seed} (KV_SEED=${seed}), ${retention * 100}% kept, crash before op #${crash.index} (${describeOp(crash.op)})`;
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
          const actual = await readState((k) => db.get(k), KEYS);
          const m = matchingPrefix(new Map(), run.history, crash.acked, actual);
          if (m < 0) {
            assert.fail(
              `${where}: no prefix of history covering the ${crash.acked} acknowledged batches\n${diffStates(expectedAfter(run.history, crash.acked), actual)}`,
            );
          }
        } finally {
          await db.close();
        }
      }
      t.diagnostic(
        `seed ${seed}: ${dry.opCount} file operations (${logs} logs, ${tables} tables, ${swaps} CURRENT swaps, ${removes} table removals), ${crashes.length} crash points, ${run.acked} batches, ${notes} verify notes`,
      );
    });
  }
});
