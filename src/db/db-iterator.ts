/**
 * DbIterator: the user's view of a merged stream of internal entries. It shows each user
 * key once, with its newest version visible at the snapshot's sequence number, hides
 * tombstones (and everything they shadow), honours the bounds, and moves in one direction
 * (forward, or backward with `reverse`). Keys and values it returns are fresh copies.
 *
 * The backward walk follows LevelDB's DBIter::FindPrevUserEntry: walking backward, the
 * versions of a user key come oldest first, so the iterator keeps the last visible one it
 * sees and stops when it reaches an entry of a smaller user key.
 */

import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes, KIND_DELETE, MAX_SEQUENCE } from "../key/internal-key.js";

export interface IteratorBounds {
  gt?: Uint8Array;
  gte?: Uint8Array;
  lt?: Uint8Array;
  lte?: Uint8Array;
}

export interface DbIteratorOptions extends IteratorBounds {
  reverse?: boolean;
  /** Stop after this many entries; -1 or Infinity: no limit. */
  limit?: number;
  /** Return keys only (values are empty). */
  keysOnly?: boolean;
}

const EMPTY = Buffer.alloc(0);

/**
 * Forward: after this many hidden entries of one user key in a row (its older versions),
 * the iterator seeks past the key instead of stepping over the rest (RocksDB's
 * max_sequential_skip_in_iterations): a key rewritten thousands of times since the last
 * flush costs a seek, not thousands of steps.
 */
export const MAX_SEQUENTIAL_SKIPS = 8;

function copy(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  out.set(bytes);
  return out;
}

export class DbIterator {
  private readonly reverse: boolean;
  private readonly keysOnly: boolean;
  private remaining: number;
  private started = false;
  /** Forward, after `seek`: the inner iterator is on the next candidate already. */
  private positioned = false;
  private done = false;
  private closed = false;
  /** Forward: the user key last returned (all its older versions are skipped). */
  private skipKey: Uint8Array | undefined;
  private readonly lower: Uint8Array | undefined;
  private readonly lowerInclusive: boolean;
  private readonly upper: Uint8Array | undefined;
  private readonly upperInclusive: boolean;
  /** The current entry, after `step()` returned true. */
  key: Buffer = EMPTY;
  value: Buffer = EMPTY;

  /**
   * @param inner the merged sources; owned (closed by `close`)
   * @param sequence entries with a higher sequence number are invisible
   */
  constructor(
    private readonly inner: InternalIterator,
    private readonly sequence: number,
    options: DbIteratorOptions,
  ) {
    this.reverse = options.reverse === true;
    this.keysOnly = options.keysOnly === true;
    const limit = options.limit ?? -1;
    this.remaining = limit < 0 ? Number.POSITIVE_INFINITY : limit;
    this.lower = options.gt ?? options.gte;
    this.lowerInclusive = options.gt === undefined;
    this.upper = options.lt ?? options.lte;
    this.upperInclusive = options.lt === undefined;
  }

  /** Moves to the next entry; false at the end. Keys and values are fresh copies. */
  step(): boolean {
    if (this.done) return false;
    if (this.remaining <= 0) return this.finish();
    const found = this.reverse ? this.stepBackward() : this.stepForward();
    if (!found) return this.finish();
    this.remaining--;
    return true;
  }

  /**
   * Repositions the iterator: the next `step` returns the first key >= target (reverse:
   * <= target) within the bounds, whatever was returned before. The limit keeps counting
   * (it is a limit on entries returned). REQUIRES the iterator is not closed.
   */
  seek(target: Uint8Array): void {
    if (this.closed) throw new Error("DbIterator.seek after close");
    const it = this.inner;
    this.started = true;
    this.skipKey = undefined;
    if (!this.reverse) {
      const below = this.lower !== undefined && compareBytes(target, this.lower) < 0;
      it.seek(below ? this.lower! : target, MAX_SEQUENCE);
      this.positioned = true;
    } else if (this.upper !== undefined && compareBytes(target, this.upper) >= 0) {
      this.seekToUpper();
    } else {
      it.seekForPrev(target, 0);
    }
  }

  /** Releases the sources. Idempotent. */
  close(): void {
    this.done = true;
    if (this.closed) return;
    this.closed = true;
    this.inner.close();
  }

  private finish(): false {
    this.close();
    return false;
  }

  private belowLower(key: Uint8Array): boolean {
    if (this.lower === undefined) return false;
    const c = compareBytes(key, this.lower);
    return this.lowerInclusive ? c < 0 : c <= 0;
  }

  private aboveUpper(key: Uint8Array): boolean {
    if (this.upper === undefined) return false;
    const c = compareBytes(key, this.upper);
    return this.upperInclusive ? c > 0 : c >= 0;
  }

  private stepForward(): boolean {
    const it = this.inner;
    if (!this.started) {
      this.started = true;
      if (this.lower !== undefined) it.seek(this.lower, MAX_SEQUENCE);
      else it.seekToFirst();
    } else if (this.positioned) {
      this.positioned = false;
    } else if (it.valid()) {
      it.next();
    }
    let skipped = 0;
    while (it.valid()) {
      if (it.seq > this.sequence) {
        it.next();
        continue;
      }
      const key = it.key;
      if (this.skipKey !== undefined && compareBytes(key, this.skipKey) === 0) {
        if (++skipped < MAX_SEQUENTIAL_SKIPS) {
          it.next();
        } else {
          // Past every version of skipKey at once: (skipKey, 0) sorts after all of them
          // but one of sequence 0, which the next line steps over.
          skipped = 0;
          it.seek(this.skipKey, 0);
          if (it.valid() && compareBytes(it.key, this.skipKey) === 0) it.next();
        }
        continue;
      }
      if (this.aboveUpper(key)) return false;
      // Only for gt: the bound key itself.
      if (this.belowLower(key)) {
        it.next();
        continue;
      }
      // The newest visible version of a new user key.
      this.skipKey = copy(key);
      skipped = 0;
      if (it.kind === KIND_DELETE) {
        it.next();
        continue;
      }
      this.key = this.skipKey as Buffer;
      this.value = this.keysOnly ? EMPTY : copy(it.value);
      return true;
    }
    return false;
  }

  /** Reverse: positions the inner iterator on the last entry within the upper bound. */
  private seekToUpper(): void {
    const it = this.inner;
    if (this.upper === undefined) {
      it.seekToLast();
    } else if (this.upperInclusive) {
      it.seekForPrev(this.upper, 0);
    } else {
      it.seek(this.upper, MAX_SEQUENCE);
      if (it.valid()) it.prev();
      else it.seekToLast();
    }
  }

  private stepBackward(): boolean {
    const it = this.inner;
    if (!this.started) {
      this.started = true;
      this.seekToUpper();
    }
    // Walk back over the versions of one user key (oldest first), keeping the newest
    // visible one, until an entry of a smaller key shows that key is complete.
    let savedKey: Buffer | undefined;
    let savedValue: Buffer = EMPTY;
    let savedIsValue = false;
    while (it.valid()) {
      if (it.seq <= this.sequence) {
        const key = it.key;
        if (savedKey !== undefined && compareBytes(key, savedKey) < 0) {
          if (savedIsValue) break;
          savedKey = undefined; // the saved key was deleted: start over with this key
        }
        if (this.belowLower(key)) {
          if (savedIsValue && savedKey !== undefined) break;
          return false;
        }
        if (!this.aboveUpper(key)) {
          if (savedKey === undefined || compareBytes(key, savedKey) !== 0) savedKey = copy(key);
          if (it.kind === KIND_DELETE) {
            savedIsValue = false;
            savedValue = EMPTY;
          } else {
            savedIsValue = true;
            savedValue = this.keysOnly ? EMPTY : copy(it.value);
          }
        }
      }
      it.prev();
    }
    if (!savedIsValue || savedKey === undefined) return false;
    this.key = savedKey;
    this.value = savedValue;
    return true;
  }
}
