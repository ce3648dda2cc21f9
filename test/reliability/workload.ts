/**
 * The whole-run workload of the error-injection and power-loss sweeps: open, durable
 * batches (a tiny write buffer: log rotations and flushes), an explicit flush, background
 * and manual compactions (compactRange), full forward and reverse scans checked against
 * the acknowledged writes, close, reopen (a manifest swap), more writes, close.
 */
import assert from "node:assert/strict";
import type { FileSystem, KvStore, OpenOptions } from "../../src/index.js";
import { open } from "../../src/index.js";
import { applyBatch, type Batch, batchGenerator, type Model } from "../support/history.js";

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
  /** Batches [0, acked) were acknowledged (writes are sequential). */
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

/** The workload; stops at the first error (returned, not thrown, unless an assertion). */
export async function workload(
  seed: number,
  fs: FileSystem,
  progress: { acked: number },
): Promise<RunResult> {
  const next = batchGenerator(seed, { keys: KEYS, maxOps: 4 });
  const history: Batch[] = [];
  const model: Model = new Map();
  let acked = 0;
  let scans = 0;
  let db: KvStore | undefined;
  const write = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const b = next();
      history.push(b);
      const wb = db!.batch();
      for (const op of b.ops) op.value === undefined ? wb.delete(op.key) : wb.put(op.key, op.value);
      await db!.write(wb);
      applyBatch(model, b);
      acked++;
      progress.acked = acked;
    }
  };
  try {
    db = await open("/db", { ...OPTIONS, fs });
    await write(40);
    await db.flush();
    await write(30);
    await scanMatches(db, model, `seed ${seed}`);
    scans++;
    await db.compactRange();
    await write(20);
    await db.close();
    db = await open("/db", { ...OPTIONS, fs });
    await scanMatches(db, model, `seed ${seed} after reopen`);
    scans++;
    await write(20);
    await db.compactRange();
    await db.close();
    db = undefined;
    return { history, acked, error: undefined, scans };
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    await db?.close().catch(() => {});
    return { history, acked, error: err, scans };
  }
}
