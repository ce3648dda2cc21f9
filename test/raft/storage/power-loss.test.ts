/**
 * Simulated power loss on the durable Raft log: a seeded workload (appends, overwrites of
 * the uncommitted suffix, hard-state changes, snapshot installs, the application's
 * snapshots, compactions with segment removal, reopens, some unsynced saves) runs on the
 * in-memory file system, which is crash-cloned before chosen file operations, keeping 0%,
 * 50% or 100% of the unsynced changes (torn at sector boundaries at 50%), with and without
 * preallocation. Every clone must open without reporting damage (a crash damages only
 * unsynced data), hold exactly the state after some operation of the history (a prefix:
 * never a later write without an earlier one, never half a save), at least as recent as
 * the last operation that was durable when the power went, and take writes again.
 *
 * Default: 2 seeds x 3 retentions x 2 preallocation settings, 50 sampled crash points
 * each. KV_STRESS=1: 6 seeds, every file operation. KV_SEED=<seed> replays.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RaftLogStorage, type RaftLogStorageOptions } from "../../../src/raft/storage/index.js";
import {
  FaultInjectingFileSystem,
  type FileOp,
} from "../../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { chooseCrashPoints, describeOp } from "../../support/crash-points.js";
import { rng, testSeed } from "../../support/random.js";
import { applyToStorage, LogModel, type LogView, nextOp, syncs, viewOf } from "./log-model.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const SEEDS = STRESS ? 6 : 2;
const CRASH_POINTS = 50;
const OPS = 70;
const DIR = "/raft";

interface Crash {
  index: number;
  what: string;
  clone: MemoryFileSystem;
  /** history[durable] and everything before it was durable when the power went. */
  durable: number;
  /** The latest history state a write had been started for. */
  started: number;
}

const key = (v: LogView): string => JSON.stringify(v);

/** Runs the workload of `seed`, crash-cloning before the file operations in `points`. */
async function run(
  seed: number,
  retention: number,
  options: RaftLogStorageOptions,
  points: Set<number> | "all",
): Promise<{ history: string[]; crashes: Crash[]; ops: readonly FileOp[] }> {
  const mem = new MemoryFileSystem();
  const history: string[] = [];
  const crashes: Crash[] = [];
  let durable = 0;
  let started = 0;
  const fs = new FaultInjectingFileSystem(mem, {
    keepLog: true,
    onOp: (op, index) => {
      if (points !== "all" && !points.has(index)) return;
      crashes.push({
        index,
        what: describeOp(op),
        clone: mem.crashClone({
          unsyncedRetention: retention,
          seed: seed + index,
          appendsSurviveAsPrefix: (seed & 1) === 1,
        }),
        durable,
        started,
      });
    },
  });
  const r = rng(seed);
  const model = new LogModel();
  history.push(key(model.view()));
  let st = await RaftLogStorage.open(fs, DIR, options);
  for (let i = 0; i < OPS; i++) {
    const op = nextOp(model, r, { maxData: 400, unsyncedShare: 0.25, reopenShare: 0.08 });
    if (op.kind === "reopen") {
      await st.close();
      durable = history.length - 1; // close syncs everything
      st = await RaftLogStorage.open(fs, DIR, options);
      continue;
    }
    model.apply(op);
    history.push(key(model.view()));
    started = history.length - 1;
    await applyToStorage(st, op);
    if (syncs(op)) durable = started;
  }
  await st.close();
  return { history, crashes, ops: fs.log };
}

async function checkCrash(
  seed: number,
  retention: number,
  options: RaftLogStorageOptions,
  history: string[],
  crash: Crash,
  writeAfter: boolean,
): Promise<void> {
  const where = `seed ${seed} (KV_SEED=${seed}), retention ${retention}, preallocate ${options.preallocateBytes}, crash before op #${crash.index} (${crash.what})`;
  let st: RaftLogStorage;
  try {
    st = await RaftLogStorage.open(crash.clone, DIR, options);
  } catch (err) {
    assert.fail(`${where}: the crashed log does not open: ${String(err)}`);
  }
  try {
    assert.equal(st.recovery.damage, undefined, `${where}: a crash was reported as damage`);
    assert.equal(st.initialState().repair, undefined, `${where}: repair after a crash`);
    const got = key(viewOf(st));
    const at = history.indexOf(got, crash.durable);
    assert.ok(
      at >= crash.durable && at <= crash.started,
      `${where}: the recovered log is not the state after operation ${crash.durable}..${crash.started} of the history (found at ${history.indexOf(got)})\n${got}\nexpected at least\n${history[crash.durable]}`,
    );
    if (writeAfter) {
      const last = st.lastIndex();
      const hs = st.initialState().hardState;
      await st.save({
        entries: [
          {
            index: last + 1,
            term: Math.max(hs.term, st.term(last)),
            type: "normal",
            data: new Uint8Array([1]),
          },
        ],
        hardState: { ...hs, term: Math.max(hs.term, st.term(last)) },
      });
      await st.close();
      st = await RaftLogStorage.open(
        crash.clone.crashClone({ unsyncedRetention: 0 }),
        DIR,
        options,
      );
      assert.equal(st.lastIndex(), last + 1, `${where}: a write after recovery is lost`);
      assert.equal(
        st.recovery.damage,
        undefined,
        `${where}: damage after writing on a recovered log`,
      );
    }
  } finally {
    await st.close();
  }
}

describe("raft log power loss", () => {
  for (const retention of [0, 0.5, 1]) {
    for (const preallocateBytes of [0, 2048]) {
      test(`power loss keeping ${retention * 100}% of unsynced changes, preallocation ${preallocateBytes}: a prefix with every durable write`, async (t) => {
        const base = testSeed();
        const options = { segmentBytes: 4096, preallocateBytes };
        let checked = 0;
        let distinct = 0;
        for (let s = 0; s < SEEDS; s++) {
          const seed = base + s;
          const dry = await run(seed, retention, options, new Set());
          const points = STRESS ? "all" : chooseCrashPoints(seed, dry.ops, CRASH_POINTS, false);
          const { history, crashes } = await run(seed, retention, options, points);
          assert.ok(crashes.length > 0);
          const seen = new Set<string>();
          for (const [i, crash] of crashes.entries()) {
            await checkCrash(seed, retention, options, history, crash, i % 4 === 0);
            seen.add(`${crash.durable}`);
            checked++;
          }
          distinct += seen.size;
        }
        t.diagnostic(
          `${checked} crash points checked, ${distinct} distinct durable prefixes, seed ${base}`,
        );
      });
    }
  }
});
