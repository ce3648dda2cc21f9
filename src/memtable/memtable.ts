/**
 * The memtable: the sorted in-memory table that receives every write before it reaches an
 * SSTable. Entries are internal keys (user key, sequence, kind) with a value, kept in
 * internal-key order (see src/key/internal-key.ts): user key bytewise ascending, then
 * sequence descending (newest first), then kind descending. Entries are never removed; a
 * delete is an entry of kind KIND_DELETE (a tombstone).
 *
 * Structure: an append-only B+tree, not LevelDB's skip list, because it measured much
 * faster. bench/memtable-micro.ts (random 16-byte keys, 100-byte values, Node 20):
 *
 *                                    get ns/op   insert ns/op   get ns/op   insert ns/op
 *                                    (1M entries)               (20k entries, ~a 4 MiB table)
 *   B+tree, 64 per node, arena           2 210        1 680         460          550
 *   B+tree, 64 per node, entry objects   2 410        2 660         440          530
 *   skip list, height 12, branching 4   22 400       15 000       2 160        1 290
 *   same, Buffer.compare               22 700       18 500       2 580        1 900
 *   skip list, height 20, branching 2   18 200       12 800       2 220        1 390
 *
 * (The two B+tree rows: medians of runs alternated in one session on a loaded 2-vCPU VM,
 * +-15%. The skip list rows are from an earlier, quieter session, in which the entry-object
 * B+tree measured 1 900, 2 000, 340 and 510.) Same session, arena vs entry objects: a
 * 4 MiB table (by approximateBytes) holds 22 300 entries vs 9 620, at 69 vs 321 bytes of
 * real memory per entry beyond its key and value; garbage collection per insert fed with
 * fresh views, as the write path does, 15 vs 107 ns (20k entries) and 380 vs 900 ns (1M);
 * absent-key gets 270 vs 310 ns (20k) and 1 060 vs 2 030 ns (1M). Slower: a full scan that
 * reads key and value, 91 vs 23 ns per entry (20k) and 264 vs 137 (1M), as each position
 * makes two views (a flush, which adds the table builder's cost, measured no slower: ~0.9
 * vs ~1.0 us per entry).
 *
 * The skip list spends its time on cache misses, not on comparisons: each of its ~40 steps
 * per search follows node -> next array -> its elements -> next node -> key view -> key
 * bytes. This tree keeps, per node, the first 16 bytes of every key (as four big-endian
 * int32 words), the key length, the entry's arena position and the sequence in one typed
 * array of 32-byte slots, so a binary search over a node compares integers that sit next
 * to each other in memory and reads the arena only when two keys share their first 16
 * bytes; a search visits 3-5 nodes. Comparing the rest of long keys uses a byte loop: it
 * measured ~2x faster than Buffer.compare for 16-byte keys (30 vs 70 ns). Node capacity
 * 64 measured best overall among 32, 64 and 128 (128: slightly faster gets at 1M entries,
 * slower inserts).
 *
 * Storage: entry bytes live in an append-only arena of large chunks (see Arena): `add`
 * copies the key and value there, and a slot names its entry by a 32-bit arena position,
 * so the table holds no object per entry and keeps no array of its callers. (Before, each
 * entry cost an entry object, a pointer in its node, and the caller's two Uint8Array views,
 * which also kept the caller's whole batch buffer alive.) `get` and iterators hand out
 * views of the arena, made when asked for. Contract: arena bytes are never moved or
 * overwritten while the memtable is referenced, so those views stay valid and unchanged
 * until its last reference goes (`ref` / `unref`: the store holds one, and so does every
 * read view that lists the memtable); callers must not write to them. Then, with an
 * ArenaPool, its chunks and tree nodes go back to the pool for later memtables, and the
 * memtable (and its iterators) may not be used again (copy what must outlive it: the
 * store's reads hand out copies).
 *
 * Iterators over a tree that keeps receiving inserts stay correct: an insert may move
 * entries between slots and nodes, so every insert bumps a version number; an iterator that
 * sees a new version finds its current entry again (O(log n)) before it moves. Entries are
 * never removed, so that entry is always found.
 *
 * Single-threaded: no operation may run while another is in progress (none are async).
 */

import type { ValueKind } from "../key/internal-key.js";
import type { ArenaPool } from "./arena-pool.js";

/**
 * A read-only view of one memtable entry. `key` and `value` are views of the memtable's
 * arena: their bytes do not change until the memtable's last reference goes (the arena is
 * append-only; see Memtable.unref). Callers must not write to them.
 */
export interface MemtableEntry {
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;
}

/**
 * A cursor over the memtable in internal-key order. Positioning methods may leave it
 * invalid (before the first or after the last entry). The accessors and `next`/`prev`
 * REQUIRE `valid()`. The iterator stays correct while entries are added to the memtable
 * between calls: it keeps its position on the entry it was on.
 */
export interface MemtableIterator {
  /** True iff the iterator is positioned on an entry. */
  valid(): boolean;
  /** Positions on the first entry (invalid if the memtable is empty). */
  seekToFirst(): void;
  /** Positions on the last entry (invalid if the memtable is empty). */
  seekToLast(): void;
  /**
   * Positions on the first entry >= the internal key (key, seq, highest kind): the newest
   * version of `key` with sequence <= seq if there is one, else the first entry of the next
   * larger user key; invalid if there is none.
   */
  seek(key: Uint8Array, seq: number): void;
  /**
   * Positions on the last entry <= the internal key (key, seq, lowest kind): the oldest
   * version of `key` with sequence >= seq if there is one, else the last entry of the next
   * smaller user key; invalid if there is none.
   */
  seekForPrev(key: Uint8Array, seq: number): void;
  /** Moves to the following entry. REQUIRES valid(). */
  next(): void;
  /** Moves to the preceding entry. REQUIRES valid(). */
  prev(): void;
  /** The current entry (a stable object: it stays valid after the iterator moves). */
  readonly entry: MemtableEntry;
  /**
   * The current entry's user key and value: views of the arena, created on first access
   * at each position. Like MemtableEntry's, their bytes stay valid after the iterator
   * moves (more than InternalIterator promises).
   */
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;
  /** Nothing to release; present so a memtable iterator is an InternalIterator. */
  close(): void;
}

/**
 * Estimated memory per entry beyond its key and value bytes, for `approximateBytes`.
 * Measured by bench/memtable-micro.ts as the heap + ArrayBuffer growth of a table filled
 * to 4 MiB as the write path fills it (random order, 16-byte keys, 100-byte values, views
 * into per-batch buffers the table does not keep), Node 20: 66-77 bytes, made of
 * - ~46: the entry's 32-byte slot over the average leaf fill (~70% under random inserts;
 *   inserts in key order fill leaves: ~32);
 * - ~8: the nodes' fixed costs (node object, its 2 KiB ArrayBuffer and two views);
 * - ~8: the entry's arena header (kind, value length: 5 bytes) and padding to 4 bytes;
 * - 0-11, ~5 on average: the unused end of the newest 256 KiB chunk, spread over entries.
 * With other shapes, approximateBytes / measured memory was 0.95-1.03 for random inserts of
 * 8-byte keys with empty values up to 40 KB values, and up to 1.3 (an overestimate: the
 * table is flushed early) for small entries inserted in key order.
 * (Before the arena: 320, mostly the entry object and the caller's views it kept alive.)
 */
export const ENTRY_OVERHEAD_BYTES = 72;

/** Maximum entries per leaf and children per inner node. Chosen with bench/memtable-micro.ts. */
const NODE_CAPACITY = 64;
/**
 * Int32 elements per slot: key words 0..3, key length at 4, the entry's arena position at
 * 5 (see Arena), the sequence's high 32 bits at 6 and low 32 bits at 7 (see slotSeq).
 */
const SLOT_INTS = 8;
/** Bytes of a node's slots. */
const NODE_BYTES = NODE_CAPACITY * SLOT_INTS * 4;
/** Nodes whose slots share one ArrayBuffer (see BNode). */
const NODES_PER_SLAB = 32;
/** 2^32: a slot keeps a sequence number (at most 2^53 - 1) as two int32 halves. */
const TWO_POW_32 = 4294967296;
/** Number of leading key bytes held in a slot. */
const PREFIX_BYTES = 16;

// ---- Arena ------------------------------------------------------------------------------

/** Bytes before an entry's key in the arena: its kind (1 byte), its value length (uint32 LE). */
const HEADER_BYTES = 5;
/** Low bits of a position: the entry's offset in its chunk, in 4-byte units. */
const POS_OFFSET_BITS = 16;
const POS_OFFSET_MASK = (1 << POS_OFFSET_BITS) - 1;
/** Entries start at multiples of 4 bytes, so that a 16-bit offset spans a 256 KiB chunk. */
const ALIGN_SHIFT = 2;
/** Size of a full chunk, and the address space each chunk index stands for. */
const MAX_CHUNK_BYTES = 1 << (POS_OFFSET_BITS + ALIGN_SHIFT);
/** Size of a table's first chunk; each new chunk doubles it up to MAX_CHUNK_BYTES. */
const FIRST_CHUNK_BYTES = 16 << 10;
/** Entries larger than this get a chunk of their own (it bounds the space a chunk wastes). */
const BIG_ENTRY_BYTES = MAX_CHUNK_BYTES >>> 3;
/** Chunk indexes are the high 16 bits of a position. */
const MAX_CHUNK_INDEXES = 1 << (32 - POS_OFFSET_BITS);
/** Largest stored entry (header, key, value), so that lengths and offsets fit an int32. */
const MAX_ENTRY_BYTES = 0x7ffffff0;

const NO_BYTES = new Uint8Array(new ArrayBuffer(0));

/** Bytes per entry of an image's index: seq (float64), position and key length (int32). */
const IMAGE_ENTRY_BYTES = 16;
/**
 * Image index buffers are whole multiples of this, so that memtables of about the same
 * number of entries reuse each other's from the pool (which matches exact sizes).
 */
const IMAGE_BUFFER_UNIT = 64 << 10;

/**
 * Append-only storage of entry bytes. An entry is stored as [kind][value length, uint32
 * little-endian][key][value], starting at a multiple of 4 bytes of a chunk, and named by a
 * 32-bit position: chunk index << 16 | offset / 4 (kept in an int32 slot; read it back with
 * `>>>` and `&`). Chunks are SharedArrayBuffers (so a flush on the compaction worker
 * thread reads them in place: Memtable.image) of FIRST_CHUNK_BYTES doubling to
 * MAX_CHUNK_BYTES; an entry over BIG_ENTRY_BYTES gets an exact-size chunk of its own, which
 * takes as many indexes as it spans 256 KiB (their `chunks` elements are NO_BYTES), so the
 * 2^16 indexes address 16 GiB. Bytes once written are never moved or overwritten until
 * `release`, which gives the chunks to the pool (when there is one) for later arenas.
 */
class Arena {
  /** Chunk by index (NO_BYTES at the extra indexes a big entry's chunk takes). */
  readonly chunks: Uint8Array<ArrayBufferLike>[] = [];
  /**
   * chunks[i].buffer, kept apart because making a view from an ArrayBuffer at hand is
   * about twice as fast as reading a typed array's `buffer` first (~20 vs ~40 ns).
   */
  readonly buffers: ArrayBufferLike[] = [];
  /** The chunk receiving small entries, its index, and its bytes in use. */
  private current: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  private currentIndex = 0;
  private used = 0;
  private nextChunkBytes = FIRST_CHUNK_BYTES;
  /** The index buffers of the images made of this arena (see imageBuffer). */
  private readonly imageBuffers: SharedArrayBuffer[] = [];

  constructor(private readonly pool: ArenaPool | undefined) {}

  /**
   * Copies an entry in, its key from keySrc[keyStart, keyStart + keyLen) and its value from
   * valueSrc[valueStart, valueStart + valueLen); returns its position. Throws RangeError if
   * the arena is full.
   */
  append(
    kind: ValueKind,
    keySrc: Uint8Array,
    keyStart: number,
    keyLen: number,
    valueSrc: Uint8Array,
    valueStart: number,
    valueLen: number,
  ): number {
    const size = HEADER_BYTES + keyLen + valueLen;
    if (size > MAX_ENTRY_BYTES) throw new RangeError(`memtable entry of ${size} bytes`);
    const need = (size + 3) & ~3;
    let chunk: Uint8Array;
    let index: number;
    let off: number;
    if (need > BIG_ENTRY_BYTES) {
      const indexes = Math.ceil(need / MAX_CHUNK_BYTES);
      chunk = this.addChunk(need, indexes);
      index = this.chunks.length - indexes;
      off = 0;
    } else {
      if (this.used + need > this.current.length) {
        let bytes = this.nextChunkBytes;
        while (bytes < need) bytes *= 2;
        this.nextChunkBytes = Math.min(bytes * 2, MAX_CHUNK_BYTES);
        this.current = this.addChunk(bytes, 1);
        this.currentIndex = this.chunks.length - 1;
        this.used = 0;
      }
      chunk = this.current;
      index = this.currentIndex;
      off = this.used;
      this.used += need;
    }
    chunk[off] = kind;
    chunk[off + 1] = valueLen;
    chunk[off + 2] = valueLen >>> 8;
    chunk[off + 3] = valueLen >>> 16;
    chunk[off + 4] = valueLen >>> 24;
    copyBytes(keySrc, keyStart, keyLen, chunk, off + HEADER_BYTES);
    copyBytes(valueSrc, valueStart, valueLen, chunk, off + HEADER_BYTES + keyLen);
    return (index << POS_OFFSET_BITS) | (off >>> ALIGN_SHIFT);
  }

  /**
   * Shared memory of `bytes` bytes for a memtable image's index (Memtable.image), from the
   * pool when it has a buffer of that size; given back with the chunks at `release`.
   */
  imageBuffer(bytes: number): SharedArrayBuffer {
    const buffer = this.pool?.take(bytes) ?? new SharedArrayBuffer(bytes);
    this.imageBuffers.push(buffer);
    return buffer;
  }

  /** Appends a chunk of `bytes` bytes that takes `indexes` chunk indexes. */
  private addChunk(bytes: number, indexes: number): Uint8Array<ArrayBufferLike> {
    if (this.chunks.length + indexes > MAX_CHUNK_INDEXES) {
      throw new RangeError("memtable arena full: a memtable holds at most 16 GiB");
    }
    // Shared memory: a flush on the worker thread reads the chunks in place (no copy).
    const buffer =
      (indexes === 1 ? this.pool?.take(bytes) : undefined) ?? new SharedArrayBuffer(bytes);
    const chunk = new Uint8Array(buffer);
    this.chunks.push(chunk);
    this.buffers.push(buffer);
    for (let i = 1; i < indexes; i++) {
      this.chunks.push(NO_BYTES);
      this.buffers.push(NO_BYTES.buffer);
    }
    return chunk;
  }

  /**
   * Gives the chunks (those of small entries: a big entry's exact-size chunk would rarely
   * fit another) and the image index buffers to the pool, and forgets them. REQUIRES
   * nothing reads them again.
   */
  release(): void {
    const pool = this.pool;
    if (pool !== undefined) {
      for (const buffer of this.buffers) {
        if (buffer.byteLength <= MAX_CHUNK_BYTES && buffer instanceof SharedArrayBuffer) {
          pool.give(buffer);
        }
      }
      for (const buffer of this.imageBuffers) pool.give(buffer);
    }
    this.chunks.length = 0;
    this.buffers.length = 0;
    this.imageBuffers.length = 0;
    this.current = new Uint8Array(0);
    this.used = 0;
  }
}

/**
 * Copies src[from, from + n) to `dst` at `at`. A byte loop for short ranges, where it beats
 * `set`'s call; `set` for longer ones, through a view only when the range is part of `src`
 * (a view is ~100 bytes of garbage, worth it only where the copy itself costs more).
 */
function copyBytes(src: Uint8Array, from: number, n: number, dst: Uint8Array, at: number): void {
  if (n > 32 && (n === src.length || n > COPY_LOOP_MAX_BYTES)) {
    dst.set(n === src.length ? src : src.subarray(from, from + n), at);
    return;
  }
  const d = at - from;
  for (let i = from; i < from + n; i++) dst[i + d] = src[i]!;
}

/** Longest part of an array that copyBytes copies with a loop rather than a view and `set`. */
const COPY_LOOP_MAX_BYTES = 256;

/** Chunk of the entry at arena position `pos`. */
function chunkOf(chunks: Uint8Array<ArrayBufferLike>[], pos: number): Uint8Array<ArrayBufferLike> {
  return chunks[pos >>> POS_OFFSET_BITS]!;
}

/** Offset in its chunk of the key of the entry at arena position `pos`. */
function keyStartOf(pos: number): number {
  return ((pos & POS_OFFSET_MASK) << ALIGN_SHIFT) + HEADER_BYTES;
}

/** Value length of the entry whose key starts at `keyStart` of `chunk`. */
function valueLengthAt(chunk: Uint8Array, keyStart: number): number {
  return (
    (chunk[keyStart - 4]! |
      (chunk[keyStart - 3]! << 8) |
      (chunk[keyStart - 2]! << 16) |
      (chunk[keyStart - 1]! << 24)) >>>
    0
  );
}

/**
 * An entry handed out by `get` or an iterator: a snapshot of where the entry lies in the
 * arena. The key and value views are made on first access and then kept.
 */
class ArenaEntry implements MemtableEntry {
  readonly seq: number;
  readonly kind: ValueKind;
  private readonly buffer: ArrayBufferLike;
  private readonly keyStart: number;
  private readonly keyLen: number;
  private readonly valueLen: number;
  private keyView: Uint8Array | null = null;
  private valueView: Uint8Array | null = null;

  /** The entry whose key is at `keyStart` of `chunk` (whose buffer is `buffer`). */
  constructor(
    chunk: Uint8Array,
    buffer: ArrayBufferLike,
    keyStart: number,
    keyLen: number,
    seq: number,
  ) {
    this.seq = seq;
    this.kind = chunk[keyStart - HEADER_BYTES] as ValueKind;
    this.buffer = buffer;
    this.keyStart = keyStart;
    this.keyLen = keyLen;
    this.valueLen = valueLengthAt(chunk, keyStart);
  }

  get key(): Uint8Array {
    if (this.keyView === null)
      this.keyView = new Uint8Array(this.buffer, this.keyStart, this.keyLen);
    return this.keyView;
  }

  get value(): Uint8Array {
    if (this.valueView === null) {
      this.valueView = new Uint8Array(this.buffer, this.keyStart + this.keyLen, this.valueLen);
    }
    return this.valueView;
  }
}

// ---- B+tree -----------------------------------------------------------------------------

const NO_CHILDREN: Array<BNode | null> = [];

/**
 * An inner node's children array: room for NODE_CAPACITY + 1 (a full node plus the child
 * being inserted before it splits), allocated once; children[0, n) are the node's, the
 * rest stale. Fixed-size, because arrays grown by splice and cut by splice were reallocated
 * with every split, and lived long enough to be promoted.
 */
function newChildren(): Array<BNode | null> {
  const children: Array<BNode | null> = [];
  for (let i = 0; i <= NODE_CAPACITY; i++) children.push(null);
  return children;
}

/**
 * A tree node. Slot j describes, in a leaf, entry j; in an inner node, the smallest entry
 * of children[j] (slot 0 of an inner node is not used for searching, as the leftmost
 * subtree's minimum can decrease). A slot names its entry's bytes by arena position, so a
 * node holds no per-entry objects. `n` is the number of entries (leaf) or children
 * (inner). Leaves are linked in key order by `next`/`prev`.
 */
class BNode {
  /** Fixed for a node's life in one tree (a pooled node may change it when reused). */
  leaf: boolean;
  n: number;
  /**
   * The slots: a view of a slab shared with other nodes, so that a node costs one typed
   * array and no ArrayBuffer object of its own (with a buffer and a float64 view of it for
   * the sequences, a node took ~360 bytes of V8 heap, ~180 now; the first memtables of a
   * load make ~1,000 nodes, all of them promoted out of the young generation).
   */
  readonly ints: Int32Array;
  /** Inner nodes: children[0, n) (see newChildren). Leaves: NO_CHILDREN, or an old array. */
  children: Array<BNode | null>;
  next: BNode | null;
  prev: BNode | null;

  constructor(leaf: boolean) {
    this.leaf = leaf;
    this.n = 0;
    if (slabUsed === NODES_PER_SLAB) {
      slab = new ArrayBuffer(NODES_PER_SLAB * NODE_BYTES);
      slabUsed = 0;
    }
    this.ints = new Int32Array(slab, slabUsed++ * NODE_BYTES, NODE_CAPACITY * SLOT_INTS);
    this.children = leaf ? NO_CHILDREN : newChildren();
    this.next = null;
    this.prev = null;
  }
}

/**
 * The slab new nodes take their slots from, and how many have. A slab's memory is freed
 * when all its nodes are (nodes are pooled and reused, so few ever are).
 */
let slab = new ArrayBuffer(0);
let slabUsed = NODES_PER_SLAB;

/** Sequence number of slot j of a node (as the int32 pair writeTargetSlot stored). */
function slotSeq(ints: Int32Array, j: number): number {
  const o = j * SLOT_INTS;
  return ints[o + 6]! * TWO_POW_32 + (ints[o + 7]! >>> 0);
}

/** A node: a pooled one (emptied) when the pool has one, else a new one. */
function newNode(pool: ArenaPool | undefined, leaf: boolean): BNode {
  const node = pool?.takeNode(!leaf) as BNode | undefined;
  if (node === undefined) return new BNode(leaf);
  // Stale slots need no clearing: a slot is written whole before it is counted in `n`.
  node.leaf = leaf;
  node.n = 0;
  node.next = null;
  node.prev = null;
  // A node that was inner keeps its children array (stale slots past n are never read),
  // also while it serves as a leaf, so that it need not be allocated again.
  if (!leaf && node.children === NO_CHILDREN) node.children = newChildren();
  return node;
}

/** Inserts `child` at `at` into children[0, n), shifting the rest right (room for n + 1). */
function insertAt(children: Array<BNode | null>, n: number, at: number, child: BNode): void {
  for (let i = n; i > at; i--) children[i] = children[i - 1]!;
  children[at] = child;
}

/** Gives the nodes of the subtree at `node` to the pool, while it has room. */
function recycleNodes(pool: ArenaPool, node: BNode): void {
  if (!node.leaf) {
    const children = node.children;
    for (let i = 0; i < node.n; i++) {
      recycleNodes(pool, children[i]!);
      children[i] = null;
    }
  }
  pool.giveNode(node, node.children !== NO_CHILDREN);
}

/**
 * Big-endian int32 of k[o, o+4), bytes at or past `end` read as zero, offset by 2^31 so
 * that signed comparison of words is unsigned comparison of the bytes.
 */
function keyWord(k: Uint8Array, o: number, end: number): number {
  let w = 0;
  for (let i = o; i < o + 4; i++) w = (w << 8) | (i < end ? k[i]! : 0);
  return w ^ 0x80000000;
}

// The search target, set by setTarget before a search: its key is tKey[tStart, tStart +
// tLen) (the caller's array, or the arena), and tChunks is the arena of the tree searched.
// Module state, not per-tree, is safe because searches are synchronous and never nested.
// Public operations reset tKey and tChunks when done, so that module state keeps neither a
// caller's array nor a dropped memtable's arena alive.
let tw0 = 0;
let tw1 = 0;
let tw2 = 0;
let tw3 = 0;
let tLen = 0;
let tSeq = 0;
let tKey: Uint8Array = NO_BYTES;
let tStart = 0;
const NO_CHUNKS: Uint8Array<ArrayBufferLike>[] = [];
let tChunks = NO_CHUNKS;
/** Arena position written into new slots by writeTargetSlot. */
let tPos = 0;

function setTarget(
  chunks: Uint8Array<ArrayBufferLike>[],
  key: Uint8Array,
  start: number,
  len: number,
  seq: number,
): void {
  const s = start;
  if (len >= PREFIX_BYTES) {
    tw0 = ((key[s]! << 24) | (key[s + 1]! << 16) | (key[s + 2]! << 8) | key[s + 3]!) ^ 0x80000000;
    tw1 =
      ((key[s + 4]! << 24) | (key[s + 5]! << 16) | (key[s + 6]! << 8) | key[s + 7]!) ^ 0x80000000;
    tw2 =
      ((key[s + 8]! << 24) | (key[s + 9]! << 16) | (key[s + 10]! << 8) | key[s + 11]!) ^ 0x80000000;
    tw3 =
      ((key[s + 12]! << 24) | (key[s + 13]! << 16) | (key[s + 14]! << 8) | key[s + 15]!) ^
      0x80000000;
  } else {
    const end = s + len;
    tw0 = keyWord(key, s, end);
    tw1 = keyWord(key, s + 4, end);
    tw2 = keyWord(key, s + 8, end);
    tw3 = keyWord(key, s + 12, end);
  }
  tLen = len;
  tSeq = seq;
  tKey = key;
  tStart = start;
  tChunks = chunks;
}

/** Forgets the target's arrays (see the module state above). */
function clearTarget(): void {
  tKey = NO_BYTES;
  tChunks = NO_CHUNKS;
}

/** Writes the target's words, length, arena position and sequence into slot j of `node`. */
function writeTargetSlot(node: BNode, j: number): void {
  const ints = node.ints;
  const o = j * SLOT_INTS;
  ints[o] = tw0;
  ints[o + 1] = tw1;
  ints[o + 2] = tw2;
  ints[o + 3] = tw3;
  ints[o + 4] = tLen;
  ints[o + 5] = tPos;
  ints[o + 6] = Math.floor(tSeq / TWO_POW_32);
  ints[o + 7] = tSeq % TWO_POW_32;
}

/** Compares the user key in slot j of a node with the target's user key. */
function compareSlotKey(ints: Int32Array, j: number): number {
  const o = j * SLOT_INTS;
  let w = ints[o]!;
  if (w !== tw0) return w < tw0 ? -1 : 1;
  w = ints[o + 1]!;
  if (w !== tw1) return w < tw1 ? -1 : 1;
  w = ints[o + 2]!;
  if (w !== tw2) return w < tw2 ? -1 : 1;
  w = ints[o + 3]!;
  if (w !== tw3) return w < tw3 ? -1 : 1;
  return compareSlotTail(ints, j);
}

/**
 * Binary search over slots [lo, node.n): the first slot whose internal key is greater than
 * the target, or >= it when `orEqual`; node.n if none. The comparison is written out here,
 * with the target in locals, because this loop is the memtable's hot path.
 */
function searchSlots(node: BNode, lo: number, orEqual: boolean): number {
  const ints = node.ints;
  const t0 = tw0;
  const t1 = tw1;
  const t2 = tw2;
  const t3 = tw3;
  let hi = node.n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const o = mid * SLOT_INTS;
    // Word differences are exact: int32 - int32 fits a double.
    let c = ints[o]! - t0;
    if (c === 0) {
      c = ints[o + 1]! - t1;
      if (c === 0) {
        c = ints[o + 2]! - t2;
        if (c === 0) {
          c = ints[o + 3]! - t3;
          if (c === 0) {
            c = compareSlotTail(ints, mid);
            if (c === 0) {
              const s = ints[o + 6]! * TWO_POW_32 + (ints[o + 7]! >>> 0);
              c = s > tSeq ? -1 : s < tSeq ? 1 : 0;
            }
          }
        }
      }
    }
    if (c < 0 || (c === 0 && !orEqual)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Key comparison of slot j with the target when their four words are equal. */
function compareSlotTail(ints: Int32Array, j: number): number {
  const o = j * SLOT_INTS;
  const len = ints[o + 4]!;
  // Equal words: if both keys fit in the prefix, the shorter one is a prefix of the other
  // (the longer one's extra bytes equal the zero padding).
  if (len <= PREFIX_BYTES && tLen <= PREFIX_BYTES) return len - tLen;
  const pos = ints[o + 5]!;
  const a = chunkOf(tChunks, pos);
  const aStart = keyStartOf(pos);
  // The first PREFIX_BYTES bytes agree (equal words; a key shorter than that is a prefix
  // of the other, and the loop below does not run). Compare the rest, then the lengths.
  const n = len < tLen ? len : tLen;
  const b = tKey;
  const d0 = tStart - aStart;
  for (let i = aStart + PREFIX_BYTES; i < aStart + n; i++) {
    const d = a[i]! - b[i + d0]!;
    if (d !== 0) return d;
  }
  return len - tLen;
}

/** Child index of an inner node whose subtree holds the target's place: last slot <= target. */
function childIndex(node: BNode): number {
  return searchSlots(node, 1, false) - 1;
}

/** First slot of a leaf whose entry is >= the target; `n` if none. */
function leafLowerBound(leaf: BNode): number {
  return searchSlots(leaf, 0, true);
}

/** Copies slots [from, to) of `src` to slots [at, ...) of `dst` (distinct nodes). */
function copySlots(src: BNode, from: number, to: number, dst: BNode, at: number): void {
  const s = src.ints;
  const d = dst.ints;
  let o = at * SLOT_INTS;
  if (to - from > 3) {
    d.set(s.subarray(from * SLOT_INTS, to * SLOT_INTS), o);
    return;
  }
  for (let i = from * SLOT_INTS; i < to * SLOT_INTS; i++) d[o++] = s[i]!;
}

/**
 * Moves slots [j, n) of `node` up by one, freeing slot j. copyWithin (a memmove) beyond a
 * few slots: a random insert moves ~22 slots on average, ~35 ns that way against ~150-200
 * ns for the element loop (which wins below ~3 slots).
 */
function openSlot(node: BNode, j: number): void {
  const ints = node.ints;
  const from = j * SLOT_INTS;
  const end = node.n * SLOT_INTS;
  if (end - from > 3 * SLOT_INTS) {
    ints.copyWithin(from + SLOT_INTS, from, end);
    return;
  }
  for (let i = end - 1; i >= from; i--) ints[i + SLOT_INTS] = ints[i]!;
}

/** The B+tree and the arena of its entries. Not exported: Memtable and its iterators share it. */
class Tree {
  readonly arena: Arena;
  root: BNode;
  /** The leftmost leaf; never replaced (splits keep the lower half in place). */
  readonly firstLeaf: BNode;
  lastLeaf: BNode;
  /** Incremented by every insert; iterators use it to notice that slots may have moved. */
  version = 0;
  /** Scratch route for inserts: pathNodes[d] is the inner node at depth d, pathIdx[d] the child taken. */
  private readonly pathNodes: BNode[] = [];
  private readonly pathIdx: number[] = [];

  /** Set by `release`: the nodes may belong to another tree by now. */
  released = false;

  constructor(private readonly pool: ArenaPool | undefined) {
    this.arena = new Arena(pool);
    this.root = newNode(pool, true);
    this.firstLeaf = this.root;
    this.lastLeaf = this.root;
  }

  /** Gives the arena's chunks and the nodes to the pool. REQUIRES nothing uses the tree again. */
  release(): void {
    this.released = true;
    this.arena.release();
    if (this.pool !== undefined) recycleNodes(this.pool, this.root);
  }

  /**
   * Inserts the target entry. REQUIRES: setTarget was called with the entry's key and seq,
   * tPos is its arena position, and no equal entry exists.
   */
  insert(): void {
    let node = this.root;
    let depth = 0;
    while (!node.leaf) {
      const ci = childIndex(node);
      this.pathNodes[depth] = node;
      this.pathIdx[depth] = ci;
      depth++;
      node = node.children[ci]!;
    }
    const j = leafLowerBound(node);
    if (node.n < NODE_CAPACITY) {
      openSlot(node, j);
      writeTargetSlot(node, j);
      node.n++;
    } else {
      this.splitLeafAndInsert(node, j, depth);
    }
    this.version++;
  }

  /**
   * Positions `cursor` on the first entry >= the target (REQUIRES setTarget), or sets
   * cursor.node to null if there is none.
   */
  lowerBound(cursor: Cursor): void {
    let node = this.root;
    while (!node.leaf) node = node.children[childIndex(node)]!;
    const j = leafLowerBound(node);
    if (j < node.n) {
      cursor.node = node;
      cursor.idx = j;
    } else {
      cursor.node = node.next;
      cursor.idx = 0;
    }
  }

  /**
   * Splits the full leaf `leaf` and inserts the target at slot j of the old contents.
   * pathNodes/pathIdx[0 .. depth) hold the route from the root.
   */
  private splitLeafAndInsert(leaf: BNode, j: number, depth: number): void {
    const right = newNode(this.pool, true);
    // Appending past the last leaf (ascending inserts) starts an empty leaf, so that
    // sequential loads fill leaves completely; otherwise split in half.
    const mid = j === NODE_CAPACITY && leaf.next === null ? NODE_CAPACITY : NODE_CAPACITY >>> 1;
    copySlots(leaf, mid, NODE_CAPACITY, right, 0);
    right.n = NODE_CAPACITY - mid;
    leaf.n = mid;
    const target = j <= mid && mid < NODE_CAPACITY ? leaf : right;
    const tj = target === leaf ? j : j - mid;
    openSlot(target, tj);
    writeTargetSlot(target, tj);
    target.n++;

    right.prev = leaf;
    right.next = leaf.next;
    if (leaf.next !== null) leaf.next.prev = right;
    else this.lastLeaf = right;
    leaf.next = right;
    this.insertChild(right, depth - 1);
  }

  /**
   * Inserts `child` (whose slot 0 holds its smallest entry) into the inner node at path
   * depth `depth`, just after the child the route went through; grows a new root at -1.
   */
  private insertChild(child: BNode, depth: number): void {
    if (depth < 0) {
      const old = this.root;
      const root = newNode(this.pool, false);
      copySlots(old, 0, 1, root, 0);
      copySlots(child, 0, 1, root, 1);
      root.children[0] = old;
      root.children[1] = child;
      root.n = 2;
      this.root = root;
      return;
    }
    const parent = this.pathNodes[depth]!;
    const at = this.pathIdx[depth]! + 1;
    if (parent.n < NODE_CAPACITY) {
      openSlot(parent, at);
      copySlots(child, 0, 1, parent, at);
      insertAt(parent.children, parent.n, at, child);
      parent.n++;
      return;
    }
    const right = newNode(this.pool, false);
    const mid = NODE_CAPACITY >>> 1;
    copySlots(parent, mid, NODE_CAPACITY, right, 0);
    const from = parent.children;
    const to = right.children;
    for (let i = mid; i < NODE_CAPACITY; i++) {
      to[i - mid] = from[i]!;
      from[i] = null;
    }
    right.n = NODE_CAPACITY - mid;
    parent.n = mid;
    const target = at <= mid ? parent : right;
    const ta = target === parent ? at : at - mid;
    openSlot(target, ta);
    copySlots(child, 0, 1, target, ta);
    insertAt(target.children, target.n, ta, child);
    target.n++;
    this.insertChild(right, depth - 1);
  }
}

export class Memtable {
  private readonly tree: Tree;
  private entryCount = 0;
  private bytes = 0;
  /** References (see the module comment); 0: released, unusable. */
  private refs = 1;

  /**
   * A memtable with one reference (its creator's). With a pool, its arena takes chunks
   * from it and gives them back when the last reference goes.
   */
  constructor(pool?: ArenaPool) {
    this.tree = new Tree(pool);
  }

  /** Takes another reference: the arena stays as it is until every one is dropped. */
  ref(): this {
    this.checkLive("ref");
    this.refs++;
    return this;
  }

  /**
   * Drops a reference. The last one releases the memtable: its arena's chunks go to the
   * pool and may be overwritten by another memtable, so every view of its keys and values
   * is void, and any further use of it throws.
   */
  unref(): void {
    this.checkLive("unref");
    if (--this.refs === 0) this.tree.release();
  }

  /** True until the last reference is dropped. */
  get live(): boolean {
    return this.refs > 0;
  }

  private checkLive(what: string): void {
    if (this.refs <= 0) throw new Error(`Memtable.${what} after its release`);
  }

  /** Number of entries. */
  get count(): number {
    return this.entryCount;
  }

  /**
   * Estimated memory held: the sum of key and value lengths plus ENTRY_OVERHEAD_BYTES per
   * entry. The engine compares it with its write buffer size to decide when to flush.
   */
  get approximateBytes(): number {
    return this.bytes;
  }

  /**
   * Adds an entry, copying the bytes of `key` and `value` into the arena: the memtable
   * keeps no reference to either array, so the caller may reuse them once add returns.
   * REQUIRES: no entry with the same key and seq exists (the caller assigns each write a
   * new sequence number); 0 <= seq <= MAX_SEQUENCE.
   */
  add(seq: number, kind: ValueKind, key: Uint8Array, value: Uint8Array): void {
    if (this.refs <= 0) this.checkLive("add");
    const pos = this.tree.arena.append(kind, key, 0, key.length, value, 0, value.length);
    this.insertAt(pos, seq, key.length, value.length);
  }

  /**
   * `add` of the entry whose key is src[keyStart, keyStart + keyLen) and value
   * src[valueStart, valueStart + valueLen) (e.g. an encoded batch: see visitBatch), without
   * views of them. Same contract as `add`.
   */
  addFrom(
    seq: number,
    kind: ValueKind,
    src: Uint8Array,
    keyStart: number,
    keyLen: number,
    valueStart: number,
    valueLen: number,
  ): void {
    if (this.refs <= 0) this.checkLive("add");
    const pos = this.tree.arena.append(kind, src, keyStart, keyLen, src, valueStart, valueLen);
    this.insertAt(pos, seq, keyLen, valueLen);
  }

  /** Inserts the entry just appended to the arena at `pos` into the tree. */
  private insertAt(pos: number, seq: number, keyLen: number, valueLen: number): void {
    const chunks = this.tree.arena.chunks;
    // The target is the arena's copy, so the search never holds the caller's array.
    setTarget(chunks, chunkOf(chunks, pos), keyStartOf(pos), keyLen, seq);
    tPos = pos;
    this.tree.insert();
    clearTarget();
    this.entryCount++;
    this.bytes += keyLen + valueLen + ENTRY_OVERHEAD_BYTES;
  }

  /**
   * The newest entry for `key` with sequence <= seq, or undefined if there is none. A
   * tombstone (KIND_DELETE) is returned like any entry; the caller interprets `kind`.
   * The entry's key and value are views of the arena (see MemtableEntry).
   */
  get(key: Uint8Array, seq: number): MemtableEntry | undefined {
    if (this.refs <= 0) this.checkLive("get");
    const arena = this.tree.arena;
    const chunks = arena.chunks;
    setTarget(chunks, key, 0, key.length, seq);
    let node = this.tree.root;
    while (!node.leaf) node = node.children[childIndex(node)]!;
    let j = leafLowerBound(node);
    if (j === node.n) {
      const next = node.next;
      if (next === null) {
        clearTarget();
        return undefined;
      }
      node = next;
      j = 0;
    }
    const ints = node.ints;
    const found = compareSlotKey(ints, j) === 0;
    clearTarget();
    if (!found) return undefined;
    const o = j * SLOT_INTS;
    const pos = ints[o + 5]!;
    const ci = pos >>> POS_OFFSET_BITS;
    return new ArenaEntry(
      chunks[ci]!,
      arena.buffers[ci]!,
      keyStartOf(pos),
      ints[o + 4]!,
      slotSeq(ints, j),
    );
  }

  /** A new iterator, initially invalid. */
  iterator(): MemtableIterator {
    this.checkLive("iterator");
    return new TreeIterator(this.tree);
  }

  /**
   * The entries in internal-key order as plain data (see MemtableImage), for building a
   * table on another thread: the arena's chunks are SharedArrayBuffers, and so is the
   * memory of the three index arrays (16 bytes per entry, one buffer from the arena pool:
   * a new one per flush, freed only when both threads' collectors drop it, was ~370 KB of
   * churn per 4 MiB memtable), so postMessage shares them all (no copy). REQUIRES the
   * memtable is immutable (the image does not follow later adds) and keeps a reference
   * until the image's reader is done (a released arena's buffers are reused).
   */
  image(): MemtableImage {
    this.checkLive("image");
    const n = this.entryCount;
    const bytes =
      Math.max(1, Math.ceil((n * IMAGE_ENTRY_BYTES) / IMAGE_BUFFER_UNIT)) * IMAGE_BUFFER_UNIT;
    const buffer = this.tree.arena.imageBuffer(bytes);
    const seqs = new Float64Array(buffer, 0, n);
    const positions = new Int32Array(buffer, 8 * n, n);
    const keyLengths = new Int32Array(buffer, 12 * n, n);
    let at = 0;
    for (let node: BNode | null = this.tree.firstLeaf; node !== null; node = node.next) {
      const ints = node.ints;
      for (let j = 0; j < node.n; j++) {
        keyLengths[at] = ints[j * SLOT_INTS + 4]!;
        positions[at] = ints[j * SLOT_INTS + 5]!;
        seqs[at] = slotSeq(ints, j);
        at++;
      }
    }
    if (at !== n) throw new Error(`memtable image: ${at} entries in the leaves, ${n} counted`);
    return { buffers: [...this.tree.arena.buffers], positions, keyLengths, seqs };
  }
}

/**
 * A memtable's entries in internal-key order as plain data that can cross to a worker
 * thread: entry i is at arena position positions[i] (chunk index << 16 | offset / 4, in
 * buffers[chunk index]) laid out as [kind][value length, uint32 LE][key][value], its key
 * keyLengths[i] bytes long, its sequence seqs[i]. Read it with MemtableImageIterator.
 * Made by Memtable.image, all of it is shared memory (the three arrays view one buffer),
 * valid while the memtable is referenced.
 */
export interface MemtableImage {
  readonly buffers: ArrayBufferLike[];
  readonly positions: Int32Array;
  readonly keyLengths: Int32Array;
  readonly seqs: Float64Array;
}

/** Offset in its chunk of the key of the entry at arena position `pos` (image readers). */
export function imageKeyStart(pos: number): number {
  return keyStartOf(pos);
}

/** Chunk index of arena position `pos` (image readers). */
export function imageChunkIndex(pos: number): number {
  return pos >>> POS_OFFSET_BITS;
}

/** Value length of the entry whose key starts at `keyStart` of `chunk` (image readers). */
export function imageValueLength(chunk: Uint8Array, keyStart: number): number {
  return valueLengthAt(chunk, keyStart);
}

/** A position: a leaf and a slot in it, or node === null for none. */
interface Cursor {
  node: BNode | null;
  idx: number;
}

class TreeIterator implements MemtableIterator, Cursor {
  node: BNode | null = null;
  idx = 0;
  private version = 0;
  private readonly tree: Tree;
  // The current entry, copied from its slot when the iterator lands on it: the accessors
  // read these, never the slot, which a later insert may move.
  private positioned = false;
  private chunk: Uint8Array = NO_BYTES;
  private buffer: ArrayBufferLike = NO_BYTES.buffer;
  private keyStart = 0;
  private keyLen = 0;
  private curSeq = 0;
  private keyView: Uint8Array | null = null;
  private valueView: Uint8Array | null = null;
  private current: ArenaEntry | null = null;

  constructor(tree: Tree) {
    this.tree = tree;
  }

  valid(): boolean {
    return this.positioned;
  }

  seekToFirst(): void {
    const first = this.tree.firstLeaf;
    this.setPosition(first.n > 0 ? first : null, 0);
  }

  seekToLast(): void {
    const last = this.tree.lastLeaf;
    this.setPosition(last.n > 0 ? last : null, last.n - 1);
  }

  seek(key: Uint8Array, seq: number): void {
    if (this.tree.released) this.throwReleased();
    setTarget(this.tree.arena.chunks, key, 0, key.length, seq);
    this.tree.lowerBound(this);
    clearTarget();
    this.setPosition(this.node, this.idx);
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    // The last entry <= (key, seq, lowest kind) is the one before the first entry
    // > (key, seq, lowest kind), which is the first entry >= (key, seq - 1, highest kind).
    if (this.tree.released) this.throwReleased();
    setTarget(this.tree.arena.chunks, key, 0, key.length, seq - 1);
    this.tree.lowerBound(this);
    clearTarget();
    if (this.node === null) {
      this.seekToLast();
      return;
    }
    this.setPosition(this.node, this.idx);
    this.prevPosition();
  }

  next(): void {
    this.sync();
    const node = this.node!;
    if (this.idx + 1 < node.n) this.setPosition(node, this.idx + 1);
    else this.setPosition(node.next, 0);
  }

  prev(): void {
    this.sync();
    this.prevPosition();
  }

  get entry(): MemtableEntry {
    if (this.current === null) {
      this.current = new ArenaEntry(
        this.chunk,
        this.buffer,
        this.keyStart,
        this.keyLen,
        this.curSeq,
      );
    }
    return this.current;
  }

  get key(): Uint8Array {
    if (this.keyView === null) {
      this.keyView = new Uint8Array(this.buffer, this.keyStart, this.keyLen);
    }
    return this.keyView;
  }

  get seq(): number {
    return this.curSeq;
  }

  get kind(): ValueKind {
    return this.chunk[this.keyStart - HEADER_BYTES] as ValueKind;
  }

  get value(): Uint8Array {
    if (this.valueView === null) {
      const start = this.keyStart + this.keyLen;
      this.valueView = new Uint8Array(this.buffer, start, valueLengthAt(this.chunk, this.keyStart));
    }
    return this.valueView;
  }

  /** Nothing to release: the memtable lives as long as someone references it. */
  close(): void {}

  private throwReleased(): never {
    throw new Error("memtable iterator used after the memtable's release");
  }

  /** REQUIRES: positioned (node !== null) and in sync with the table. */
  private prevPosition(): void {
    const node = this.node!;
    if (this.idx > 0) {
      this.setPosition(node, this.idx - 1);
      return;
    }
    const p = node.prev;
    this.setPosition(p, p === null ? 0 : p.n - 1);
  }

  private setPosition(node: BNode | null, idx: number): void {
    if (this.tree.released) this.throwReleased();
    this.node = node;
    this.idx = idx;
    this.version = this.tree.version;
    this.keyView = null;
    this.valueView = null;
    this.current = null;
    if (node === null) {
      this.positioned = false;
      return;
    }
    this.positioned = true;
    const o = idx * SLOT_INTS;
    const ints = node.ints;
    const pos = ints[o + 5]!;
    const arena = this.tree.arena;
    this.chunk = arena.chunks[pos >>> POS_OFFSET_BITS]!;
    this.buffer = arena.buffers[pos >>> POS_OFFSET_BITS]!;
    this.keyStart = keyStartOf(pos);
    this.keyLen = ints[o + 4]!;
    this.curSeq = slotSeq(ints, idx);
  }

  /** If entries were added since the position was taken, finds the current entry again. */
  private sync(): void {
    if (this.tree.released) this.throwReleased();
    if (this.version === this.tree.version) return;
    setTarget(this.tree.arena.chunks, this.chunk, this.keyStart, this.keyLen, this.curSeq);
    this.tree.lowerBound(this);
    clearTarget();
    this.version = this.tree.version;
  }
}
