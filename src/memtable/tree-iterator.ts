/**
 * MemtableIterator: a cursor over a memtable's B+tree (btree.ts) in internal-key order.
 *
 * It stays correct while the tree keeps receiving inserts: an insert may move entries
 * between slots and nodes, so every insert bumps the tree's version number, and an
 * iterator that sees a new version finds its current entry again (O(log n)) before it
 * moves. Entries are never removed, so that entry is always found.
 */

import type { InternalIterator } from "../key/internal-iterator.js";
import type { ValueKind } from "../key/internal-key.js";
import { chunkIndexOf, keyStartOf, kindAt, NO_BYTES, valueLengthAt } from "./arena.js";
import {
  type BNode,
  type Cursor,
  clearTarget,
  setTarget,
  slotKeyLength,
  slotPosition,
  slotSeq,
  type Tree,
} from "./btree.js";
import { ArenaEntry, type MemtableEntry } from "./memtable-entry.js";

/**
 * A cursor over the memtable in internal-key order: an InternalIterator whose positions
 * survive inserts (it stays on the entry it was on while entries are added between calls)
 * and whose `key` and `value` views, made on first access at each position, stay valid
 * after it moves, as `entry` does, as long as the memtable is referenced (more than
 * InternalIterator promises). `close` has nothing to release.
 */
export interface MemtableIterator extends InternalIterator {
  /** The current entry (a stable object: it stays valid after the iterator moves). */
  readonly entry: MemtableEntry;
}

export class TreeIterator implements MemtableIterator, Cursor {
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
    return kindAt(this.chunk, this.keyStart);
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
    const ints = node.ints;
    const pos = slotPosition(ints, idx);
    const arena = this.tree.arena;
    const ci = chunkIndexOf(pos);
    this.chunk = arena.chunks[ci]!;
    this.buffer = arena.buffers[ci]!;
    this.keyStart = keyStartOf(pos);
    this.keyLen = slotKeyLength(ints, idx);
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
