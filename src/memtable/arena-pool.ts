/**
 * ArenaPool: memtable arena chunks and image index buffers (SharedArrayBuffers) and tree
 * nodes given back by released memtables, for the next memtables to reuse.
 *
 * Why: a flushed memtable's chunks are shared with the compaction worker thread (the
 * flush reads them in place), so their memory is freed only once BOTH threads' garbage
 * collectors have dropped their wrappers, and the worker may not collect for many
 * flushes. Reusing the chunks bounds the arenas at about the live memtables plus this
 * pool, whenever the collectors run. Measurements: docs/benchmarks/memtable.md.
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
 * Why nodes too: every node is a JS object with a typed array (a view of a slab), and
 * a memtable lives long enough for its nodes to survive young-generation collections,
 * which makes V8 grow the main thread's young generation. The nodes are btree.ts's (its
 * `BNode`); only it puts them here and takes them back.
 */
export class ArenaPool extends BufferPool<SharedArrayBuffer> {
  /**
   * Free tree nodes, those that can serve as inner nodes (they carry a children array,
   * btree.ts's newChildren) apart from leaves, so that a leaf taken as an inner node does
   * not get an array of its own.
   */
  private readonly leaves = new NodeStack();
  private readonly inners = new NodeStack();
  /** Nodes kept at most, of both kinds: about what a memtable of maxBytes uses (one per 4 KiB). */
  readonly maxNodes: number;

  constructor(maxBytes: number) {
    super(maxBytes);
    this.maxNodes = Math.max(64, Math.ceil(maxBytes / 4096));
  }

  /** Number of free nodes held. */
  get pooledNodes(): number {
    return this.leaves.count + this.inners.count;
  }

  /**
   * A free node given with the same `inner` flag when there is one, else one of the other
   * kind (btree.ts adapts it), else undefined.
   */
  takeNode(inner: boolean): object | undefined {
    if (inner) return this.inners.pop() ?? this.leaves.pop();
    return this.leaves.pop() ?? this.inners.pop();
  }

  /**
   * Keeps a node no tree uses any more, while there is room. `inner`: it can serve as an
   * inner node as it is (btree.ts: it has a children array).
   */
  giveNode(node: object, inner: boolean): void {
    if (this.pooledNodes < this.maxNodes) (inner ? this.inners : this.leaves).push(node);
  }
}

/**
 * A stack with its own count, not push/pop on an array: V8 shrinks an array's storage as
 * pop empties it, and growing it again would be garbage per memtable.
 */
class NodeStack {
  private readonly nodes: object[] = [];
  count = 0;

  pop(): object | undefined {
    if (this.count === 0) return undefined;
    const node = this.nodes[--this.count];
    this.nodes[this.count] = NO_NODE;
    return node;
  }

  push(node: object): void {
    this.nodes[this.count++] = node;
  }
}

/** Fills a node stack's empty slots (so that they keep no node alive). */
const NO_NODE: object = {};
