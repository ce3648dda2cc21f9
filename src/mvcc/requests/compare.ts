/**
 * etcd's txn compares (apply.go, applyCompare): a compare on a range holds iff it holds
 * for every live key of the range; on an empty range it is evaluated against a key of
 * zeros (version, create, mod and lease 0), except that a VALUE compare then fails.
 */
import {
  type Compare,
  Compare_CompareResult as Result,
  Compare_CompareTarget as Target,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue, MvccView } from "../types.js";
import { EMPTY } from "./key-value.js";

const ABSENT: KeyValue = {
  key: EMPTY,
  createRevision: 0,
  modRevision: 0,
  version: 0,
  value: EMPTY,
  lease: 0n,
};

/** True iff every compare holds in `view` (none: true). */
export async function compareAll(view: MvccView, compares: readonly Compare[]): Promise<boolean> {
  for (const c of compares) if (!(await compareOne(view, c))) return false;
  return true;
}

async function compareOne(view: MvccView, c: Compare): Promise<boolean> {
  let kvs: KeyValue[];
  try {
    kvs = (await view.range(c.key, c.rangeEnd)).kvs;
  } catch {
    return false;
  }
  if (kvs.length === 0) return c.target !== Target.VALUE && compareKv(c, ABSENT);
  return kvs.every((kv) => compareKv(c, kv));
}

/**
 * One key against the compare. A target_union of another kind than `target` compares
 * with 0 (or the empty value), as in etcd; a result outside the enum holds.
 */
function compareKv(c: Compare, kv: KeyValue): boolean {
  const u = c.targetUnion;
  let r: number;
  switch (c.target) {
    case Target.VALUE:
      r = Buffer.compare(kv.value, u.case === "value" ? u.value : EMPTY);
      break;
    case Target.CREATE:
      r = cmp(BigInt(kv.createRevision), u.case === "createRevision" ? u.value : 0n);
      break;
    case Target.MOD:
      r = cmp(BigInt(kv.modRevision), u.case === "modRevision" ? u.value : 0n);
      break;
    case Target.VERSION:
      r = cmp(BigInt(kv.version), u.case === "version" ? u.value : 0n);
      break;
    case Target.LEASE:
      r = cmp(kv.lease, u.case === "lease" ? u.value : 0n);
      break;
    default:
      r = 0;
  }
  switch (c.result) {
    case Result.EQUAL:
      return r === 0;
    case Result.NOT_EQUAL:
      return r !== 0;
    case Result.GREATER:
      return r > 0;
    case Result.LESS:
      return r < 0;
    default:
      return true;
  }
}

function cmp(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
