/**
 * etcdserverpb.RangeResponse encoded by hand: a list page carries hundreds of KeyValues,
 * and protobuf-es's reflective toBinary cost more of the server's time per page than
 * reading them from the store.
 *
 * Contract: `encodeRangeResponse(r)` is byte for byte `toBinary(RangeResponseSchema, r)`
 * (fields in number order, proto3 defaults left out; RangeResponse: header = 1, kvs = 2,
 * more = 3, count = 4; mvccpb.KeyValue: key = 1, create_revision = 2, mod_revision = 3,
 * version = 4, value = 5, lease = 6). A response this encoder does not cover (unknown
 * fields, a negative or unsafe int64) is handed to toBinary.
 */
import { toBinary } from "@bufbuild/protobuf";
import {
  type RangeResponse,
  RangeResponseSchema,
  ResponseHeaderSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue } from "../proto/gen/etcd/api/mvccpb/kv_pb.js";
import { putVarint, varintLength } from "../util/coding.js";

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** True iff `v` is encoded here as a plain varint (0 <= v <= 2^53 - 1). */
function plain(v: bigint): boolean {
  return v >= 0n && v <= MAX_SAFE;
}

function covered(r: RangeResponse): boolean {
  if (r.$unknown !== undefined || !plain(r.count)) return false;
  if (r.header !== undefined && r.header.$unknown !== undefined) return false;
  for (const kv of r.kvs) {
    if (kv.$unknown !== undefined) return false;
    if (!plain(kv.createRevision) || !plain(kv.modRevision) || !plain(kv.version)) return false;
    if (!plain(kv.lease)) return false;
  }
  return true;
}

/** Bytes of an int64 field (tag and varint) of value `v`, 0 for the default. */
function int64Field(v: bigint): number {
  return v === 0n ? 0 : 1 + varintLength(Number(v));
}

function keyValueBytes(kv: KeyValue): number {
  let size = 0;
  if (kv.key.length > 0) size += 1 + varintLength(kv.key.length) + kv.key.length;
  size += int64Field(kv.createRevision) + int64Field(kv.modRevision) + int64Field(kv.version);
  if (kv.value.length > 0) size += 1 + varintLength(kv.value.length) + kv.value.length;
  return size + int64Field(kv.lease);
}

function putInt64(out: Uint8Array, at: number, tag: number, v: bigint): number {
  if (v === 0n) return at;
  out[at++] = tag;
  return putVarint(out, at, Number(v));
}

function putBytes(out: Uint8Array, at: number, tag: number, b: Uint8Array): number {
  if (b.length === 0) return at;
  out[at++] = tag;
  at = putVarint(out, at, b.length);
  out.set(b, at);
  return at + b.length;
}

/** `toBinary(RangeResponseSchema, r)` (see the contract above). */
export function encodeRangeResponse(r: RangeResponse): Uint8Array {
  if (!covered(r)) return toBinary(RangeResponseSchema, r);
  const header = r.header === undefined ? undefined : toBinary(ResponseHeaderSchema, r.header);
  let size = header === undefined ? 0 : 1 + varintLength(header.length) + header.length;
  const sizes = new Array<number>(r.kvs.length);
  for (let i = 0; i < r.kvs.length; i++) {
    const n = keyValueBytes(r.kvs[i]!);
    sizes[i] = n;
    size += 1 + varintLength(n) + n;
  }
  if (r.more) size += 2;
  size += int64Field(r.count);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  if (header !== undefined) {
    out[at++] = 0x0a;
    at = putVarint(out, at, header.length);
    out.set(header, at);
    at += header.length;
  }
  for (let i = 0; i < r.kvs.length; i++) {
    const kv = r.kvs[i]!;
    out[at++] = 0x12;
    at = putVarint(out, at, sizes[i]!);
    at = putBytes(out, at, 0x0a, kv.key);
    at = putInt64(out, at, 0x10, kv.createRevision);
    at = putInt64(out, at, 0x18, kv.modRevision);
    at = putInt64(out, at, 0x20, kv.version);
    at = putBytes(out, at, 0x2a, kv.value);
    at = putInt64(out, at, 0x30, kv.lease);
  }
  if (r.more) {
    out[at++] = 0x18;
    out[at++] = 1;
  }
  putInt64(out, at, 0x20, r.count);
  return out;
}
