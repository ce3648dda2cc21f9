/** etcd's DeleteRange over a write transaction (apply.go, applierV3backend.DeleteRange). */
import { create } from "@bufbuild/protobuf";
import {
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  DeleteRangeResponseSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { MvccWrite } from "../types.js";
import { header, toPbKeyValue } from "./key-value.js";

/**
 * Deletes the live keys of `req`'s range in `write`. The header's revision is the
 * transaction's next revision if it changed anything so far (this or an earlier op of the
 * same txn), else the store's.
 */
export async function deleteRange(
  write: MvccWrite,
  req: DeleteRangeRequest,
): Promise<DeleteRangeResponse> {
  const gone = await write.deleteRange(req.key, req.rangeEnd);
  return create(DeleteRangeResponseSchema, {
    header: header(write.revision),
    deleted: BigInt(gone.length),
    prevKvs: req.prevKv ? gone.map((kv) => toPbKeyValue(kv)) : [],
  });
}
