/**
 * RangeCopier: copies a byte range of one array into another without making a view of the
 * range. `dst.set(src.subarray(...))` allocates a typed array per copy (garbage on paths
 * that copy once per entry: the memtable's arena, the table builder's blocks); a byte loop
 * is slow past a few bytes. A copier reads and writes 4 bytes at a time through DataViews
 * of the two arrays, made once per array (it remembers the last source and destination,
 * and these change rarely: one encoded batch, one arena chunk, one block buffer).
 *
 * Module state: none; each user owns its copier (it holds views of the arrays it last
 * copied between until it is given others, or `forget` is called).
 */

/** Shortest range copied 4 bytes at a time rather than with a byte loop. */
const WORDS_MIN_BYTES = 16;

const NO_BYTES = new Uint8Array(0);
const NO_VIEW = new DataView(new ArrayBuffer(0));

export class RangeCopier {
  private src: Uint8Array = NO_BYTES;
  private srcView: DataView<ArrayBufferLike> = NO_VIEW;
  private dst: Uint8Array = NO_BYTES;
  private dstView: DataView<ArrayBufferLike> = NO_VIEW;

  /**
   * Copies src[from, from + n) to dst[at, at + n). REQUIRES both ranges in bounds (out of
   * bounds bytes are dropped or read as undefined by the byte loop; the DataView path
   * throws RangeError) and the two ranges not to overlap.
   */
  copy(src: Uint8Array, from: number, n: number, dst: Uint8Array, at: number): void {
    if (n < WORDS_MIN_BYTES) {
      const d = at - from;
      for (let i = from; i < from + n; i++) dst[i + d] = src[i]!;
      return;
    }
    if (src !== this.src) {
      this.src = src;
      this.srcView = new DataView(src.buffer, src.byteOffset, src.length);
    }
    if (dst !== this.dst) {
      this.dst = dst;
      this.dstView = new DataView(dst.buffer, dst.byteOffset, dst.length);
    }
    const sv = this.srcView;
    const dv = this.dstView;
    const words = n & ~3;
    let i = 0;
    for (; i < words; i += 4) dv.setUint32(at + i, sv.getUint32(from + i, true), true);
    for (; i < n; i++) dst[at + i] = src[from + i]!;
  }

  /** Drops the views of the arrays last copied between (so they can be collected). */
  forget(): void {
    this.src = NO_BYTES;
    this.srcView = NO_VIEW;
    this.dst = NO_BYTES;
    this.dstView = NO_VIEW;
  }
}
