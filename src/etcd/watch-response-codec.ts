/**
 * The event responses of a Watch stream encoded from events already encoded, so that an
 * event sent to a thousand watchers is encoded once (watch-events.ts keeps its bytes), not
 * once per watcher by toBinary.
 *
 * Contracts (byte for byte what protobuf-es's toBinary writes: fields in number order,
 * proto3 defaults left out, int64s as two's complement varints):
 * - `encodeEventsResponse(header, watchId, events, fragment)`: toBinary(WatchResponseSchema,
 *   r) for r = { header, watchId, fragment, events } with `events` decoded
 *   (etcdserverpb.WatchResponse: header = 1, watch_id = 2, fragment = 7, events = 11).
 * - `encodeEvent(type, kv, prev)`: toBinary(EventSchema, e) for the mvccpb.Event of the
 *   change (type = 1, kv = 2, prev_kv = 3; KeyValue: key = 1, create_revision = 2,
 *   mod_revision = 3, version = 4, value = 5, lease = 6), as toPbKeyValue makes them.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import type { KeyValue } from "../mvcc/types.js";
import { ResponseHeaderSchema } from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { putVarint, varintLength } from "../util/coding.js";
import type { EtcdHeaderIds } from "./etcd-backend.js";

const TAG_HEADER = 0x0a; // field 1, length-delimited
const TAG_WATCH_ID = 0x10; // field 2, varint
const TAG_FRAGMENT = 0x38; // field 7, varint
const TAG_EVENT = 0x5a; // field 11, length-delimited

/** The encoded mvccpb.Event of a change (see the contract above); `prev`: its prev_kv. */
export function encodeEvent(
  type: "put" | "delete",
  kv: KeyValue,
  prev: KeyValue | undefined,
): Uint8Array {
  const kvBytes = keyValueBytes(kv);
  const prevBytes = prev === undefined ? 0 : keyValueBytes(prev);
  let size = (type === "delete" ? 2 : 0) + 1 + varintLength(kvBytes) + kvBytes;
  if (prev !== undefined) size += 1 + varintLength(prevBytes) + prevBytes;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  if (type === "delete") {
    out[at++] = 0x08; // type = DELETE (1); PUT (0) is the default
    out[at++] = 1;
  }
  out[at++] = 0x12;
  at = putVarint(out, at, kvBytes);
  at = putKeyValue(out, at, kv);
  if (prev !== undefined) {
    out[at++] = 0x1a;
    at = putVarint(out, at, prevBytes);
    at = putKeyValue(out, at, prev);
  }
  return out;
}

function keyValueBytes(kv: KeyValue): number {
  let size = 0;
  if (kv.key.length > 0) size += 1 + varintLength(kv.key.length) + kv.key.length;
  if (kv.createRevision !== 0) size += 1 + varintLength(kv.createRevision);
  if (kv.modRevision !== 0) size += 1 + varintLength(kv.modRevision);
  if (kv.version !== 0) size += 1 + varintLength(kv.version);
  if (kv.value.length > 0) size += 1 + varintLength(kv.value.length) + kv.value.length;
  if (kv.lease !== 0n) size += 1 + int64VarintLength(kv.lease);
  return size;
}

function putKeyValue(out: Uint8Array, at: number, kv: KeyValue): number {
  if (kv.key.length > 0) {
    out[at++] = 0x0a;
    at = putVarint(out, at, kv.key.length);
    out.set(kv.key, at);
    at += kv.key.length;
  }
  if (kv.createRevision !== 0) {
    out[at++] = 0x10;
    at = putVarint(out, at, kv.createRevision);
  }
  if (kv.modRevision !== 0) {
    out[at++] = 0x18;
    at = putVarint(out, at, kv.modRevision);
  }
  if (kv.version !== 0) {
    out[at++] = 0x20;
    at = putVarint(out, at, kv.version);
  }
  if (kv.value.length > 0) {
    out[at++] = 0x2a;
    at = putVarint(out, at, kv.value.length);
    out.set(kv.value, at);
    at += kv.value.length;
  }
  if (kv.lease !== 0n) {
    out[at++] = 0x30;
    at = putInt64Varint(out, at, kv.lease);
  }
  return at;
}

/** Bytes an encoded event adds to a response: its tag, length and body. */
export function eventFieldBytes(event: Uint8Array): number {
  return 1 + varintLength(event.length) + event.length;
}

/**
 * A ResponseHeader's encoding (its body, without tag and length), the last one kept: the
 * responses of one batch to many watchers share it.
 */
export class HeaderEncoder {
  private ids: EtcdHeaderIds | undefined;
  private revision = -1;
  private bytes: Uint8Array = new Uint8Array(0);

  encode(ids: EtcdHeaderIds, revision: number): Uint8Array {
    const last = this.ids;
    if (
      last === undefined ||
      revision !== this.revision ||
      last.clusterId !== ids.clusterId ||
      last.memberId !== ids.memberId ||
      last.raftTerm !== ids.raftTerm
    ) {
      this.bytes = toBinary(
        ResponseHeaderSchema,
        create(ResponseHeaderSchema, {
          clusterId: ids.clusterId,
          memberId: ids.memberId,
          raftTerm: ids.raftTerm,
          revision: BigInt(revision),
        }),
      );
      this.ids = { clusterId: ids.clusterId, memberId: ids.memberId, raftTerm: ids.raftTerm };
      this.revision = revision;
    }
    return this.bytes;
  }
}

/** Bytes of the response's fields other than its events. */
export function eventsResponseBaseBytes(
  header: Uint8Array,
  watchId: bigint,
  fragment: boolean,
): number {
  let size = 1 + varintLength(header.length) + header.length;
  if (watchId !== 0n) size += 1 + int64VarintLength(watchId);
  if (fragment) size += 2;
  return size;
}

/** The encoded WatchResponse carrying `events` (see the contract above). */
export function encodeEventsResponse(
  header: Uint8Array,
  watchId: bigint,
  events: readonly Uint8Array[],
  fragment: boolean,
): Uint8Array {
  let size = eventsResponseBaseBytes(header, watchId, fragment);
  for (const e of events) size += eventFieldBytes(e);
  const out = Buffer.allocUnsafe(size);
  out[0] = TAG_HEADER;
  let at = putVarint(out, 1, header.length);
  out.set(header, at);
  at += header.length;
  if (watchId !== 0n) {
    out[at++] = TAG_WATCH_ID;
    at = putInt64Varint(out, at, watchId);
  }
  if (fragment) {
    out[at++] = TAG_FRAGMENT;
    out[at++] = 1;
  }
  for (const e of events) {
    out[at++] = TAG_EVENT;
    at = putVarint(out, at, e.length);
    out.set(e, at);
    at += e.length;
  }
  return out;
}

/** An int64 as protobuf writes it: two's complement, so a negative one takes 10 bytes. */
function int64VarintLength(v: bigint): number {
  if (v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER)) return varintLength(Number(v));
  let u = BigInt.asUintN(64, v);
  let n = 1;
  while (u >= 0x80n) {
    u >>= 7n;
    n++;
  }
  return n;
}

function putInt64Varint(out: Uint8Array, at: number, v: bigint): number {
  if (v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER)) return putVarint(out, at, Number(v));
  let u = BigInt.asUintN(64, v);
  while (u >= 0x80n) {
    out[at++] = Number(u & 0x7fn) | 0x80;
    u >>= 7n;
  }
  out[at++] = Number(u);
  return at;
}
