/**
 * etcd's Range over a view (apply.go, applierV3backend.Range): limit with `more` and a
 * `count` that ignores the limit and the revision filters, sort, min/max mod and create
 * revision filters, keys_only, count_only, a read at `revision`.
 */
import { create } from "@bufbuild/protobuf";
import {
  RangeRequest_SortOrder as Order,
  type RangeRequest,
  type RangeResponse,
  RangeResponseSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue, MvccView } from "../types.js";
import { header, int64, toPbKeyValue } from "./key-value.js";
import { sortKvs } from "./sort-kvs.js";

/**
 * Runs `req` on `view`. The header's revision is the view's (etcd's: the store's, even
 * for a read at an older revision). Throws KvError COMPACTED or FUTURE_REVISION for such
 * a `revision`.
 */
export async function range(view: MvccView, req: RangeRequest): Promise<RangeResponse> {
  const limit = int64(req.limit);
  const minMod = int64(req.minModRevision);
  const maxMod = int64(req.maxModRevision);
  const minCreate = int64(req.minCreateRevision);
  const maxCreate = int64(req.maxCreateRevision);
  const filtered = minMod !== 0 || maxMod !== 0 || minCreate !== 0 || maxCreate !== 0;
  // Sorting or filtering needs every key; otherwise one beyond the limit tells `more`.
  const fetch = req.sortOrder !== Order.NONE || filtered ? 0 : limit > 0 ? limit + 1 : 0;
  const revision = int64(req.revision);
  const rr = await view.range(req.key, req.rangeEnd, {
    limit: fetch,
    revision: revision > 0 ? revision : 0,
    countOnly: req.countOnly,
  });
  let kvs: KeyValue[] = rr.kvs;
  if (filtered) {
    kvs = kvs.filter(
      (kv) =>
        (maxMod === 0 || kv.modRevision <= maxMod) &&
        (minMod === 0 || kv.modRevision >= minMod) &&
        (maxCreate === 0 || kv.createRevision <= maxCreate) &&
        (minCreate === 0 || kv.createRevision >= minCreate),
    );
  } else {
    kvs = kvs.slice();
  }
  sortKvs(kvs, req.sortOrder, req.sortTarget);
  let more = false;
  if (limit > 0 && kvs.length > limit) {
    kvs.length = limit;
    more = true;
  }
  return create(RangeResponseSchema, {
    header: header(view.revision),
    kvs: kvs.map((kv) => toPbKeyValue(kv, req.keysOnly)),
    more,
    count: BigInt(rr.count),
  });
}
