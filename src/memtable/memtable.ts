/**
 * The memtable: the sorted in-memory table that receives every write before it reaches an
 * SSTable. Entries are internal keys (user key, sequence, kind) with a value, kept in
 * internal-key order (see src/key/internal-key.ts): user key bytewise ascending, then
 * sequence descending (newest first), then kind descending. Entries are never removed; a
 * delete is an entry of kind KIND_DELETE (a tombstone).
 *
 * Parts: an append-only B+tree (btree.ts) whose slots name entries stored in an arena
 * (arena.ts), iterated by tree-iterator.ts, and read on the worker thread through an image
 * (memtable-image.ts). Why a B+tree rather than LevelDB's skip list, and the measurements
 * behind its shape: docs/design.md ("Memtable") and docs/benchmarks/memtable.md.
 *
 * Storage contract: `add` copies the key and value into the arena, so the table holds no
 * object per entry and keeps no reference to its callers' arrays. `get` and iterators hand
 * out views of the arena, made when asked for. Arena bytes are never moved or overwritten
 * while the memtable is referenced, so those views stay valid and unchanged until its last
 * reference goes (`ref` / `unref`: the store holds one, and so does every read view that
 * lists the memtable); callers must not write to them. Then, with an ArenaPool, its chunks
 * and tree nodes go back to the pool for later memtables, and the memtable (and its
 * iterators) may not be used again (copy what must outlive it: the store's reads hand out
 * copies).
 *
 * Iterators over a memtable that keeps receiving inserts stay correct (tree-iterator.ts).
 *
 * Single-threaded: no operation may run while another is in progress (none are async).
 */

import type { ValueKind } from "../key/internal-key.js";
import { chunkIndexOf, keyStartOf } from "./arena.js";
import type { ArenaPool } from "./arena-pool.js";
import { clearTarget, setTarget, Tree } from "./btree.js";
import type { MemtableEntry } from "./memtable-entry.js";
import { type MemtableImage, makeImage } from "./memtable-image.js";
import { type MemtableIterator, TreeIterator } from "./tree-iterator.js";

export type { MemtableEntry } from "./memtable-entry.js";
export type { MemtableImage } from "./memtable-image.js";
export type { MemtableIterator } from "./tree-iterator.js";

/**
 * Estimated memory per entry beyond its key and value bytes, for `approximateBytes`: the
 * entry's slot over the average leaf fill, the nodes' fixed costs, the entry's arena
 * header and padding, and the unused end of the newest chunk spread over the entries.
 * How it was measured, and how close it comes for other entry shapes:
 * docs/benchmarks/memtable.md ("Memory per entry").
 */
export const ENTRY_OVERHEAD_BYTES = 72;

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
    setTarget(chunks, chunks[chunkIndexOf(pos)]!, keyStartOf(pos), keyLen, seq);
    this.tree.insert(pos);
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
    setTarget(this.tree.arena.chunks, key, 0, key.length, seq);
    const entry = this.tree.find();
    clearTarget();
    return entry;
  }

  /** A new iterator, initially invalid. */
  iterator(): MemtableIterator {
    this.checkLive("iterator");
    return new TreeIterator(this.tree);
  }

  /**
   * The entries in internal-key order as plain data (see MemtableImage), for building a
   * table on another thread without a copy. REQUIRES the memtable is immutable (the image
   * does not follow later adds) and keeps a reference until the image's reader is done (a
   * released arena's buffers are reused).
   */
  image(): MemtableImage {
    this.checkLive("image");
    return makeImage(this.tree, this.entryCount);
  }
}
