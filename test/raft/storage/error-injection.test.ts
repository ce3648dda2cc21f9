/**
 * Error-injection sweep (Pebble errorfs style) over a whole run of the durable Raft log:
 * open, saves (with segment rotations), the application's snapshots, compactions with
 * segment removal, snapshot installs, reopens, close. The run is repeated with file
 * operation #N failing (EIO; a failed fsync also drops the file's unsynced data, as a
 * kernel may) for N = 0, 1, 2, ... until a run passes untouched by the injector.
 *
 * Each run must end in success or in a KvError (IO_ERROR, or READ_ONLY after an earlier
 * failure), never another exception. Afterwards the directory as left, and a power-loss
 * clone of it, must open without reporting damage and hold the state after some
 * operation of the history at least as recent as the last acknowledged durable one.
 * KV_SEED=<seed> replays.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isKvError } from "../../../src/errors.js";
import { RaftLogStorage } from "../../../src/raft/storage/index.js";
import { FaultInjectingFileSystem } from "../../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { describeOp } from "../../support/crash-points.js";
import { rng, testSeed } from "../../support/random.js";
import { applyToStorage, LogModel, nextOp, syncs, viewOf } from "./log-model.js";

const DIR = "/raft";
const OPS = 40;
const OPTIONS = { segmentBytes: 1024 };
const SEEDS = process.env["KV_STRESS"] !== undefined ? 5 : 1;

interface Run {
  error: unknown;
  history: string[];
  acked: number;
  started: number;
}

async function workload(seed: number, fs: FaultInjectingFileSystem): Promise<Run> {
  const r = rng(seed);
  const model = new LogModel();
  const history = [JSON.stringify(model.view())];
  let acked = 0;
  let started = 0;
  let st: RaftLogStorage | undefined;
  try {
    st = await RaftLogStorage.open(fs, DIR, OPTIONS);
    for (let i = 0; i < OPS; i++) {
      const op = nextOp(model, r, { maxData: 200, unsyncedShare: 0.2, reopenShare: 0.1 });
      if (op.kind === "reopen") {
        const closing = st;
        st = undefined;
        await closing.close();
        acked = history.length - 1;
        st = await RaftLogStorage.open(fs, DIR, OPTIONS);
        continue;
      }
      model.apply(op);
      history.push(JSON.stringify(model.view()));
      started = history.length - 1;
      await applyToStorage(st, op);
      if (syncs(op)) acked = started;
    }
    const closing = st;
    st = undefined;
    await closing.close();
    acked = history.length - 1;
    return { error: undefined, history, acked, started };
  } catch (error) {
    await st?.close().catch(() => {});
    return { error, history, acked, started };
  }
}

async function checkOne(
  seed: number,
  n: number,
): Promise<{ failed: boolean; ops: number; what: string }> {
  const mem = new MemoryFileSystem();
  const fs = new FaultInjectingFileSystem(mem, {
    injector: FaultInjectingFileSystem.failNth(n),
    dropUnsyncedOnSyncFailure: true,
    keepLog: true,
  });
  const run = await workload(seed, fs);
  const failedOp = fs.log[n];
  const where = `seed ${seed} (KV_SEED=${seed}), failing op #${n}${failedOp === undefined ? "" : ` (${describeOp(failedOp)})`}`;
  if (run.error !== undefined) {
    assert.ok(isKvError(run.error), `${where}: ended with a non-KvError: ${String(run.error)}`);
  }
  for (const [name, target] of [
    ["as left", mem],
    ["after a power loss", mem.crashClone({ unsyncedRetention: 0, seed })],
  ] as const) {
    let st: RaftLogStorage;
    try {
      st = await RaftLogStorage.open(target, DIR, OPTIONS);
    } catch (err) {
      assert.fail(
        `${where}: the log ${name} does not open: ${String(err)} (run: ${String(run.error)})`,
      );
    }
    try {
      assert.equal(st.recovery.damage, undefined, `${where}: ${name}: damage reported`);
      const got = JSON.stringify(viewOf(st));
      const at = run.history.indexOf(got, run.acked);
      assert.ok(
        at >= run.acked && at <= run.started,
        `${where}: ${name}: the log is not the state after operation ${run.acked}..${run.started} (found at ${run.history.indexOf(got)}; run: ${String(run.error)})`,
      );
    } finally {
      await st.close();
    }
  }
  return {
    failed: run.error !== undefined,
    ops: fs.opCount,
    what: failedOp === undefined ? "" : describeOp(failedOp),
  };
}

test("failing each file operation of an open/save/snapshot/compact/reopen/close run loses nothing acknowledged", async (t) => {
  const base = testSeed();
  let runs = 0;
  let failedRuns = 0;
  for (let s = 0; s < SEEDS; s++) {
    const seed = base + s;
    for (let n = 0; ; n++) {
      const run = await checkOne(seed, n);
      runs++;
      if (run.failed) failedRuns++;
      else if (process.env["KV_DEBUG"]) t.diagnostic(`no error at ${n}: ${run.what}`);
      if (!run.failed && run.ops <= n) break;
      assert.ok(n < 5000, "the run never ends");
    }
  }
  t.diagnostic(`${runs} runs, ${failedRuns} ended in an error, seed ${base}`);
  assert.ok(failedRuns > runs / 2, "most runs must hit their injected fault");
});
