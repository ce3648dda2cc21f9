/**
 * MergingIterator: merges several InternalIterators (memtables, tables, levels) into one
 * stream in internal-key order, forward or backward. It yields every entry of every
 * child (all versions of a key); deciding which version is visible is DbIterator's job.
 *
 * A child is chosen by a linear scan over the children, not a heap: a read merges a
 * handful of sources (a memtable or two, the level-0 files, one file per deeper level),
 * where a scan over an array of a few elements beats heap bookkeeping.
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

export class MergingIterator implements InternalIterator {
  private current: InternalIterator | undefined;
  private direction = FORWARD;

  /**
   * Takes ownership of `children`: `close()` closes them, then calls `onClose` (which
   * releases what the children read from, e.g. table readers).
   */
  constructor(
    private readonly children: readonly InternalIterator[],
    private onClose?: () => void,
  ) {}

  valid(): boolean {
    return this.current !== undefined;
  }

  seekToFirst(): void {
    for (const c of this.children) c.seekToFirst();
    this.direction = FORWARD;
    this.findSmallest();
  }

  seekToLast(): void {
    for (const c of this.children) c.seekToLast();
    this.direction = REVERSE;
    this.findLargest();
  }

  seek(key: Uint8Array, seq: number): void {
    for (const c of this.children) c.seek(key, seq);
    this.direction = FORWARD;
    this.findSmallest();
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    for (const c of this.children) c.seekForPrev(key, seq);
    this.direction = REVERSE;
    this.findLargest();
  }

  next(): void {
    const cur = this.current!;
    if (this.direction !== FORWARD) {
      // Every other child must be positioned at the first entry after the current key.
      const key = cur.key;
      const seq = cur.seq;
      const kind = cur.kind;
      for (const c of this.children) {
        if (c === cur) continue;
        c.seek(key, seq);
        if (c.valid() && compareInternal(c.key, c.seq, c.kind, key, seq, kind) === 0) c.next();
      }
      this.direction = FORWARD;
    }
    cur.next();
    this.findSmallest();
  }

  prev(): void {
    const cur = this.current!;
    if (this.direction !== REVERSE) {
      // Every other child must be positioned at the last entry before the current key.
      const key = cur.key;
      const seq = cur.seq;
      const kind = cur.kind;
      for (const c of this.children) {
        if (c === cur) continue;
        c.seekForPrev(key, seq);
        if (c.valid() && compareInternal(c.key, c.seq, c.kind, key, seq, kind) >= 0) c.prev();
      }
      this.direction = REVERSE;
    }
    cur.prev();
    this.findLargest();
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

  close(): void {
    for (const c of this.children) c.close();
    this.current = undefined;
    const done = this.onClose;
    this.onClose = undefined;
    done?.();
  }

  private findSmallest(): void {
    let best: InternalIterator | undefined;
    for (const c of this.children) {
      if (!c.valid()) continue;
      if (
        best === undefined ||
        compareInternal(c.key, c.seq, c.kind, best.key, best.seq, best.kind) < 0
      ) {
        best = c;
      }
    }
    this.current = best;
  }

  private findLargest(): void {
    let best: InternalIterator | undefined;
    for (const c of this.children) {
      if (!c.valid()) continue;
      if (
        best === undefined ||
        compareInternal(c.key, c.seq, c.kind, best.key, best.seq, best.kind) > 0
      ) {
        best = c;
      }
    }
    this.current = best;
  }
}
