/**
 * BufferPool: free buffers by exact byte length, for reuse instead of a new allocation;
 * bounded in bytes (a buffer given when the pool is full is left to the garbage
 * collector). The caller guarantees that nothing reads a buffer it gives back; a buffer
 * taken holds whatever bytes it last held.
 */
export class BufferPool<B extends ArrayBufferLike> {
  private readonly free = new Map<number, B[]>();
  private bytes = 0;
  /** Buffers handed out again instead of allocated. */
  reused = 0;

  /** Keeps at most `maxBytes` bytes of free buffers. */
  constructor(readonly maxBytes: number) {}

  /** Bytes of the buffers waiting to be reused. */
  get pooledBytes(): number {
    return this.bytes;
  }

  /** A free buffer of exactly `size` bytes, or undefined when there is none. */
  take(size: number): B | undefined {
    const buffer = this.free.get(size)?.pop();
    if (buffer === undefined) return undefined;
    this.bytes -= size;
    this.reused++;
    return buffer;
  }

  /** Offers a buffer no one reads any more; kept while the pool has room. */
  give(buffer: B): void {
    const size = buffer.byteLength;
    if (size === 0 || this.bytes + size > this.maxBytes) return;
    let list = this.free.get(size);
    if (list === undefined) {
      list = [];
      this.free.set(size, list);
    }
    list.push(buffer);
    this.bytes += size;
  }

  /** Drops every free buffer. */
  clear(): void {
    this.free.clear();
    this.bytes = 0;
  }
}
