/**
 * The memtable's B+tree: an append-only tree over internal keys whose entries live in an
 * arena (arena.ts). Order: user key bytewise ascending, then sequence descending, then
 * kind descending (src/key/internal-key.ts); a sequence identifies an entry with its user
 * key, so equal (key, seq) pairs never occur.
 *
 * A node keeps one typed array of 32-byte slots, one per entry (leaf) or child (inner
 * node): the first PREFIX_BYTES bytes of the key as four big-endian int32 words, the key
 * length, the entry's arena position and the sequence as two int32 halves. A binary search
 * over a node compares integers next to each other in memory and reads the arena only when
 * two keys share their first 16 bytes. Leaves are linked in key order. Nothing is ever
 * removed: an insert may move slots between nodes (splits), never drop one.
 *
 * Searches take their target from module state (setTarget / clearTarget): one target at a
 * time, so operations are synchronous and never nested, and every public operation of the
 * memtable clears it when done (so module state keeps neither a caller's array nor a
 * dropped arena alive).
 *
 * Not exported beyond src/memtable: Memtable and its iterators share a Tree.
 */

import { Arena, chunkIndexOf, keyStartOf, NO_BYTES } from "./arena.js";
import type { ArenaPool } from "./arena-pool.js";
import { ArenaEntry } from "./memtable-entry.js";

/** Maximum entries per leaf and children per inner node. */
const NODE_CAPACITY = 64;
/**
 * Int32 elements per slot: key words 0..3, key length at 4, the entry's arena position at
 * 5, the sequence's high 32 bits at 6 and low 32 bits at 7 (see slotSeq).
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

const NO_CHILDREN: Array<BNode | null> = [];

/**
 * An inner node's children array: room for NODE_CAPACITY + 1 (a full node plus the child
 * being inserted before it splits), allocated once; children[0, n) are the node's, the
 * rest stale. Fixed-size, so that splits never reallocate it.
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
export class BNode {
  /** Fixed for a node's life in one tree (a pooled node may change it when reused). */
  leaf: boolean;
  n: number;
  /**
   * The slots: a view of a slab shared with other nodes, so that a node costs one typed
   * array and no ArrayBuffer object of its own.
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

/** A position: a leaf and a slot in it, or node === null for none. */
export interface Cursor {
  node: BNode | null;
  idx: number;
}

/** Sequence number of slot j of a node (as the int32 pair writeTargetSlot stored). */
export function slotSeq(ints: Int32Array, j: number): number {
  const o = j * SLOT_INTS;
  return ints[o + 6]! * TWO_POW_32 + (ints[o + 7]! >>> 0);
}

/** Arena position of the entry of slot j. */
export function slotPosition(ints: Int32Array, j: number): number {
  return ints[j * SLOT_INTS + 5]!;
}

/** Key length of the entry of slot j. */
export function slotKeyLength(ints: Int32Array, j: number): number {
  return ints[j * SLOT_INTS + 4]!;
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
/** Arena position written into new slots by writeTargetSlot (set by Tree.insert). */
let tPos = 0;

/**
 * Sets the search target: the internal key (key[start, start + len), seq, highest kind),
 * searched in the tree whose arena chunks are `chunks`. Clear it with clearTarget.
 */
export function setTarget(
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

/** Forgets the target's arrays (see the module comment). */
export function clearTarget(): void {
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

/**
 * Key comparison of slot j with the target when their four words are equal; the rest of
 * long keys is compared with a byte loop (faster than Buffer.compare for short keys).
 */
function compareSlotTail(ints: Int32Array, j: number): number {
  const o = j * SLOT_INTS;
  const len = ints[o + 4]!;
  // Equal words: if both keys fit in the prefix, the shorter one is a prefix of the other
  // (the longer one's extra bytes equal the zero padding).
  if (len <= PREFIX_BYTES && tLen <= PREFIX_BYTES) return len - tLen;
  const pos = ints[o + 5]!;
  const a = tChunks[chunkIndexOf(pos)]!;
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
 * Moves slots [j, n) of `node` up by one, freeing slot j: copyWithin (a memmove) beyond a
 * few slots, an element loop below that.
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

/** The B+tree and the arena of its entries. */
export class Tree {
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
   * Inserts the entry at arena position `pos`. REQUIRES: setTarget was called with the
   * entry's key and seq, and no equal entry exists.
   */
  insert(pos: number): void {
    tPos = pos;
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
   * The newest entry of the target's user key with sequence <= the target's, or undefined
   * (REQUIRES setTarget).
   */
  find(): ArenaEntry | undefined {
    let node = this.root;
    while (!node.leaf) node = node.children[childIndex(node)]!;
    let j = leafLowerBound(node);
    if (j === node.n) {
      const next = node.next;
      if (next === null) return undefined;
      node = next;
      j = 0;
    }
    const ints = node.ints;
    if (compareSlotKey(ints, j) !== 0) return undefined;
    const o = j * SLOT_INTS;
    const pos = ints[o + 5]!;
    const ci = chunkIndexOf(pos);
    const arena = this.arena;
    return new ArenaEntry(
      arena.chunks[ci]!,
      arena.buffers[ci]!,
      keyStartOf(pos),
      ints[o + 4]!,
      slotSeq(ints, j),
    );
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
   * Writes every entry's sequence, arena position and key length, in order, to the three
   * arrays from index 0; returns the number of entries written.
   */
  fillImage(seqs: Float64Array, positions: Int32Array, keyLengths: Int32Array): number {
    let at = 0;
    for (let node: BNode | null = this.firstLeaf; node !== null; node = node.next) {
      const ints = node.ints;
      for (let j = 0; j < node.n; j++) {
        keyLengths[at] = ints[j * SLOT_INTS + 4]!;
        positions[at] = ints[j * SLOT_INTS + 5]!;
        seqs[at] = slotSeq(ints, j);
        at++;
      }
    }
    return at;
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
