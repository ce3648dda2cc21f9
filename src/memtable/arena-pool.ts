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
import { BufferPool } from "../util/buffer-pool.js";

/** Arena chunks by byte length; at most maxBytes (the store: one write buffer's worth). */
export class ArenaPool extends BufferPool<SharedArrayBuffer> {}
