/**
 * The stored form of the lease table (docs/format/leases.md), beside the MVCC keys:
 *
 *   0x00 "mvcc/lease-time"          -> T: fixed64 LE (the lease clock, ms)
 *   0x00 "mvcc/lease/" ‖ id:8 BE    -> ttl:fixed64 LE (s) ‖ expiresAt:fixed64 LE (ms of T)
 *
 * Written in the batch of the write transaction that changes them (MvccWrite.end's extra).
 */
import { KvError } from "../errors.js";
import { getFixed64, putFixed64 } from "../util/coding.js";

const LEASE_PREFIX_TEXT = "\0mvcc/lease/";

/** The first key of the lease records. */
export const LEASE_PREFIX: Uint8Array = Uint8Array.from(Buffer.from(LEASE_PREFIX_TEXT, "latin1"));
/** The exclusive end of the lease records ("/" + 1 = "0"). */
export const LEASE_PREFIX_END: Uint8Array = Uint8Array.from(Buffer.from("\0mvcc/lease0", "latin1"));
/** The lease clock T (fixed64, ms). */
export const LEASE_TIME_KEY: Uint8Array = Uint8Array.from(
  Buffer.from("\0mvcc/lease-time", "latin1"),
);

/** One lease as stored. */
export interface LeaseRecord {
  /** A positive int63. */
  readonly id: bigint;
  /** The granted TTL, seconds. */
  readonly ttl: number;
  /** When it expires, in lease-clock ms. */
  readonly expiresAt: number;
}

/** `0x00 "mvcc/lease/" ‖ id` (8 bytes big-endian). REQUIRES: 0 < id < 2^63. */
export function leaseKey(id: bigint): Uint8Array {
  const out = Buffer.alloc(LEASE_PREFIX.length + 8);
  out.set(LEASE_PREFIX, 0);
  out.writeBigUInt64BE(id, LEASE_PREFIX.length);
  return out;
}

export function encodeLeaseRecord(r: LeaseRecord): Uint8Array {
  const out = new Uint8Array(16);
  putFixed64(out, 0, r.ttl);
  putFixed64(out, 8, r.expiresAt);
  return out;
}

/** Decodes the record stored under `key`; throws CORRUPTION when malformed. */
export function decodeLeaseRecord(key: Uint8Array, value: Uint8Array): LeaseRecord {
  if (key.length !== LEASE_PREFIX.length + 8 || value.length !== 16) {
    throw new KvError("CORRUPTION", "mvcc: malformed lease record");
  }
  const id = Buffer.from(key.buffer, key.byteOffset, key.length).readBigUInt64BE(
    LEASE_PREFIX.length,
  );
  return { id, ttl: getFixed64(value, 0), expiresAt: getFixed64(value, 8) };
}

export function encodeLeaseTime(t: number): Uint8Array {
  const out = new Uint8Array(8);
  putFixed64(out, 0, t);
  return out;
}

/** The stored lease clock (0 when absent); throws CORRUPTION when malformed. */
export function decodeLeaseTime(v: Uint8Array | undefined): number {
  if (v === undefined) return 0;
  if (v.length !== 8) throw new KvError("CORRUPTION", "mvcc: malformed lease time");
  return getFixed64(v, 0);
}
