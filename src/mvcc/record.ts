/**
 * The value of a history, changes or latest entry (docs/format/mvcc.md, "Records"):
 *
 *   record := 0x00                                            (a deletion)
 *           | 0x01 create:varint version:varint lease:varint64 value
 *   latest value := mod:varint record                         (always a put)
 *
 * `lease` is LEB128 over all 64 bits (a bigint); `value` is the rest of the entry. The
 * modification revision of a history or changes record is the one in its key.
 */
import { KvError } from "../errors.js";
import { getVarint, putVarint, type VarintResult, varintLength } from "../util/coding.js";
import type { KeyValue } from "./types.js";

export const RECORD_DELETE = 0x00;
export const RECORD_PUT = 0x01;

const TOMBSTONE = Uint8Array.of(RECORD_DELETE);
const MAX_U64 = (1n << 64n) - 1n;

function leaseLength(lease: bigint): number {
  if (lease === 0n) return 1;
  let n = 1;
  for (let v = lease; v >= 0x80n; v >>= 7n) n++;
  return n;
}

function putLease(out: Uint8Array, at: number, lease: bigint): number {
  let v = lease;
  while (v >= 0x80n) {
    out[at++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  out[at++] = Number(v);
  return at;
}

/** Throws INVALID_ARGUMENT unless `lease` fits 64 unsigned bits. */
export function checkLease(lease: bigint): void {
  if (typeof lease !== "bigint" || lease < 0n || lease > MAX_U64) {
    throw new KvError("INVALID_ARGUMENT", "lease must be a bigint in [0, 2^64)");
  }
}

/** The deletion record (shared: do not change it). */
export function deletionRecord(): Uint8Array {
  return TOMBSTONE;
}

/**
 * Encodes the put record of `kv` preceded by its mod revision: the whole is the latest
 * entry's value, and `subarray(recordStart)` the history and changes entries' record.
 */
export function encodeLatestAndRecord(kv: KeyValue): { latest: Uint8Array; recordStart: number } {
  const recordStart = varintLength(kv.modRevision);
  const size =
    recordStart +
    1 +
    varintLength(kv.createRevision) +
    varintLength(kv.version) +
    leaseLength(kv.lease) +
    kv.value.length;
  const out = Buffer.allocUnsafe(size);
  let at = putVarint(out, 0, kv.modRevision);
  out[at++] = RECORD_PUT;
  at = putVarint(out, at, kv.createRevision);
  at = putVarint(out, at, kv.version);
  at = putLease(out, at, kv.lease);
  out.set(kv.value, at);
  return { latest: out, recordStart };
}

const slot: VarintResult = { value: 0, offset: 0 };

function corrupt(what: string): KvError {
  return new KvError("CORRUPTION", `mvcc: malformed ${what}`);
}

/**
 * Decodes a record of `key` at `modRevision` starting at `at`; undefined for a deletion.
 * The value is a view of `src`. Throws CORRUPTION for a malformed record.
 */
export function decodeRecord(
  key: Uint8Array,
  modRevision: number,
  src: Uint8Array,
  at = 0,
): KeyValue | undefined {
  const kind = src[at];
  if (kind === RECORD_DELETE && src.length === at + 1) return undefined;
  if (kind !== RECORD_PUT) throw corrupt("record kind");
  try {
    getVarint(src, at + 1, slot);
    const createRevision = slot.value;
    getVarint(src, slot.offset, slot);
    const version = slot.value;
    let i = slot.offset;
    let lease = 0n;
    let shift = 0n;
    for (;;) {
      const b = src[i++];
      if (b === undefined || shift > 63n) throw corrupt("lease");
      lease |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7n;
    }
    return { key, createRevision, modRevision, version, lease, value: src.subarray(i) };
  } catch (err) {
    if (err instanceof RangeError) throw corrupt("record");
    throw err;
  }
}

/** Decodes a latest entry's value (mod revision, then a put record). */
export function decodeLatest(key: Uint8Array, src: Uint8Array): KeyValue {
  try {
    getVarint(src, 0, slot);
  } catch {
    throw corrupt("latest entry");
  }
  const kv = decodeRecord(key, slot.value, src, slot.offset);
  if (kv === undefined) throw corrupt("latest entry (a deletion)");
  return kv;
}
