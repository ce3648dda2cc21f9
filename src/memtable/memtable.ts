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
 *   B+tree, 64 per node                  1 900        2 000         340          510
 *   skip list, height 12, branching 4   22 400       15 000       2 160        1 290
 *   same, Buffer.compare               22 700       18 500       2 580        1 900
 *   skip list, height 20, branching 2   18 200       12 800       2 220        1 390
 *
 * The skip list spends its time on cache misses, not on comparisons: each of its ~40 steps
 * per search follows node -> next array -> its elements -> next node -> key view -> key
 * bytes. This tree keeps, per node, the first 16 bytes of every key (as four big-endian
 * int32 words), the key length and the sequence in one typed array of 32-byte slots, so a
 * binary search over a node compares integers that sit next to each other in memory and
 * touches no key object unless two keys share their first 16 bytes; a search visits 3-5
 * nodes. Comparing the rest of long keys uses a byte loop: it measured ~2x faster than
 * Buffer.compare for 16-byte keys (30 vs 70 ns). Node capacity 64 measured best overall
 * among 32, 64 and 128 (128: slightly faster gets at 1M entries, slower inserts).
 *
 * Iterators over a tree that keeps receiving inserts stay correct: an insert may move
 * entries between slots and nodes, so every insert bumps a version number; an iterator that
 * sees a new version finds its current entry again (O(log n)) before it moves. Entries are
 * never removed, so that entry is always found.
 *
 * Single-threaded: no operation may run while another is in progress (none are async).
 */

import type { ValueKind } from "../key/internal-key.js";

/** A read-only view of one memtable entry. The arrays are the ones passed to `add`. */
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
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;
  /** Nothing to release; present so a memtable iterator is an InternalIterator. */
  close(): void;
}

/**
 * Estimated memory per entry beyond its key and value bytes, for `approximateBytes`. Two
 * parts, measured as heap growth by bench/memtable-micro.ts (16-byte keys, Node 20):
 * - the tree's own ~110-125 bytes: the entry object (~56), its 32-byte slot and 8-byte
 *   array element divided by the average node fill (~70%), and the nodes' fixed costs;
 * - ~200 bytes for the two Uint8Array views (key and value) the caller passes, which the
 *   memtable keeps alive (the bytes they view are counted as key and value lengths).
 */
export const ENTRY_OVERHEAD_BYTES = 320;

/** Maximum entries per leaf and children per inner node. Chosen with bench/memtable-micro.ts. */
const NODE_CAPACITY = 64;
/** Int32 elements per slot: key words 0..3, key length at 4, 5 unused, seq (float64) at 6..7. */
const SLOT_INTS = 8;
/** Number of leading key bytes held in a slot. */
const PREFIX_BYTES = 16;

class Entry implements MemtableEntry {
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;

  constructor(key: Uint8Array, seq: number, kind: ValueKind, value: Uint8Array) {
    this.key = key;
    this.seq = seq;
    this.kind = kind;
    this.value = value;
  }
}

const NO_CHILDREN: BNode[] = [];

/**
 * A tree node. Slot j describes entries[j]: in a leaf, the entry itself; in an inner node,
 * the smallest entry of children[j] (slot 0 of an inner node is not used for searching, as
 * the leftmost subtree's minimum can decrease). `n` is the number of entries (leaf) or
 * children (inner). Leaves are linked in key order by `next`/`prev`.
 */
class BNode {
  readonly leaf: boolean;
  n: number;
  readonly ints: Int32Array;
  /** Float64 view of `ints`' buffer: slot j's sequence is at index j * 4 + 3. */
  readonly seqs: Float64Array;
  entries: Entry[];
  children: BNode[];
  next: BNode | null;
  prev: BNode | null;

  constructor(leaf: boolean) {
    this.leaf = leaf;
    this.n = 0;
    const buffer = new ArrayBuffer(NODE_CAPACITY * SLOT_INTS * 4);
    this.ints = new Int32Array(buffer);
    this.seqs = new Float64Array(buffer);
    this.entries = [];
    this.children = leaf ? NO_CHILDREN : [];
    this.next = null;
    this.prev = null;
  }
}

/**
 * Big-endian int32 of key bytes [o, o+4), zero-padded past the end, offset by 2^31 so that
 * signed comparison of words is unsigned comparison of the bytes.
 */
function keyWord(k: Uint8Array, o: number): number {
  const len = k.length;
  let w = 0;
  for (let i = o; i < o + 4; i++) w = (w << 8) | (i < len ? k[i]! : 0);
  return w ^ 0x80000000;
}

/** Bytewise comparison of a[from..] and b[from..]; REQUIRES both agree before `from`. */
function compareBytesFrom(a: Uint8Array, b: Uint8Array, from: number): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = from; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

// The search target, set by setTarget before a search. Module state, not per-tree, is safe
// because searches are synchronous and never nested.
let tw0 = 0;
let tw1 = 0;
let tw2 = 0;
let tw3 = 0;
let tLen = 0;
let tSeq = 0;
let tKey: Uint8Array = new Uint8Array(0);

function setTarget(key: Uint8Array, seq: number): void {
  if (key.length >= PREFIX_BYTES) {
    tw0 = ((key[0]! << 24) | (key[1]! << 16) | (key[2]! << 8) | key[3]!) ^ 0x80000000;
    tw1 = ((key[4]! << 24) | (key[5]! << 16) | (key[6]! << 8) | key[7]!) ^ 0x80000000;
    tw2 = ((key[8]! << 24) | (key[9]! << 16) | (key[10]! << 8) | key[11]!) ^ 0x80000000;
    tw3 = ((key[12]! << 24) | (key[13]! << 16) | (key[14]! << 8) | key[15]!) ^ 0x80000000;
  } else {
    tw0 = keyWord(key, 0);
    tw1 = keyWord(key, 4);
    tw2 = keyWord(key, 8);
    tw3 = keyWord(key, 12);
  }
  tLen = key.length;
  tSeq = seq;
  tKey = key;
}

/** Writes the target's words, length and sequence into slot j of `node`. */
function writeTargetSlot(node: BNode, j: number): void {
  const ints = node.ints;
  const o = j * SLOT_INTS;
  ints[o] = tw0;
  ints[o + 1] = tw1;
  ints[o + 2] = tw2;
  ints[o + 3] = tw3;
  ints[o + 4] = tLen;
  node.seqs[j * 4 + 3] = tSeq;
}

/** Compares the user key in slot j of a node with the target's user key. */
function compareSlotKey(ints: Int32Array, entries: Entry[], j: number): number {
  const o = j * SLOT_INTS;
  let w = ints[o]!;
  if (w !== tw0) return w < tw0 ? -1 : 1;
  w = ints[o + 1]!;
  if (w !== tw1) return w < tw1 ? -1 : 1;
  w = ints[o + 2]!;
  if (w !== tw2) return w < tw2 ? -1 : 1;
  w = ints[o + 3]!;
  if (w !== tw3) return w < tw3 ? -1 : 1;
  return compareSlotTail(ints, entries, j);
}

/**
 * Binary search over slots [lo, node.n): the first slot whose internal key is greater than
 * the target, or >= it when `orEqual`; node.n if none. The comparison is written out here,
 * with the target in locals, because this loop is the memtable's hot path.
 */
function searchSlots(node: BNode, lo: number, orEqual: boolean): number {
  const ints = node.ints;
  const seqs = node.seqs;
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
            c = compareSlotTail(ints, node.entries, mid);
            if (c === 0) {
              const s = seqs[mid * 4 + 3]!;
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
function compareSlotTail(ints: Int32Array, entries: Entry[], j: number): number {
  const len = ints[j * SLOT_INTS + 4]!;
  // Equal words: if both keys fit in the prefix, the shorter one is a prefix of the other
  // (the longer one's extra bytes equal the zero padding).
  if (len <= PREFIX_BYTES && tLen <= PREFIX_BYTES) return len - tLen;
  return compareBytesFrom(entries[j]!.key, tKey, PREFIX_BYTES);
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
  for (let i = from * SLOT_INTS; i < to * SLOT_INTS; i++) d[o++] = s[i]!;
}

/** Moves slots [j, n) of `node` up by one, freeing slot j. */
function openSlot(node: BNode, j: number): void {
  const ints = node.ints;
  for (let i = node.n * SLOT_INTS - 1; i >= j * SLOT_INTS; i--) ints[i + SLOT_INTS] = ints[i]!;
}

/** The B+tree. Not exported: Memtable and its iterators share it. */
class Tree {
  root: BNode;
  /** The leftmost leaf; never replaced (splits keep the lower half in place). */
  readonly firstLeaf: BNode;
  lastLeaf: BNode;
  /** Incremented by every insert; iterators use it to notice that slots may have moved. */
  version = 0;
  /** Scratch route for inserts: pathNodes[d] is the inner node at depth d, pathIdx[d] the child taken. */
  private readonly pathNodes: BNode[] = [];
  private readonly pathIdx: number[] = [];

  constructor() {
    this.root = new BNode(true);
    this.firstLeaf = this.root;
    this.lastLeaf = this.root;
  }

  /** Inserts `entry`. REQUIRES: setTarget(entry.key, entry.seq) was called; no equal entry. */
  insert(entry: Entry): void {
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
      node.entries.splice(j, 0, entry);
      node.n++;
    } else {
      this.splitLeafAndInsert(node, j, entry, depth);
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
   * Splits the full leaf `leaf` and inserts the target (`entry`) at slot j of the old
   * contents. pathNodes/pathIdx[0 .. depth) hold the route from the root.
   */
  private splitLeafAndInsert(leaf: BNode, j: number, entry: Entry, depth: number): void {
    const right = new BNode(true);
    // Appending past the last leaf (ascending inserts) starts an empty leaf, so that
    // sequential loads fill leaves completely; otherwise split in half.
    const mid = j === NODE_CAPACITY && leaf.next === null ? NODE_CAPACITY : NODE_CAPACITY >>> 1;
    copySlots(leaf, mid, NODE_CAPACITY, right, 0);
    right.entries = leaf.entries.splice(mid);
    right.n = NODE_CAPACITY - mid;
    leaf.n = mid;
    const target = j <= mid && mid < NODE_CAPACITY ? leaf : right;
    const tj = target === leaf ? j : j - mid;
    openSlot(target, tj);
    writeTargetSlot(target, tj);
    target.entries.splice(tj, 0, entry);
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
      const root = new BNode(false);
      copySlots(old, 0, 1, root, 0);
      copySlots(child, 0, 1, root, 1);
      root.entries = [old.entries[0]!, child.entries[0]!];
      root.children = [old, child];
      root.n = 2;
      this.root = root;
      return;
    }
    const parent = this.pathNodes[depth]!;
    const at = this.pathIdx[depth]! + 1;
    if (parent.n < NODE_CAPACITY) {
      openSlot(parent, at);
      copySlots(child, 0, 1, parent, at);
      parent.entries.splice(at, 0, child.entries[0]!);
      parent.children.splice(at, 0, child);
      parent.n++;
      return;
    }
    const right = new BNode(false);
    const mid = NODE_CAPACITY >>> 1;
    copySlots(parent, mid, NODE_CAPACITY, right, 0);
    right.entries = parent.entries.splice(mid);
    right.children = parent.children.splice(mid);
    right.n = NODE_CAPACITY - mid;
    parent.n = mid;
    const target = at <= mid ? parent : right;
    const ta = target === parent ? at : at - mid;
    openSlot(target, ta);
    copySlots(child, 0, 1, target, ta);
    target.entries.splice(ta, 0, child.entries[0]!);
    target.children.splice(ta, 0, child);
    target.n++;
    this.insertChild(right, depth - 1);
  }
}

export class Memtable {
  private readonly tree = new Tree();
  private entryCount = 0;
  private bytes = 0;

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
   * Adds an entry. REQUIRES: no entry with the same key and seq exists (the caller assigns
   * each write a new sequence number); 0 <= seq <= MAX_SEQUENCE. `key` and `value` are kept
   * by reference and must not be modified afterwards.
   */
  add(seq: number, kind: ValueKind, key: Uint8Array, value: Uint8Array): void {
    setTarget(key, seq);
    this.tree.insert(new Entry(key, seq, kind, value));
    this.entryCount++;
    this.bytes += key.length + value.length + ENTRY_OVERHEAD_BYTES;
  }

  /**
   * The newest entry for `key` with sequence <= seq, or undefined if there is none. A
   * tombstone (KIND_DELETE) is returned like any entry; the caller interprets `kind`.
   */
  get(key: Uint8Array, seq: number): MemtableEntry | undefined {
    setTarget(key, seq);
    let node = this.tree.root;
    while (!node.leaf) node = node.children[childIndex(node)]!;
    let j = leafLowerBound(node);
    if (j === node.n) {
      const next = node.next;
      if (next === null) return undefined;
      node = next;
      j = 0;
    }
    return compareSlotKey(node.ints, node.entries, j) === 0 ? node.entries[j] : undefined;
  }

  /** A new iterator, initially invalid. */
  iterator(): MemtableIterator {
    return new TreeIterator(this.tree);
  }
}

/** A position: a leaf and a slot in it, or node === null for none. */
interface Cursor {
  node: BNode | null;
  idx: number;
}

class TreeIterator implements MemtableIterator, Cursor {
  node: BNode | null = null;
  idx = 0;
  private current: Entry | null = null;
  private version = 0;
  private readonly tree: Tree;

  constructor(tree: Tree) {
    this.tree = tree;
  }

  valid(): boolean {
    return this.current !== null;
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
    setTarget(key, seq);
    this.tree.lowerBound(this);
    this.setPosition(this.node, this.idx);
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    // The last entry <= (key, seq, lowest kind) is the one before the first entry
    // > (key, seq, lowest kind), which is the first entry >= (key, seq - 1, highest kind).
    setTarget(key, seq - 1);
    this.tree.lowerBound(this);
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
    return this.current!;
  }

  get key(): Uint8Array {
    return this.current!.key;
  }

  get seq(): number {
    return this.current!.seq;
  }

  get kind(): ValueKind {
    return this.current!.kind;
  }

  get value(): Uint8Array {
    return this.current!.value;
  }

  /** Nothing to release: the memtable lives as long as someone references it. */
  close(): void {}

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
    this.node = node;
    this.idx = idx;
    this.current = node === null ? null : node.entries[idx]!;
    this.version = this.tree.version;
  }

  /** If entries were added since the position was taken, finds the current entry again. */
  private sync(): void {
    if (this.version === this.tree.version) return;
    const cur = this.current!;
    setTarget(cur.key, cur.seq);
    this.tree.lowerBound(this);
    this.version = this.tree.version;
  }
}
