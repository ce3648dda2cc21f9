/**
 * etcd 3.4's duplicate-key rule for txns (v3rpc/key.go, checkIntervals): within the ops of
 * one branch, a key may not be put twice, nor put where a delete of the same branch (or of
 * a nested txn, either branch) reaches; a nested txn's success and failure branches may
 * put the same key, since only one runs. Deletes may overlap each other.
 *
 * A delete's range is its bytes as given: [key, range_end), or the key alone when
 * range_end is empty. A range end of "\0" (every key >= key, elsewhere) is taken
 * literally here, as etcd's interval tree takes it, so such a delete conflicts with no
 * put (docs/etcd.md).
 */
import type { RequestOp } from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { RequestError } from "./request-error.js";

type Interval = readonly [Uint8Array, Uint8Array];

function latin1(k: Uint8Array): string {
  return Buffer.from(k.buffer, k.byteOffset, k.byteLength).toString("latin1");
}

function hits(dels: readonly Interval[], k: Uint8Array): boolean {
  return dels.some(([b, e]) => Buffer.compare(b, k) <= 0 && Buffer.compare(k, e) < 0);
}

/**
 * Throws RequestError DUPLICATE_KEY if `ops` break the rule; otherwise returns the keys
 * they put and the ranges they delete (for the enclosing branch's check).
 */
export function checkIntervals(ops: readonly RequestOp[]): {
  puts: Set<string>;
  dels: Interval[];
} {
  const dels: Interval[] = [];
  for (const op of ops) {
    if (op.request.case !== "requestDeleteRange") continue;
    const d = op.request.value;
    dels.push([d.key, d.rangeEnd.length !== 0 ? d.rangeEnd : pointEnd(d.key)]);
  }
  const puts = new Set<string>();
  for (const op of ops) {
    if (op.request.case !== "requestTxn") continue;
    const then = checkIntervals(op.request.value.success);
    const otherwise = checkIntervals(op.request.value.failure);
    for (const k of then.puts) {
      if (puts.has(k) || hits(dels, Buffer.from(k, "latin1")))
        throw new RequestError("DUPLICATE_KEY");
      puts.add(k);
    }
    for (const k of otherwise.puts) {
      if (puts.has(k) && !then.puts.has(k)) throw new RequestError("DUPLICATE_KEY");
      if (hits(dels, Buffer.from(k, "latin1"))) throw new RequestError("DUPLICATE_KEY");
      puts.add(k);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of ops) {
    if (op.request.case !== "requestPut") continue;
    const key = op.request.value.key;
    const k = latin1(key);
    if (puts.has(k) || hits(dels, key)) throw new RequestError("DUPLICATE_KEY");
    puts.add(k);
  }
  return { puts, dels };
}

/** The end of the one-key interval [k, k + "\0"). */
function pointEnd(k: Uint8Array): Uint8Array {
  const e = new Uint8Array(k.length + 1);
  e.set(k);
  return e;
}
