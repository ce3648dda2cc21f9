/** etcd's DeleteRange over a write transaction (apply.go, applierV3backend.DeleteRange). */
import { create } from "@bufbuild/protobuf";
import {
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  DeleteRangeResponseSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { MvccWrite } from "../types.js";
import { header, toPbKeyValue } from "./key-value.js";
import { type LeaseLookup, NO_LEASES } from "./leases.js";

/**
 * Deletes the live keys of `req`'s range in `write`. The header's revision is the
 * transaction's next revision if it changed anything so far (this or an earlier op of the
 * same txn), else the store's. `leases` is told of the deleted keys' leases.
 */
export async function deleteRange(
  write: MvccWrite,
  req: DeleteRangeRequest,
  leases: LeaseLookup = NO_LEASES,
): Promise<DeleteRangeResponse> {
  const gone = await write.deleteRange(req.key, req.rangeEnd);
  for (const kv of gone) if (kv.lease !== 0n) leases.detach(kv.lease, kv.key);
  return create(DeleteRangeResponseSchema, {
    header: header(write.revision),
    deleted: BigInt(gone.length),
    prevKvs: req.prevKv ? gone.map((kv) => toPbKeyValue(kv)) : [],
  });
}
