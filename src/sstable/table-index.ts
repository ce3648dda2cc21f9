/**
 * TableIndex: a table's index block decoded once, at open, into flat arrays: the index
 * keys back to back in one byte array, and each data block's handle as numbers. A lookup
 * is then a binary search comparing keys in place, with no varint decoding and no
 * allocation (the index block itself keeps no prefix compression: restart interval 1).
 *
 * Decoding checks what the format promises: keys strictly increasing, handle values
 * exactly two varints, blocks in file order without overlap, each with its trailer before
 * `dataLimit`. Anything else is CORRUPTION naming the file.
 */
import { INTERNAL_KEY_TRAILER } from "../key/internal-key.js";
import { getVarint, type VarintResult } from "../util/coding.js";
import type { Block } from "./block.js";
import { BlockIterator } from "./block.js";
import { BLOCK_TRAILER_SIZE } from "./format.js";
import { compareInternalRange } from "./key-bytes.js";

/** Bytes [from, from + 4) of a, big-endian, with zeros for positions at or past end. */
function wordAt(a: Uint8Array, from: number, end: number): number {
  if (from + 4 <= end) {
    return ((a[from]! << 24) | (a[from + 1]! << 16) | (a[from + 2]! << 8) | a[from + 3]!) >>> 0;
  }
  let w = 0;
  for (let i = 0; i < 4; i++) w = w * 256 + (from + i < end ? a[from + i]! : 0);
  return w;
}

export class TableIndex {
  /** Number of data blocks. */
  readonly count: number;
  /** Index keys back to back: key i is keys[keyStarts[i], keyStarts[i + 1]). */
  private readonly keys: Uint8Array;
  private readonly keyStarts: Uint32Array;
  /** File offset of data block i. */
  readonly blockOffsets: Float64Array;
  /** Size of data block i without its trailer. */
  readonly blockSizes: Float64Array;
  /** Keys [0, fastCount) share prefixLength bytes and have `words`. */
  private readonly fastCount: number;
  /** Length of the user-key prefix keys [0, fastCount) share. */
  private readonly prefixLength: number;
  /**
   * For key i, words[2i] and words[2i + 1]: its user-key bytes [prefixLength,
   * prefixLength + 8) as two big-endian u32, zero-padded past the user key's end.
   */
  private readonly words: Uint32Array;

  private constructor(
    keys: Uint8Array,
    keyStarts: Uint32Array,
    offsets: Float64Array,
    sizes: Float64Array,
  ) {
    this.count = offsets.length;
    this.keys = keys;
    this.keyStarts = keyStarts;
    this.blockOffsets = offsets;
    this.blockSizes = sizes;
    const n = this.count;
    // The fast path covers keys 0 .. n - 2: the last index key is usually a short successor
    // ("l" after "key_..."), which would leave no common prefix.
    const fast = n > 1 ? n - 1 : 0;
    let p = 0;
    if (fast > 0) {
      // Sorted keys: the prefix shared by the first and last is shared by all between.
      const a = keyStarts[0]!;
      const aUser = keyStarts[1]! - a - INTERNAL_KEY_TRAILER;
      const b = keyStarts[fast - 1]!;
      const bUser = keyStarts[fast]! - b - INTERNAL_KEY_TRAILER;
      const m = aUser < bUser ? aUser : bUser;
      while (p < m && keys[a + p] === keys[b + p]) p++;
    }
    this.fastCount = fast;
    this.prefixLength = p;
    this.words = new Uint32Array(2 * fast);
    for (let i = 0; i < fast; i++) {
      const s = keyStarts[i]!;
      const end = keyStarts[i + 1]! - INTERNAL_KEY_TRAILER;
      this.words[2 * i] = wordAt(keys, s + p, end);
      this.words[2 * i + 1] = wordAt(keys, s + p + 4, end);
    }
  }

  /** Decodes an index block whose data blocks must end (trailer included) by dataLimit. */
  static decode(block: Block, dataLimit: number): TableIndex {
    const it = new BlockIterator(block);
    let keys = new Uint8Array(Math.max(64, block.data.length));
    let used = 0;
    const starts: number[] = [0];
    const offsets: number[] = [];
    const sizes: number[] = [];
    const r: VarintResult = { value: 0, offset: 0 };
    let prevEnd = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      const i = offsets.length;
      const klen = it.keyLength;
      if (i > 0) {
        const prev = starts[i - 1]!;
        if (compareInternalRange(it.keyBytes, 0, klen, keys, prev, used - prev) <= 0) {
          throw block.corruption(`index keys out of order at entry ${i}`);
        }
      }
      if (used + klen > keys.length) {
        const grown = new Uint8Array(Math.max(used + klen, keys.length * 2));
        grown.set(keys.subarray(0, used));
        keys = grown;
      }
      keys.set(it.keyBytes.subarray(0, klen), used);
      used += klen;
      starts.push(used);

      const d = block.data;
      const vEnd = it.valueStart + it.valueLength;
      let offset: number;
      let size: number;
      try {
        const v = d.subarray(0, vEnd);
        getVarint(v, it.valueStart, r);
        offset = r.value;
        getVarint(v, r.offset, r);
        size = r.value;
      } catch (err) {
        throw block.corruption(`bad block handle in index entry ${i}: ${(err as Error).message}`);
      }
      if (r.offset !== vEnd) throw block.corruption(`index entry ${i}: trailing bytes in handle`);
      if (offset < prevEnd || offset + size + BLOCK_TRAILER_SIZE > dataLimit) {
        throw block.corruption(
          `index entry ${i}: block handle (offset ${offset}, size ${size}) out of bounds`,
        );
      }
      prevEnd = offset + size + BLOCK_TRAILER_SIZE;
      offsets.push(offset);
      sizes.push(size);
    }
    return new TableIndex(
      keys.slice(0, used),
      Uint32Array.from(starts),
      Float64Array.from(offsets),
      Float64Array.from(sizes),
    );
  }

  /**
   * Index of the first block whose index key is >= target[0, tlen); `count` if none.
   *
   * Fast path: when the target shares the common prefix of keys [0, count - 1), each probe
   * of those first compares
   * the next 8 bytes as two integers from the compact `words` array (zero padding keeps
   * their order that of the keys: a difference there decides), and compares whole keys
   * only on a tie.
   */
  findFirstGE(target: Uint8Array, tlen: number): number {
    const p = this.prefixLength;
    const tUser = tlen - INTERNAL_KEY_TRAILER;
    if (this.fastCount === 0 || tUser < p) return this.findFirstGESlow(target, tlen);
    const keys = this.keys;
    const starts = this.keyStarts;
    const first = starts[0]!;
    for (let i = 0; i < p; i++) {
      if (target[i] !== keys[first + i]) return this.findFirstGESlow(target, tlen);
    }
    const w0 = wordAt(target, p, tUser);
    const w1 = wordAt(target, p + 4, tUser);
    const words = this.words;
    let lo = 0;
    let hi = this.fastCount;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const k0 = words[2 * mid]!;
      let less: boolean;
      if (k0 !== w0) {
        less = k0 < w0;
      } else {
        const k1 = words[2 * mid + 1]!;
        if (k1 !== w1) {
          less = k1 < w1;
        } else {
          const s = starts[mid]!;
          less = compareInternalRange(keys, s, starts[mid + 1]! - s, target, 0, tlen) < 0;
        }
      }
      if (less) lo = mid + 1;
      else hi = mid;
    }
    if (lo < this.fastCount) return lo;
    // Past keys [0, fastCount): the last key decides.
    const s = starts[lo]!;
    return compareInternalRange(keys, s, starts[lo + 1]! - s, target, 0, tlen) < 0 ? lo + 1 : lo;
  }

  /** findFirstGE comparing whole keys. */
  findFirstGESlow(target: Uint8Array, tlen: number): number {
    const keys = this.keys;
    const starts = this.keyStarts;
    let lo = 0;
    let hi = this.count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const s = starts[mid]!;
      if (compareInternalRange(keys, s, starts[mid + 1]! - s, target, 0, tlen) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Index key i (an encoded internal key), as a view. */
  key(i: number): Uint8Array {
    return this.keys.subarray(this.keyStarts[i]!, this.keyStarts[i + 1]!);
  }
}
