/**
 * FrequencySketch: how often each block was asked for lately, approximately: a count-min
 * sketch (TinyLFU's) of 4 rows of 4-bit-range counters (bytes saturating at 15), keyed by
 * (fileNumber, offset). `estimate` never undercounts the additions since the last aging,
 * halved once per aging; it overcounts only through hash collisions (the minimum of 4
 * rows). Aging: after `sampleSize` additions every counter is halved, so the counts follow
 * what is read now rather than all history.
 *
 * Sized for `capacity` distinct blocks (the block cache's capacity in blocks): rows of the
 * next power of two >= 2 × capacity counters (at least 64), aging every 10 × capacity
 * additions. Memory: 4 × row bytes (~32 KiB for a 32 MiB cache of 4 KiB blocks).
 */

const ROWS = 4;
const MAX_COUNT = 15;
/** Scratch of `locate` (single-threaded, consumed right after the call). */
const rowIndex = new Int32Array(ROWS);

export class FrequencySketch {
  private readonly counts: Uint8Array;
  private readonly mask: number;
  private readonly sampleSize: number;
  private additions = 0;

  constructor(capacity: number) {
    const wanted = Math.max(64, 2 * Math.ceil(capacity));
    let width = 64;
    while (width < wanted && width < 1 << 24) width *= 2;
    this.counts = new Uint8Array(ROWS * width);
    this.mask = width - 1;
    this.sampleSize = 10 * Math.max(1, Math.ceil(capacity));
  }

  /** Counts one request for the block at (fileNumber, offset). */
  add(fileNumber: number, offset: number): void {
    this.locate(fileNumber, offset);
    const counts = this.counts;
    for (let row = 0; row < ROWS; row++) {
      const i = rowIndex[row]!;
      if (counts[i]! < MAX_COUNT) counts[i]!++;
    }
    if (++this.additions >= this.sampleSize) this.age();
  }

  /** The approximate number of recent requests for the block at (fileNumber, offset). */
  estimate(fileNumber: number, offset: number): number {
    this.locate(fileNumber, offset);
    const counts = this.counts;
    let min = MAX_COUNT;
    for (let row = 0; row < ROWS; row++) {
      const c = counts[rowIndex[row]!]!;
      if (c < min) min = c;
    }
    return min;
  }

  /** Sets rowIndex to the block's counter in each row (double hashing across rows). */
  private locate(fileNumber: number, offset: number): void {
    const h = hash(fileNumber, offset);
    const step = (Math.imul(h, 0x2c1b3c6d) >>> 8) | 1;
    const mask = this.mask;
    let at = h;
    for (let row = 0; row < ROWS; row++) {
      rowIndex[row] = row * (mask + 1) + (at & mask);
      at = (at + step) | 0;
    }
  }

  /** Halves every counter. */
  private age(): void {
    const counts = this.counts;
    for (let i = 0; i < counts.length; i++) counts[i] = counts[i]! >>> 1;
    this.additions = 0;
  }
}

/** A 32-bit mix of the block's identity (offsets past 2^32 fold in their high part). */
function hash(fileNumber: number, offset: number): number {
  let h = Math.imul(offset | 0, 0x9e3779b1) ^ Math.imul(fileNumber | 0, 0x85ebca6b);
  h ^= Math.floor(offset / 0x1_0000_0000) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  return h ^ (h >>> 16);
}
