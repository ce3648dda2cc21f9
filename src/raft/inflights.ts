/**
 * The append messages in flight to one follower: a ring buffer of (last index, bytes) per
 * message, bounded by a count and a byte budget. A leader in the replicate state sends
 * while the window is not full and frees the front on each acknowledgement. No per-message
 * allocation: two typed arrays that grow by doubling up to the count limit.
 */
export class Inflights {
  private start = 0;
  private n = 0;
  private totalBytes = 0;
  private indexes: Float64Array;
  private sizes: Float64Array;

  constructor(
    /** The most messages in flight. */
    readonly maxCount: number,
    /** The most bytes in flight (a message that crosses it is still sent; then the window is full). */
    readonly maxBytes: number,
  ) {
    const initial = Math.min(maxCount, 16);
    this.indexes = new Float64Array(initial);
    this.sizes = new Float64Array(initial);
  }

  get count(): number {
    return this.n;
  }

  get bytes(): number {
    return this.totalBytes;
  }

  full(): boolean {
    return this.n === this.maxCount || this.totalBytes >= this.maxBytes;
  }

  /** Records a message whose last entry is `index` (increasing). REQUIRES: !full(). */
  add(index: number, bytes: number): void {
    if (this.full()) throw new Error("inflights: add to a full window");
    if (this.n === this.indexes.length) this.grow();
    let slot = this.start + this.n;
    if (slot >= this.indexes.length) slot -= this.indexes.length;
    this.indexes[slot] = index;
    this.sizes[slot] = bytes;
    this.n++;
    this.totalBytes += bytes;
  }

  private grow(): void {
    const size = Math.min(this.indexes.length * 2, this.maxCount);
    const indexes = new Float64Array(size);
    const sizes = new Float64Array(size);
    const cap = this.indexes.length;
    for (let i = 0; i < this.n; i++) {
      let slot = this.start + i;
      if (slot >= cap) slot -= cap;
      indexes[i] = this.indexes[slot]!;
      sizes[i] = this.sizes[slot]!;
    }
    this.indexes = indexes;
    this.sizes = sizes;
    this.start = 0;
  }

  /** Frees every message whose last index is <= `index`. */
  freeLE(index: number): void {
    const cap = this.indexes.length;
    let slot = this.start;
    let freed = 0;
    let bytes = 0;
    while (freed < this.n && this.indexes[slot]! <= index) {
      bytes += this.sizes[slot]!;
      freed++;
      slot++;
      if (slot === cap) slot = 0;
    }
    this.n -= freed;
    this.totalBytes -= bytes;
    this.start = this.n === 0 ? 0 : slot;
  }

  reset(): void {
    this.start = 0;
    this.n = 0;
    this.totalBytes = 0;
  }
}
