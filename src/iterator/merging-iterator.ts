/**
 * MergingIterator: merges several InternalIterators (memtables, tables, levels) into one
 * stream in internal-key order, forward or backward. It yields every entry of every
 * child (all versions of a key); deciding which version is visible is DbIterator's job.
 *
 * The positioned children sit in a binary heap ordered by their current entry (smallest
 * on top going forward, largest going backward; equal entries: the child given first
 * wins). Each child's key, sequence and kind are read once when the child moves and kept
 * beside the heap, so choosing the next entry allocates nothing and touches only the
 * child that moved: log2(children) comparisons per step instead of one per child. That
 * matters for compactions, which merge every level-0 file with a run of level-1 files.
 *
 * Direction switches follow LevelDB's merger: before moving backward after moving forward,
 * every non-current child is repositioned to the last entry before the current key (and
 * symmetrically), so `next` and `prev` may be mixed freely.
 */

import type { InternalIterator } from "../key/internal-iterator.js";
import type { ValueKind } from "../key/internal-key.js";
import { compareInternal } from "../key/internal-key.js";

const FORWARD = 0;
const REVERSE = 1;

const NO_KEY = new Uint8Array(0);

export class MergingIterator implements InternalIterator {
  private direction = FORWARD;
  /** Child indices of the positioned children, a heap by `before`. */
  private readonly heap: number[] = [];
  /** Per child: its current user key (a view valid until the child moves), seq, kind. */
  private readonly keys: Uint8Array[];
  private readonly seqs: Float64Array;
  private readonly kinds: Uint8Array;

  /**
   * Takes ownership of `children`: `close()` closes them, then calls `onClose` (which
   * releases what the children read from, e.g. table readers).
   */
  constructor(
    private readonly children: readonly InternalIterator[],
    private onClose?: () => void,
  ) {
    this.keys = children.map(() => NO_KEY);
    this.seqs = new Float64Array(children.length);
    this.kinds = new Uint8Array(children.length);
  }

  valid(): boolean {
    return this.heap.length > 0;
  }

  seekToFirst(): void {
    for (const c of this.children) c.seekToFirst();
    this.rebuild(FORWARD);
  }

  seekToLast(): void {
    for (const c of this.children) c.seekToLast();
    this.rebuild(REVERSE);
  }

  seek(key: Uint8Array, seq: number): void {
    for (const c of this.children) c.seek(key, seq);
    this.rebuild(FORWARD);
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    for (const c of this.children) c.seekForPrev(key, seq);
    this.rebuild(REVERSE);
  }

  next(): void {
    const top = this.heap[0]!;
    const cur = this.children[top]!;
    if (this.direction !== FORWARD) {
      // Every other child must be positioned at the first entry after the current key.
      const key = this.keys[top]!;
      const seq = this.seqs[top]!;
      const kind = this.kinds[top]!;
      for (const c of this.children) {
        if (c === cur) continue;
        c.seek(key, seq);
        if (c.valid() && compareInternal(c.key, c.seq, c.kind, key, seq, kind) === 0) c.next();
      }
      cur.next();
      this.rebuild(FORWARD);
      return;
    }
    cur.next();
    this.advanceTop(cur, top);
  }

  prev(): void {
    const top = this.heap[0]!;
    const cur = this.children[top]!;
    if (this.direction !== REVERSE) {
      // Every other child must be positioned at the last entry before the current key.
      const key = this.keys[top]!;
      const seq = this.seqs[top]!;
      const kind = this.kinds[top]!;
      for (const c of this.children) {
        if (c === cur) continue;
        c.seekForPrev(key, seq);
        if (c.valid() && compareInternal(c.key, c.seq, c.kind, key, seq, kind) >= 0) c.prev();
      }
      cur.prev();
      this.rebuild(REVERSE);
      return;
    }
    cur.prev();
    this.advanceTop(cur, top);
  }

  get key(): Uint8Array {
    return this.keys[this.heap[0]!]!;
  }

  get seq(): number {
    return this.seqs[this.heap[0]!]!;
  }

  get kind(): ValueKind {
    return this.kinds[this.heap[0]!] as ValueKind;
  }

  get value(): Uint8Array {
    return this.children[this.heap[0]!]!.value;
  }

  close(): void {
    for (const c of this.children) c.close();
    this.heap.length = 0;
    this.keys.fill(NO_KEY);
    const done = this.onClose;
    this.onClose = undefined;
    done?.();
  }

  /** Reads child i's current entry into the per-child arrays. REQUIRES it is valid. */
  private load(i: number, c: InternalIterator): void {
    this.keys[i] = c.key;
    this.seqs[i] = c.seq;
    this.kinds[i] = c.kind;
  }

  /** The top child `cur` (index top) moved: re-reads it and restores the heap. */
  private advanceTop(cur: InternalIterator, top: number): void {
    const heap = this.heap;
    if (cur.valid()) {
      this.load(top, cur);
    } else {
      this.keys[top] = NO_KEY;
      const last = heap.pop()!;
      if (heap.length === 0) return;
      heap[0] = last;
    }
    this.siftDown(0);
  }

  /** Rebuilds the heap from the children's positions, for `direction`. */
  private rebuild(direction: number): void {
    this.direction = direction;
    const heap = this.heap;
    heap.length = 0;
    const children = this.children;
    for (let i = 0; i < children.length; i++) {
      const c = children[i]!;
      if (c.valid()) {
        this.load(i, c);
        heap.push(i);
      } else {
        this.keys[i] = NO_KEY;
      }
    }
    for (let at = (heap.length >>> 1) - 1; at >= 0; at--) this.siftDown(at);
  }

  /** True iff child a's entry comes before child b's in the current direction. */
  private before(a: number, b: number): boolean {
    const c = compareInternal(
      this.keys[a]!,
      this.seqs[a]!,
      this.kinds[a]!,
      this.keys[b]!,
      this.seqs[b]!,
      this.kinds[b]!,
    );
    if (c !== 0) return this.direction === FORWARD ? c < 0 : c > 0;
    return a < b;
  }

  private siftDown(at: number): void {
    const heap = this.heap;
    const n = heap.length;
    const item = heap[at]!;
    for (;;) {
      const left = 2 * at + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && this.before(heap[right]!, heap[left]!)) child = right;
      if (!this.before(heap[child]!, item)) break;
      heap[at] = heap[child]!;
      at = child;
    }
    heap[at] = item;
  }
}
