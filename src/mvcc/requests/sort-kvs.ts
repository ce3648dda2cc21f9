/**
 * etcd's Range sort (apply.go: sort order and target). Go's sort.Sort is not stable in
 * general, but for up to 12 elements it is an insertion sort, which is; this sort is
 * stable for any length, so that keys with equal targets stay in key order, ascending or
 * descending. Beyond 12 keys etcd's order of equal targets may differ (docs/etcd.md).
 */
import {
  RangeRequest_SortOrder as Order,
  RangeRequest_SortTarget as Target,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue } from "../types.js";

type Cmp = (a: KeyValue, b: KeyValue) => number;

const BY: Partial<Record<Target, Cmp>> = {
  [Target.KEY]: (a, b) => Buffer.compare(a.key, b.key),
  [Target.VERSION]: (a, b) => a.version - b.version,
  [Target.CREATE]: (a, b) => a.createRevision - b.createRevision,
  [Target.MOD]: (a, b) => a.modRevision - b.modRevision,
  [Target.VALUE]: (a, b) => Buffer.compare(a.value, b.value),
};

/**
 * Sorts `kvs` (in key order) in place as etcd does: a target other than KEY with order
 * NONE sorts ascending; KEY with NONE, or an order or target outside the enums, leaves the
 * key order.
 */
export function sortKvs(kvs: KeyValue[], order: Order, target: Target): void {
  if (target !== Target.KEY && order === Order.NONE) order = Order.ASCEND;
  const by = BY[target];
  if (by === undefined) return;
  if (order === Order.ASCEND) kvs.sort(by);
  else if (order === Order.DESCEND) kvs.sort((a, b) => by(b, a));
}
