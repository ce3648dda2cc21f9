/**
 * Internal keys: a user key plus a sequence number and a kind. Order: user key ascending
 * (bytewise), then sequence number descending (newest first), then kind descending.
 *
 * Encoded form (used by SSTables; see docs/format/sstable.md): the user key followed by
 * an 8-byte trailer: byte 0 = kind, bytes 1..7 = sequence number, little-endian. This is
 * the little-endian fixed64 of (sequence << 8 | kind), LevelDB's layout. Sequence numbers
 * are limited to MAX_SEQUENCE (2^53 - 1) because they are JavaScript numbers.
 */

/** A deletion marker (tombstone). Do not change: stored on disk. */
export const KIND_DELETE = 0;
/** A value. Do not change: stored on disk. */
export const KIND_PUT = 1;
export type ValueKind = typeof KIND_DELETE | typeof KIND_PUT;

export const MAX_SEQUENCE = Number.MAX_SAFE_INTEGER;

/** Bytewise comparison of two byte strings: negative, zero or positive. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/**
 * Compares internal keys given as parts: user keys bytewise, then newer (higher) sequence
 * first, then higher kind first.
 */
export function compareInternal(
  aKey: Uint8Array,
  aSeq: number,
  aKind: number,
  bKey: Uint8Array,
  bSeq: number,
  bKind: number,
): number {
  const c = compareBytes(aKey, bKey);
  if (c !== 0) return c;
  if (aSeq !== bSeq) return aSeq > bSeq ? -1 : 1;
  return bKind - aKind;
}

function kindName(kind: number): string {
  if (kind === KIND_PUT) return "PUT";
  if (kind === KIND_DELETE) return "DEL";
  return `KIND${kind}`;
}

/**
 * Readable text for debug output and tests: `apple#12,PUT`. Printable ASCII keys are shown
 * as they are; other keys as `0x` + hex.
 */
export function formatInternalKey(key: Uint8Array, seq: number, kind: number): string {
  return `${formatUserKey(key)}#${seq},${kindName(kind)}`;
}

/** A user key as text when it is printable ASCII (no '#' or ','), else as 0x-prefixed hex. */
export function formatUserKey(key: Uint8Array): string {
  let printable = key.length > 0;
  for (let i = 0; i < key.length && printable; i++) {
    const b = key[i]!;
    printable = b >= 0x20 && b < 0x7f && b !== 0x23 && b !== 0x2c;
  }
  return printable
    ? Buffer.from(key.buffer, key.byteOffset, key.length).toString("latin1")
    : `0x${Buffer.from(key.buffer, key.byteOffset, key.length).toString("hex")}`;
}

/** Bytes of the trailer after the user key in an encoded internal key. */
export const INTERNAL_KEY_TRAILER = 8;

/**
 * Writes the encoded internal key (user key + trailer) into dst at offset; returns the
 * offset after it. dst needs key.length + 8 bytes free.
 */
export function putInternalKey(
  dst: Uint8Array,
  offset: number,
  key: Uint8Array,
  seq: number,
  kind: number,
): number {
  dst.set(key, offset);
  let o = offset + key.length;
  dst[o++] = kind;
  let s = seq;
  for (let i = 0; i < 7; i++) {
    dst[o++] = s % 256;
    s = Math.floor(s / 256);
  }
  return o;
}

/** The encoded form of an internal key, in a new array. */
export function encodeInternalKey(key: Uint8Array, seq: number, kind: number): Uint8Array {
  const out = new Uint8Array(key.length + INTERNAL_KEY_TRAILER);
  putInternalKey(out, 0, key, seq, kind);
  return out;
}

/** Kind byte of an encoded internal key. REQUIRES ikey.length >= 8. */
export function internalKeyKind(ikey: Uint8Array): number {
  return ikey[ikey.length - INTERNAL_KEY_TRAILER]!;
}

/** Sequence number of an encoded internal key. REQUIRES ikey.length >= 8. */
export function internalKeySeq(ikey: Uint8Array): number {
  const o = ikey.length - 7;
  let s = 0;
  for (let i = 6; i >= 0; i--) s = s * 256 + ikey[o + i]!;
  return s;
}

/** User key of an encoded internal key, as a view. REQUIRES ikey.length >= 8. */
export function internalKeyUserKey(ikey: Uint8Array): Uint8Array {
  return ikey.subarray(0, ikey.length - INTERNAL_KEY_TRAILER);
}

/** Compares two encoded internal keys in internal-key order. */
export function compareEncodedInternal(a: Uint8Array, b: Uint8Array): number {
  const c = compareBytes(internalKeyUserKey(a), internalKeyUserKey(b));
  if (c !== 0) return c;
  const sa = internalKeySeq(a);
  const sb = internalKeySeq(b);
  if (sa !== sb) return sa > sb ? -1 : 1;
  return internalKeyKind(b) - internalKeyKind(a);
}
