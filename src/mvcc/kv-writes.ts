/**
 * kv.v1's writes as multi-version write transactions (a kv.v1 put is a revisioned put):
 * a batch of puts and deletes, and a compare-and-swap on a key's latest value. Shared by
 * the cluster's apply path (src/replication/applier.ts) and the single node's backend
 * (mvcc-kv-backend.ts), so both give the same revisions.
 */
import { decodeBatch } from "../batch/write-batch.js";
import type { CasResult } from "../db/kv-backend.js";
import { KIND_PUT } from "../key/internal-key.js";
import type { MvccWrite } from "./types.js";

const EMPTY = new Uint8Array(0);

/** True iff `a` and `b` are the same value (undefined: absent). */
export function sameValue(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.compare(a, b) === 0;
}

/**
 * Puts and deletes the keys of encoded WriteBatch `batch` in `w` (a key written more than
 * once: its last operation only, as the batch would leave it). Puts carry no lease.
 */
export async function putAll(w: MvccWrite, batch: Uint8Array): Promise<undefined> {
  const ops: Array<[number, Uint8Array, Uint8Array]> = [];
  decodeBatch(batch, (_seq, kind, k, v) => {
    ops.push([kind, k, v]);
  });
  let last: Map<string, number> | undefined;
  if (ops.length > 1) {
    last = new Map();
    for (let i = 0; i < ops.length; i++) last.set(Buffer.from(ops[i]![1]).toString("latin1"), i);
  }
  for (let i = 0; i < ops.length; i++) {
    const [kind, k, v] = ops[i]!;
    if (last !== undefined && last.get(Buffer.from(k).toString("latin1")) !== i) continue;
    if (kind === KIND_PUT) await w.put(k, v, 0n);
    else await w.deleteRange(k, EMPTY);
  }
  return undefined;
}

/** A compare-and-swap in `w`: `next` (undefined: delete) iff `key`'s value is `expected`. */
export async function casIn(
  w: MvccWrite,
  key: Uint8Array,
  expected: Uint8Array | undefined,
  next: Uint8Array | undefined,
): Promise<CasResult> {
  const current = (await w.range(key, EMPTY)).kvs[0]?.value;
  if (!sameValue(current, expected)) return { applied: false, current };
  if (next === undefined) await w.deleteRange(key, EMPTY);
  else await w.put(key, next, 0n);
  return { applied: true, current: next === undefined ? undefined : Buffer.from(next) };
}
