/**
 * Shared pieces of the crash tests (flush-crash, compaction-crash): which file operations
 * to crash before, how to describe one, the model state after a prefix of history, and
 * the first checks of a crashed store.
 */
import assert from "node:assert/strict";
import { type KvStore, type MemoryFileSystem, type OpenOptions, open } from "../../src/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import {
  applyBatch,
  type Batch,
  diffStates,
  type Model,
  matchingPrefix,
  readState,
} from "./history.js";
import { rng } from "./random.js";

/** A crash before file operation `index` of a run: the clone of the file system then. */
export interface CrashPoint {
  index: number;
  op: FileOp;
  clone: MemoryFileSystem;
  /** Batches [0, durablePrefix) were acknowledged durable (or precede one that was). */
  durablePrefix: number;
  /** The operation was a worker thread's (through the lockstep proxy). */
  byWorker: boolean;
}

/** Operations always worth crashing at: the ones that change names or start files. */
export function isStructural(op: FileOp): boolean {
  return ["createWritable", "rename", "remove", "syncDir", "openWritable", "truncate"].includes(
    op.kind,
  );
}

/**
 * The crash points of a run: every operation when `all` or when there are at most `max`;
 * else a seeded sample of `max`, half of it from the structural operations.
 */
export function chooseCrashPoints(
  seed: number,
  ops: readonly FileOp[],
  max: number,
  all: boolean,
): Set<number> {
  if (all || ops.length <= max) return new Set(ops.keys());
  const chosen = new Set<number>();
  const rest: number[] = [];
  const structural: number[] = [];
  ops.forEach((op, i) => {
    if (isStructural(op)) structural.push(i);
    else rest.push(i);
  });
  const r = rng(seed ^ 0x9e3779b9);
  const shuffle = (a: number[]) => {
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
  };
  shuffle(structural);
  shuffle(rest);
  for (const i of structural) {
    if (chosen.size >= max / 2) break;
    chosen.add(i);
  }
  for (const i of rest) {
    if (chosen.size >= max) break;
    chosen.add(i);
  }
  return chosen;
}

/** `append /db/000010.sst @579 len 124` */
export function describeOp(op: FileOp): string {
  return `${op.kind} ${op.path}${op.to === undefined ? "" : ` -> ${op.to}`}${
    op.offset === undefined ? "" : ` @${op.offset}`
  }${op.length === undefined ? "" : ` len ${op.length}`}`;
}

/** The model after the first n batches of history. */
export function expectedAfter(history: readonly Batch[], n: number): Model {
  const model: Model = new Map();
  for (const b of history.slice(0, n)) applyBatch(model, b);
  return model;
}

export function countOps(ops: readonly FileOp[], pred: (op: FileOp) => boolean): number {
  return ops.filter(pred).length;
}

/**
 * Reads `keys` keys of `db` and fails (naming `where`) unless the state is the model after
 * a prefix of `history` covering the first `durable` batches. Returns the state read.
 */
export async function assertHoldsPrefix(
  where: string,
  db: KvStore,
  history: readonly Batch[],
  durable: number,
  keys: number,
): Promise<Model> {
  const state = await readState((k) => db.get(k), keys);
  if (matchingPrefix(new Map(), history, durable, state) < 0) {
    assert.fail(
      `${where}: the state is no prefix of history covering the ${durable} durable ` +
        `batches\n${diffStates(expectedAfter(history, durable), state)}`,
    );
  }
  return state;
}

/**
 * Opens the crashed store and checks that it holds a prefix of `history` covering every
 * durable batch (reading `keys` keys) and that iteration agrees with get. Returns the open
 * store (the caller closes it) and the state read.
 */
export async function openCrashed(
  where: string,
  crash: Pick<CrashPoint, "clone" | "durablePrefix">,
  options: OpenOptions,
  history: readonly Batch[],
  keys: number,
): Promise<{ db: KvStore; state: Model }> {
  let db: KvStore;
  try {
    db = await open("/db", { ...options, fs: crash.clone });
  } catch (err) {
    assert.fail(`${where}: the crashed store does not open: ${String(err)}`);
  }
  try {
    const state = await assertHoldsPrefix(where, db, history, crash.durablePrefix, keys);
    const scanned = new Map<string, string>();
    for (const [k, v] of await db.iterator().all()) scanned.set(k.toString(), v.toString());
    assert.equal(diffStates(state, scanned), "", `${where}: the iterator disagrees with get`);
    return { db, state };
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
}
