/**
 * What the etcd client takes and gives: keys (bytes or UTF-8 strings) and key ranges,
 * key-values with their revisions, and the conversions from etcd's messages.
 *
 * Revisions and versions are numbers (etcd's int64s, exact up to 2^53); lease IDs are
 * bigints (etcd picks them at random over the whole int64 range).
 */
import type { ResponseHeader } from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";

/** A key or value: bytes, or a string taken as UTF-8. */
export type Bytes = Uint8Array | string;

/**
 * Which keys a call reads, deletes or watches: one key; every key starting with `prefix`
 * (an empty prefix: every key); or the keys in [`from`, `to`) (`to` omitted: every key
 * from `from` on).
 */
export type KeySelector = Bytes | { prefix: Bytes } | { from: Bytes; to?: Bytes };

/** A key's state at a revision. */
export interface KeyValueRecord {
  key: Buffer;
  value: Buffer;
  /** The revision of the key's last creation. */
  createRevision: number;
  /** The revision of its last change. */
  modRevision: number;
  /** Changes since its creation (1 when just created). */
  version: number;
  /** The lease it is attached to (0n: none). */
  lease: bigint;
}

/** The header of every answer: the store's revision when it answered, and who answered. */
export interface EtcdHeader {
  revision: number;
  clusterId: bigint;
  memberId: bigint;
  raftTerm: number;
}

/** Bytes of a key or value (strings as UTF-8). */
export function bytes(v: Bytes): Uint8Array {
  return typeof v === "string" ? Buffer.from(v, "utf8") : v;
}

/** A Buffer over the same memory (no copy). */
export function buffer(v: Uint8Array): Buffer {
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

const ZERO = new Uint8Array([0]);
/** A range end of no bytes: the key alone (shared; it has no bytes to change). */
const NO_END = new Uint8Array(0);

/**
 * The end of the range of keys starting with `prefix`, as etcd's clients compute it: the
 * prefix with its last byte below 0xff incremented (the 0xff bytes after it dropped);
 * "\0" (no end) for an empty prefix or one of 0xff bytes only.
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if (prefix[i]! < 0xff) {
      const end = Uint8Array.from(prefix.subarray(0, i + 1));
      end[i] = end[i]! + 1;
      return end;
    }
  }
  return ZERO;
}

/** `selector` as etcd's [key, range_end) (range_end empty: the key alone). */
export function keyRange(selector: KeySelector): { key: Uint8Array; rangeEnd: Uint8Array } {
  if (typeof selector === "string" || selector instanceof Uint8Array) {
    const key = bytes(selector);
    if (key.length === 0) throw new TypeError("a key must not be empty");
    return { key, rangeEnd: NO_END };
  }
  if ("prefix" in selector) {
    const p = bytes(selector.prefix);
    return p.length === 0 ? { key: ZERO, rangeEnd: ZERO } : { key: p, rangeEnd: prefixEnd(p) };
  }
  const from = bytes(selector.from);
  return {
    key: from.length === 0 ? ZERO : from,
    rangeEnd: selector.to === undefined ? ZERO : bytes(selector.to),
  };
}

export function kvRecord(kv: KeyValue): KeyValueRecord {
  return {
    key: buffer(kv.key),
    value: buffer(kv.value),
    createRevision: Number(kv.createRevision),
    modRevision: Number(kv.modRevision),
    version: Number(kv.version),
    lease: kv.lease,
  };
}

export function headerOf(h: ResponseHeader | undefined): EtcdHeader {
  return {
    revision: Number(h?.revision ?? 0n),
    clusterId: h?.clusterId ?? 0n,
    memberId: h?.memberId ?? 0n,
    raftTerm: Number(h?.raftTerm ?? 0n),
  };
}

/** `n` as an int64 revision; throws a RangeError naming `what` for a negative or fractional one. */
export function revisionOf(n: number | undefined, what: string): bigint {
  if (n === undefined) return 0n;
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RangeError(`${what} must be a non-negative integer, got ${n}`);
  }
  return BigInt(n);
}
