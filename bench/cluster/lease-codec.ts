/**
 * The lease and lock messages the lease benchmarks send (etcd 3.4's
 * api/etcdserverpb/rpc.proto: LeaseGrant, LeaseRevoke, LeaseKeepAlive, Put with a lease;
 * etcdserver/api/v3lock/v3lockpb/v3lock.proto: Lock, Unlock), hand-written on
 * @bufbuild/protobuf's wire reader and writer like ./etcd-codec.ts. Lease IDs are int64 on
 * the wire: bigint here.
 */
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";

export const LEASE_GRANT = "/etcdserverpb.Lease/LeaseGrant";
export const LEASE_REVOKE = "/etcdserverpb.Lease/LeaseRevoke";
export const LEASE_KEEP_ALIVE = "/etcdserverpb.Lease/LeaseKeepAlive";
export const LOCK = "/v3lockpb.Lock/Lock";
export const UNLOCK = "/v3lockpb.Lock/Unlock";

function finish(w: BinaryWriter): Buffer {
  const bytes = w.finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** LeaseGrantRequest { TTL = 1; ID = 2 }. */
export function encodeLeaseGrant(ttlSeconds: number): Buffer {
  return finish(new BinaryWriter().tag(1, WireType.Varint).int64(ttlSeconds));
}

/** LeaseRevokeRequest { ID = 1 }, LeaseKeepAliveRequest { ID = 1 }: the same bytes. */
export function encodeLeaseId(id: bigint): Buffer {
  return finish(new BinaryWriter().tag(1, WireType.Varint).int64(id));
}

export interface LeaseAnswer {
  id: bigint;
  /** Seconds; a keep-alive of a lease that is gone answers 0. */
  ttl: number;
  /** LeaseGrantResponse.error (empty when granted). */
  error: string;
}

/**
 * LeaseGrantResponse { header = 1; ID = 2; TTL = 3; error = 4 } and LeaseKeepAliveResponse
 * { header = 1; ID = 2; TTL = 3 }.
 */
export function decodeLeaseAnswer(bytes: Uint8Array): LeaseAnswer {
  const r = new BinaryReader(bytes);
  const out: LeaseAnswer = { id: 0n, ttl: 0, error: "" };
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 2 && wire === WireType.Varint) out.id = BigInt(r.int64());
    else if (field === 3 && wire === WireType.Varint) out.ttl = Number(r.int64());
    else if (field === 4 && wire === WireType.LengthDelimited) out.error = r.string();
    else r.skip(wire);
  }
  return out;
}

/** PutRequest { key = 1; value = 2; lease = 3 }. */
export function encodePutWithLease(key: Uint8Array, value: Uint8Array, lease: bigint): Buffer {
  return finish(
    new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(key)
      .tag(2, WireType.LengthDelimited)
      .bytes(value)
      .tag(3, WireType.Varint)
      .int64(lease),
  );
}

/** LockRequest { name = 1; lease = 2 }. */
export function encodeLock(name: Uint8Array, lease: bigint): Buffer {
  return finish(
    new BinaryWriter()
      .tag(1, WireType.LengthDelimited)
      .bytes(name)
      .tag(2, WireType.Varint)
      .int64(lease),
  );
}

/** LockResponse { header = 1; key = 2 }: the key that holds the lock. */
export function decodeLockKey(bytes: Uint8Array): Uint8Array {
  const r = new BinaryReader(bytes);
  let key: Uint8Array | undefined;
  while (r.pos < r.len) {
    const [field, wire] = r.tag();
    if (field === 2 && wire === WireType.LengthDelimited) key = r.bytes();
    else r.skip(wire);
  }
  if (key === undefined) throw new Error("LockResponse without a key");
  return key;
}

/** UnlockRequest { key = 1 }. */
export function encodeUnlock(key: Uint8Array): Buffer {
  return finish(new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(key));
}
