/**
 * Encoded internal keys (user key + 8-byte trailer, src/key/internal-key.ts) handled in
 * place: comparison of byte ranges without views or decoding, and a growable scratch
 * buffer. The read path uses these to stay free of allocations.
 */
import { INTERNAL_KEY_TRAILER } from "../key/internal-key.js";

/**
 * Compares the encoded internal keys a[aOff, aOff + aLen) and b[bOff, bOff + bLen) in
 * internal-key order: user keys bytewise, then the trailers in descending order (a higher
 * sequence, then a higher kind, sorts first). The trailer is the little-endian fixed64 of
 * (seq << 8 | kind), so comparing it from its last (most significant) byte down with the
 * sign flipped orders it descending without decoding the sequence.
 * REQUIRES aLen >= 8 and bLen >= 8.
 */
export function compareInternalRange(
  a: Uint8Array,
  aOff: number,
  aLen: number,
  b: Uint8Array,
  bOff: number,
  bLen: number,
): number {
  const aUser = aLen - INTERNAL_KEY_TRAILER;
  const bUser = bLen - INTERNAL_KEY_TRAILER;
  const n = aUser < bUser ? aUser : bUser;
  for (let i = 0; i < n; i++) {
    const d = a[aOff + i]! - b[bOff + i]!;
    if (d !== 0) return d;
  }
  if (aUser !== bUser) return aUser - bUser;
  const at = aOff + aUser;
  const bt = bOff + bUser;
  for (let i = INTERNAL_KEY_TRAILER - 1; i >= 0; i--) {
    const d = b[bt + i]! - a[at + i]!;
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Writes the 8-byte trailer of (seq, kind) at dst[offset]. Same bytes as putInternalKey,
 * without its division loop. REQUIRES 0 <= seq <= MAX_SEQUENCE (an integer), kind 0..255.
 */
export function putTrailer(dst: Uint8Array, offset: number, seq: number, kind: number): void {
  const lo = seq >>> 0;
  const hi = (seq - lo) / 0x1_0000_0000;
  dst[offset] = kind;
  dst[offset + 1] = lo;
  dst[offset + 2] = lo >>> 8;
  dst[offset + 3] = lo >>> 16;
  dst[offset + 4] = lo >>> 24;
  dst[offset + 5] = hi;
  dst[offset + 6] = hi >>> 8;
  dst[offset + 7] = hi >>> 16;
}

/** A growable byte buffer holding one key in bytes[0, length). */
export class KeyBuffer {
  bytes: Uint8Array;
  length = 0;

  constructor(capacity = 64) {
    this.bytes = new Uint8Array(capacity);
  }

  /** Grows the buffer to at least n bytes, keeping bytes[0, keep). */
  reserve(n: number, keep = this.length): void {
    if (n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(n, this.bytes.length * 2));
    grown.set(this.bytes.subarray(0, keep));
    this.bytes = grown;
  }

  /** Sets the content to the encoded internal key (key, seq, kind). */
  setInternal(key: Uint8Array, seq: number, kind: number): void {
    this.setInternalFrom(key, 0, key.length, seq, kind);
  }

  /** Sets the content to the encoded internal key (src[start, start + n), seq, kind). */
  setInternalFrom(src: Uint8Array, start: number, n: number, seq: number, kind: number): void {
    this.reserve(n + INTERNAL_KEY_TRAILER, 0);
    const b = this.bytes;
    if (n <= 32) {
      for (let i = 0; i < n; i++) b[i] = src[start + i]!;
    } else {
      b.set(start === 0 && n === src.length ? src : src.subarray(start, start + n));
    }
    putTrailer(b, n, seq, kind);
    this.length = n + INTERNAL_KEY_TRAILER;
  }

  /** Sets the content to a copy of src[off, off + len). */
  setBytes(src: Uint8Array, off: number, len: number): void {
    this.reserve(len, 0);
    this.bytes.set(src.subarray(off, off + len));
    this.length = len;
  }

  /** A view of the content (valid until the buffer changes). */
  view(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }
}
