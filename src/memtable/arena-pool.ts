/**
 * ArenaPool: memtable arena chunks (SharedArrayBuffers) given back by released memtables,
 * for the next memtables to reuse.
 *
 * Why: a flushed memtable's chunks are shared with the compaction worker thread (the
 * flush reads them in place), so their memory is freed only once BOTH threads' garbage
 * collectors have dropped their wrappers, and the worker, whose heap grows slowly, may not
 * collect for many flushes. A 1M-key random load kept ~80 MiB of flushed arenas alive
 * that way. Reusing the chunks bounds the arenas at about the live memtables plus this
 * pool, whenever the collectors run, and spares the kernel zeroing fresh pages.
 *
 * Contract: a chunk may be given only when nothing will read it again through an old view
 * (Memtable.unref guarantees it: it gives its chunks when the last reference goes). Taken
 * chunks hold old bytes: the arena overwrites every byte it later reads.
 */
export class ArenaPool {
  private readonly free = new Map<number, SharedArrayBuffer[]>();
  private bytes = 0;
  /** Chunks handed out again instead of allocated (for tests and stats). */
  reused = 0;

  /** Keeps at most `maxBytes` bytes of chunks; more given chunks are left to the GC. */
  constructor(readonly maxBytes: number) {}

  /** Bytes of chunks waiting to be reused. */
  get pooledBytes(): number {
    return this.bytes;
  }

  /** A chunk of exactly `size` bytes from the pool, or undefined when none is free. */
  take(size: number): SharedArrayBuffer | undefined {
    const list = this.free.get(size);
    const chunk = list?.pop();
    if (chunk === undefined) return undefined;
    this.bytes -= size;
    this.reused++;
    return chunk;
  }

  /** Offers a chunk no one reads any more; kept while the pool has room. */
  give(chunk: SharedArrayBuffer): void {
    const size = chunk.byteLength;
    if (size === 0 || this.bytes + size > this.maxBytes) return;
    let list = this.free.get(size);
    if (list === undefined) {
      list = [];
      this.free.set(size, list);
    }
    list.push(chunk);
    this.bytes += size;
  }
}
