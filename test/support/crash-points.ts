/**
 * Shared pieces of the crash tests (flush-crash, compaction-crash): which file operations
 * to crash before, how to describe one, and the model state after a prefix of history.
 */
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import { applyBatch, type Batch, type Model } from "./history.js";
import { rng } from "./random.js";

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
