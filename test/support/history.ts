/**
 * A history of write batches for crash tests: batches are generated from a seed, applied
 * to a model in commit order, and the state a store holds after a crash is checked to be
 * the model after some prefix of the history that includes every acknowledged durable
 * batch.
 */
import { randInt, rng } from "./random.js";

export interface Op {
  key: string;
  /** undefined for a delete. */
  value: string | undefined;
}

export interface Batch {
  id: number;
  ops: Op[];
  sync: boolean;
}

export type Model = Map<string, string>;

/** Key i of a keyspace of `keys` keys. */
export function keyName(i: number): string {
  return `key${String(i).padStart(4, "0")}`;
}

/** Generates batch after batch; the same seed and start id give the same batches. */
export function batchGenerator(
  seed: number,
  options: { keys: number; maxOps: number; syncShare?: number; firstId?: number },
): () => Batch {
  const r = rng(seed);
  let id = options.firstId ?? 0;
  return () => {
    const n = 1 + randInt(r, options.maxOps);
    const ops: Op[] = [];
    for (let j = 0; j < n; j++) {
      const key = keyName(randInt(r, options.keys));
      const value = r() < 0.2 ? undefined : `${id}.${j}.${"x".repeat(randInt(r, 40))}`;
      ops.push({ key, value });
    }
    const sync = r() < (options.syncShare ?? 1);
    return { id: id++, ops, sync };
  };
}

export function applyBatch(model: Model, batch: Batch): void {
  for (const op of batch.ops) {
    if (op.value === undefined) model.delete(op.key);
    else model.set(op.key, op.value);
  }
}

function sameState(a: Model, b: Model): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

/**
 * Finds m >= minPrefix such that applying history[0..m) to `base` gives `actual`.
 * Returns m, or -1 when no prefix matches (a lost acknowledged write or a hole).
 */
export function matchingPrefix(
  base: Model,
  history: readonly Batch[],
  minPrefix: number,
  actual: Model,
): number {
  const model = new Map(base);
  for (let m = 0; m <= history.length; m++) {
    if (m >= minPrefix && sameState(model, actual)) return m;
    if (m < history.length) applyBatch(model, history[m]!);
  }
  return -1;
}

/** Reads every key of the keyspace from a store into a model. */
export async function readState(
  get: (key: string) => Promise<Uint8Array | undefined>,
  keys: number,
): Promise<Model> {
  const state: Model = new Map();
  for (let i = 0; i < keys; i++) {
    const v = await get(keyName(i));
    if (v !== undefined) state.set(keyName(i), Buffer.from(v).toString("utf8"));
  }
  return state;
}

/** Describes how `actual` differs from `expected`, for failure messages. */
export function diffStates(expected: Model, actual: Model): string {
  const lines: string[] = [];
  for (const [k, v] of expected) {
    if (actual.get(k) !== v) lines.push(`${k}: expected ${v}, got ${actual.get(k)}`);
  }
  for (const [k, v] of actual) if (!expected.has(k)) lines.push(`${k}: unexpected ${v}`);
  return lines.slice(0, 10).join("\n");
}
