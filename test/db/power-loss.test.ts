/**
 * Simulated power loss: a workload runs on the in-memory file system, which is
 * crash-cloned at a random file operation (keeping all synced data plus 0%, 50% or 100%
 * of the unsynced writes, and forgetting names not made durable by a directory sync).
 * The clone must open, hold every write acknowledged as durable before the crash, and
 * hold exactly a prefix of the history (no holes, no partial batch).
 *
 * KV_STRESS=1 runs many more crash points. A failure prints the seed; KV_SEED=<seed>
 * replays it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FaultInjectingFileSystem, MemoryFileSystem, open } from "../../src/index.js";
import {
  type Batch,
  batchGenerator,
  diffStates,
  matchingPrefix,
  readState,
} from "../support/history.js";
import { randInt, rng, testSeed } from "../support/random.js";

const KEYS = 40;
const BATCHES = 60;
const TRIALS = process.env["KV_STRESS"] ? 400 : 25;

interface CrashPoint {
  clone: MemoryFileSystem;
  /** Batches [0, durablePrefix) were acknowledged as durable (or implied by one that was). */
  durablePrefix: number;
}

/** How the crash treats unsynced appends, and the store's recovery mode. */
interface Variant {
  /** crashClone's appendsSurviveAsPrefix. */
  readonly prefixGrowth: boolean;
  readonly walRecoveryMode: "tolerateTornTail" | "pointInTime";
  /** Small memtables, so that writes span several logs. */
  readonly writeBufferSize?: number;
  /** Share of durable batches. Default 0.7. */
  readonly syncShare?: number;
}

const ORDERED: Variant = { prefixGrowth: true, walRecoveryMode: "tolerateTornTail" };

async function runWorkload(
  seed: number,
  retention: number,
  crashAt: number,
  variant: Variant = ORDERED,
): Promise<{
  history: Batch[];
  crash: CrashPoint;
  midRun: boolean;
  ops: number;
}> {
  const mem = new MemoryFileSystem();
  const history: Batch[] = [];
  let durablePrefix = 0;
  let crash: CrashPoint | undefined;
  const fs = new FaultInjectingFileSystem(mem, {
    onOp: (_op, index) => {
      if (index === crashAt && crash === undefined) {
        crash = {
          clone: mem.crashClone({
            unsyncedRetention: retention,
            seed,
            appendsSurviveAsPrefix: variant.prefixGrowth,
          }),
          durablePrefix,
        };
      }
    },
  });
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 4, syncShare: variant.syncShare ?? 0.7 });
  const db = await open("/db", {
    fs,
    walPreallocateBytes: 0,
    ...(variant.writeBufferSize === undefined ? {} : { writeBufferSize: variant.writeBufferSize }),
  });
  let issued = 0;
  const writer = async () => {
    while (issued < BATCHES) {
      const batch = next();
      issued++;
      history.push(batch);
      const wb = db.batch();
      for (const op of batch.ops) {
        if (op.value === undefined) wb.delete(op.key);
        else wb.put(op.key, op.value);
      }
      await db.write(wb, { sync: batch.sync });
      // Commits are ordered: a durable ack covers every batch before it.
      if (batch.sync) durablePrefix = Math.max(durablePrefix, batch.id + 1);
    }
  };
  await Promise.all([writer(), writer(), writer()]);
  await db.close();
  const midRun = crash !== undefined;
  crash ??= {
    clone: mem.crashClone({
      unsyncedRetention: retention,
      seed,
      appendsSurviveAsPrefix: variant.prefixGrowth,
    }),
    durablePrefix,
  };
  return { history, crash, midRun, ops: fs.opCount };
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
    let db: Awaited<ReturnType<typeof open>>;
    try {
      db = await open("/db", { fs: crash.clone, walRecoveryMode: variant.walRecoveryMode });
    } catch (err) {
      assert.fail(`seed ${seed}: the crashed store does not open: ${String(err)}`);
    }
    const actual = await readState((k) => db.get(k), KEYS);
    const m = matchingPrefix(new Map(), history, crash.durablePrefix, actual);
    if (m < 0) {
      const expected = new Map<string, string>();
      for (const b of history.slice(0, crash.durablePrefix)) {
        for (const op of b.ops) {
          if (op.value === undefined) expected.delete(op.key);
          else expected.set(op.key, op.value);
        }
      }
      assert.fail(
        `seed ${seed} (replay with KV_SEED=${seed}): state is no prefix of history covering ` +
          `the ${crash.durablePrefix} durable batches\n${diffStates(expected, actual)}`,
      );
    }
    // The store keeps working after recovery, and opens again with what it kept.
    await db.put("after", "crash");
    await db.close();
    const again = await open("/db", { fs: crash.clone, walRecoveryMode: variant.walRecoveryMode });
    assert.deepEqual(await readState((k) => again.get(k), KEYS), actual, `seed ${seed}: reopen`);
    assert.equal((await again.get("after"))?.toString(), "crash", `seed ${seed}`);
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

  test("pointInTime: unsynced appends lost out of order (holes), across several logs, still leave a prefix of history", async (t) => {
    await crashTrials(t, 0.5, {
      prefixGrowth: false,
      walRecoveryMode: "pointInTime",
      writeBufferSize: 2048,
      syncShare: 0.05,
    });
  });
});
