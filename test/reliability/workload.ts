/**
 * The whole-run workload of the error-injection and power-loss sweeps: open, durable
 * batches (a tiny write buffer: log rotations and flushes), an explicit flush, background
 * and manual compactions (compactRange), full forward and reverse scans checked against
 * the acknowledged writes, close, reopen (a manifest swap), more writes, close.
 */
import assert from "node:assert/strict";
import type { KvStore, OpenOptions } from "../../src/index.js";
import { open } from "../../src/index.js";
import { expectedAfter } from "../support/crash-points.js";
import type { CrashRun } from "../support/crash-run.js";
import { type Batch, batchGenerator, type Model } from "../support/history.js";

export const KEYS = 30;
export const OPTIONS: OpenOptions = {
  writeBufferSize: 2048,
  blockSize: 256,
  l0CompactionTrigger: 2,
  targetFileSize: 2048,
  maxBytesForLevelBase: 4096,
  levelSizeMultiplier: 4,
  compactionMode: "inline",
};

export interface RunResult {
  history: Batch[];
  /** Batches [0, acked) were acknowledged (the writes are sequential and durable). */
  acked: number;
  error: unknown;
  scans: number;
}

async function scanMatches(db: KvStore, model: Model, what: string): Promise<void> {
  const expected = [...model].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`);
  for (const reverse of [false, true]) {
    const rows = (await db.iterator({ reverse }).all()).map(([k, v]) => `${k}=${v}`);
    assert.deepEqual(rows, reverse ? [...expected].reverse() : expected, `${what}: scan`);
  }
}

/**
 * The workload on `run`'s file system, flushes and compactions in `mode`; stops at the
 * first error (returned, not thrown, unless an assertion).
 */
export async function workload(
  seed: number,
  run: CrashRun,
  mode: "inline" | "worker" = "inline",
): Promise<RunResult> {
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 4 });
  const options: OpenOptions = { ...OPTIONS, compactionMode: mode, fs: run.fs };
  let scans = 0;
  let db: KvStore | undefined;
  const write = (n: number) => run.write(db!, next, run.history.length + n);
  const result = (error: unknown): RunResult => ({
    history: run.history,
    acked: run.durable,
    error,
    scans,
  });
  const expected = (): Model => expectedAfter(run.history, run.durable);
  try {
    db = await open("/db", options);
    await write(40);
    await db.flush();
    await write(30);
    await scanMatches(db, expected(), `seed ${seed}`);
    scans++;
    await db.compactRange();
    await write(20);
    await db.close();
    db = await open("/db", options);
    await scanMatches(db, expected(), `seed ${seed} after reopen`);
    scans++;
    await write(20);
    await db.compactRange();
    await db.close();
    db = undefined;
    return result(undefined);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    await db?.close().catch(() => {});
    return result(err);
  }
}
