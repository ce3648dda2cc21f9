/**
 * Simulated power loss: a workload runs on the in-memory file system, which is
 * crash-cloned at a random file operation (keeping all synced data plus 0%, 50% or 100%
 * of the unsynced writes, and forgetting names not made durable by a directory sync).
 * With preallocated logs (the default) unsynced writes are overwrites of zeros and are
 * kept or lost each on its own, so holes appear before surviving records.
 * The clone must open, hold every write acknowledged as durable before the crash, and
 * hold exactly a prefix of the history (no holes, no partial batch).
 *
 * KV_STRESS=1 runs many more crash points. A failure prints the seed; KV_SEED=<seed>
 * replays it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type MemoryFileSystem, open } from "../../src/index.js";
import { openCrashed } from "../support/crash-points.js";
import { CrashRun } from "../support/crash-run.js";
import { type Batch, batchGenerator, readState } from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";

const KEYS = 40;
const BATCHES = 60;
const TRIALS = process.env["KV_STRESS"] ? 400 : 25;

/** How the crash treats unsynced appends, and the store's recovery mode. */
interface Variant {
  /** crashClone's appendsSurviveAsPrefix. */
  readonly prefixGrowth: boolean;
  readonly walRecoveryMode: "tolerateTornTail" | "pointInTime";
  /** Small memtables, so that writes span several logs. */
  readonly writeBufferSize?: number;
  /** Share of durable batches. Default 0.7. */
  readonly syncShare?: number;
  /**
   * Keep the default walPreallocateBytes (1 MiB): unsynced records overwrite preallocated
   * zeros. Default false (walPreallocateBytes 0).
   */
  readonly preallocate?: boolean;
}

const ORDERED: Variant = { prefixGrowth: true, walRecoveryMode: "tolerateTornTail" };

async function runWorkload(
  seed: number,
  retention: number,
  crashAt: number,
  variant: Variant,
): Promise<{
  history: Batch[];
  crash: { clone: MemoryFileSystem; durablePrefix: number };
  midRun: boolean;
  ops: number;
}> {
  const run = new CrashRun({
    seed,
    retention,
    cloneSeed: () => seed,
    appendsSurviveAsPrefix: variant.prefixGrowth,
    crashAt: (index) => index === crashAt && run.crashes.length === 0,
  });
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 4, syncShare: variant.syncShare ?? 0.7 });
  const db = await open("/db", {
    fs: run.fs,
    ...(variant.preallocate === true ? {} : { walPreallocateBytes: 0 }),
    ...(variant.writeBufferSize === undefined ? {} : { writeBufferSize: variant.writeBufferSize }),
  });
  await run.write(db, next, BATCHES, 3);
  await db.close();
  run.closed();
  const crashed = run.crashes[0];
  const crash =
    crashed === undefined
      ? { clone: run.clone(seed), durablePrefix: run.durable }
      : { clone: crashed.clone, durablePrefix: crashed.durablePrefix };
  return { history: run.history, crash, midRun: crashed !== undefined, ops: run.fs.opCount };
}

async function crashTrials(
  t: { diagnostic(message: string): void },
  retention: number,
  variant: Variant,
): Promise<void> {
  const base = testSeed();
  let midRun = 0;
  let durable = 0;
  for (let trial = 0; trial < TRIALS; trial++) {
    const seed = base + trial;
    // A dry run counts the file operations; the same seed replays the same run, which
    // then crashes at a random one of them.
    const { ops } = await runWorkload(seed, retention, -1, variant);
    const crashAt = randInt(rng(seed), ops);
    const {
      history,
      crash,
      midRun: crashedMidRun,
    } = await runWorkload(seed, retention, crashAt, variant);
    if (crashedMidRun) midRun++;
    durable += crash.durablePrefix;
    const where = `seed ${seed} (replay with KV_SEED=${seed}), crash before op #${crashAt}`;
    const recovery = { walRecoveryMode: variant.walRecoveryMode } as const;
    const { db, state } = await openCrashed(where, crash, recovery, history, KEYS);
    // The store keeps working after recovery, and opens again with what it kept.
    await db.put("after", "crash");
    await db.close();
    const again = await open("/db", { fs: crash.clone, ...recovery });
    assert.deepEqual(await readState((k) => again.get(k), KEYS), state, `${where}: reopen`);
    assert.equal((await again.get("after"))?.toString(), "crash", where);
    await again.close();
  }
  t.diagnostic(`${TRIALS} crashes (${midRun} mid-run), ${durable} durable batches checked`);
  assert.ok(midRun > TRIALS / 2, "most crash points must fall inside the run");
}

describe("power loss (crash-cloned in-memory file system)", () => {
  for (const retention of [0, 0.5, 1]) {
    test(`after a crash with ${retention * 100}% of unsynced data kept, the store holds every durable write and a prefix of history`, async (t) => {
      await crashTrials(t, retention, ORDERED);
    });
  }

  for (const retention of [0.5, 0.9]) {
    test(`preallocated logs (the default), unsynced writes lost out of order (holes) with ${retention * 100}% kept: tolerateTornTail opens with every durable write and a prefix of history`, async (t) => {
      await crashTrials(t, retention, {
        prefixGrowth: false,
        walRecoveryMode: "tolerateTornTail",
        preallocate: true,
        syncShare: 0.3,
      });
    });
  }

  test("preallocated logs, holes, across several logs: tolerateTornTail still leaves a prefix of history", async (t) => {
    await crashTrials(t, 0.5, {
      prefixGrowth: false,
      walRecoveryMode: "tolerateTornTail",
      preallocate: true,
      writeBufferSize: 2048,
      syncShare: 0.1,
    });
  });

  test("pointInTime: unsynced appends lost out of order (holes), across several logs, still leave a prefix of history", async (t) => {
    await crashTrials(t, 0.5, {
      prefixGrowth: false,
      walRecoveryMode: "pointInTime",
      writeBufferSize: 2048,
      syncShare: 0.05,
    });
  });
});
