/**
 * etcd's Put over a write transaction (apply.go, applierV3backend.Put): prev_kv,
 * ignore_value and ignore_lease (which need the key to exist), the lease check.
 */
import { create } from "@bufbuild/protobuf";
import {
  type PutRequest,
  type PutResponse,
  PutResponseSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { MvccWrite } from "../types.js";
import { EMPTY, header, toPbKeyValue } from "./key-value.js";
import type { LeaseLookup } from "./leases.js";
import { RequestError } from "./request-error.js";

/**
 * Checks what a put needs of the store before anything is written: its lease exists.
 * Throws RequestError LEASE_NOT_FOUND.
 */
export function checkPutLease(req: PutRequest, leases: LeaseLookup): void {
  if (req.lease !== 0n && !leases.exists(req.lease)) throw new RequestError("LEASE_NOT_FOUND");
}

/**
 * Puts `req` in `write`, telling `leases` the key's lease change. Throws RequestError LEASE_NOT_FOUND, or KEY_NOT_FOUND
 * (ignore_value or ignore_lease on an absent key), writing nothing.
 */
export async function put(
  write: MvccWrite,
  req: PutRequest,
  leases: LeaseLookup,
): Promise<PutResponse> {
  checkPutLease(req, leases);
  let value = req.value;
  let lease = req.lease;
  const resp = create(PutResponseSchema);
  if (req.ignoreValue || req.ignoreLease) {
    const prev = (await write.range(req.key, EMPTY)).kvs[0];
    if (prev === undefined) throw new RequestError("KEY_NOT_FOUND");
    if (req.ignoreValue) value = prev.value;
    if (req.ignoreLease) lease = prev.lease;
  }
  const prev = await write.put(req.key, value, lease);
  if (prev !== undefined && prev.lease !== 0n && prev.lease !== lease)
    leases.detach(prev.lease, req.key);
  if (lease !== 0n) leases.attach(lease, req.key);
  if (req.prevKv && prev !== undefined) resp.prevKv = toPbKeyValue(prev);
  resp.header = header(write.revision);
  return resp;
}
