/**
 * Little-endian fixed-width and varint encodings used by every on-disk format.
 * Readers check bounds and throw RangeError on truncated input; callers that read
 * from disk turn that into a CORRUPTION error naming the file.
 */

export function putFixed32(dst: Uint8Array, offset: number, v: number): void {
  dst[offset] = v & 0xff;
  dst[offset + 1] = (v >>> 8) & 0xff;
  dst[offset + 2] = (v >>> 16) & 0xff;
  dst[offset + 3] = (v >>> 24) & 0xff;
}

export function getFixed32(src: Uint8Array, offset: number): number {
  if (offset < 0 || offset + 4 > src.length) throw new RangeError("fixed32 past end of input");
  return (
    (src[offset]! |
      (src[offset + 1]! << 8) |
      (src[offset + 2]! << 16) |
      (src[offset + 3]! << 24)) >>>
    0
  );
}

/** Writes a non-negative integer below 2^53 as 8 little-endian bytes. */
export function putFixed64(dst: Uint8Array, offset: number, v: number): void {
  putFixed32(dst, offset, v >>> 0);
  putFixed32(dst, offset + 4, Math.floor(v / 0x1_0000_0000));
}

/** Reads 8 little-endian bytes; throws RangeError if the value exceeds 2^53 - 1. */
export function getFixed64(src: Uint8Array, offset: number): number {
  const lo = getFixed32(src, offset);
  const hi = getFixed32(src, offset + 4);
  if (hi > 0x1f_ffff) throw new RangeError("fixed64 value exceeds 2^53 - 1");
  return hi * 0x1_0000_0000 + lo;
}

/** Number of bytes `putVarint` needs for v (a non-negative integer below 2^53). */
export function varintLength(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** Writes v as a LEB128 varint; returns the offset after it. */
export function putVarint(dst: Uint8Array, offset: number, v: number): number {
  while (v >= 0x80) {
    dst[offset++] = (v & 0x7f) | 0x80;
    v = Math.floor(v / 128);
  }
  dst[offset++] = v;
  return offset;
}

/** Result slot reused by getVarint to avoid allocating per call. */
export interface VarintResult {
  value: number;
  offset: number;
}

/**
 * Reads a LEB128 varint at `offset` into `out` (value, offset after it).
 * Throws RangeError when the input ends first or the value exceeds 2^53 - 1.
 */
export function getVarint(src: Uint8Array, offset: number, out: VarintResult): void {
  let result = 0;
  let mul = 1;
  for (let i = 0; i < 8; i++) {
    if (offset >= src.length) throw new RangeError("varint past end of input");
    const b = src[offset++]!;
    result += (b & 0x7f) * mul;
    if (b < 0x80) {
      if (result > Number.MAX_SAFE_INTEGER) throw new RangeError("varint exceeds 2^53 - 1");
      out.value = result;
      out.offset = offset;
      return;
    }
    mul *= 128;
  }
  throw new RangeError("varint longer than 8 bytes");
}
