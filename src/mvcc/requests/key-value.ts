/**
 * Conversions between the store's values (src/mvcc/types.ts: revisions as numbers) and
 * etcd's messages (int64 fields as bigint), and etcd's range-end convention.
 */
import { create } from "@bufbuild/protobuf";
import {
  type ResponseHeader,
  ResponseHeaderSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue as PbKeyValue } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { KeyValue } from "../types.js";

/**
 * `kv` as etcd's mvccpb.KeyValue; `keysOnly` leaves the value empty. The message as
 * `create(KeyValueSchema, ...)` makes it (every field set), written out: a list page makes
 * hundreds, and create's generic initialisation cost more than the rest of the page.
 */
export function toPbKeyValue(kv: KeyValue, keysOnly = false): PbKeyValue {
  return {
    $typeName: "mvccpb.KeyValue",
    key: kv.key,
    createRevision: BigInt(kv.createRevision),
    modRevision: BigInt(kv.modRevision),
    version: BigInt(kv.version),
    value: keysOnly ? EMPTY : kv.value,
    lease: kv.lease,
  };
}

/** A response header with `revision` only (the caller fills in the ids and term). */
export function header(revision: number): ResponseHeader {
  return create(ResponseHeaderSchema, { revision: BigInt(revision) });
}

/** An int64 request field as a number (saturated: no revision or count comes near 2^53). */
export function int64(v: bigint): number {
  if (v > MAX) return Number.MAX_SAFE_INTEGER;
  if (v < -MAX) return -Number.MAX_SAFE_INTEGER;
  return Number(v);
}

const MAX = BigInt(Number.MAX_SAFE_INTEGER);
export const EMPTY = new Uint8Array(0);
