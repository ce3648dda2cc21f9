/**
 * ArenaPool: memtable arena chunks and image index buffers (SharedArrayBuffers) and tree
 * nodes given back by released memtables, for the next memtables to reuse.
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

/**
 * Arena chunks and image index buffers by byte length, at most maxBytes (the store: one
 * write buffer's worth per memtable that can wait for its flush), and
 * the B+tree nodes of released memtables, at most `maxNodes`.
 *
 * Why nodes too: every node is a JS object with two typed arrays over a 2 KiB buffer, and
 * a memtable lives long enough for its nodes to survive young-generation collections. That
 * survival (~7 MB over a 1M-key load) is what makes V8 grow the main thread's young
 * generation, step by step, to its 16 MiB maximum: with nodes reused, a 1M-key random load
 * kept a 16 MiB heap instead of 41 MiB and its peak RSS fell from ~187 to ~160 MiB.
 * The nodes are memtable.ts's (its `BNode`); only it puts them here and takes them back.
 */
export class ArenaPool extends BufferPool<SharedArrayBuffer> {
  /**
   * Free tree nodes in freeNodes[0, freeNodeCount) (memtable.ts resets a node when it takes
   * it). A stack with its own count, not push/pop: V8 shrinks an array's storage as pop
   * empties it, and growing it again with every memtable's nodes was garbage that lived
   * long enough to be promoted.
   */
  private readonly freeNodes: object[] = [];
  private freeNodeCount = 0;
  /** Nodes kept at most: about what a memtable of maxBytes uses (one per 4 KiB). */
  readonly maxNodes: number;

  constructor(maxBytes: number) {
    super(maxBytes);
    this.maxNodes = Math.max(64, Math.ceil(maxBytes / 4096));
  }

  /** Number of free nodes held. */
  get pooledNodes(): number {
    return this.freeNodeCount;
  }

  /** A free node, or undefined when there is none. */
  takeNode(): object | undefined {
    if (this.freeNodeCount === 0) return undefined;
    const node = this.freeNodes[--this.freeNodeCount];
    this.freeNodes[this.freeNodeCount] = NO_NODE;
    return node;
  }

  /** Keeps a node no tree uses any more, while there is room for it. */
  giveNode(node: object): void {
    if (this.freeNodeCount < this.maxNodes) this.freeNodes[this.freeNodeCount++] = node;
  }
}

/** Fills the free-node stack's empty slots (so that they keep no node alive). */
const NO_NODE: object = {};
