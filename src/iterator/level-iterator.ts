/**
 * LevelIterator: one cursor over a sequence of files whose key ranges do not overlap and
 * are sorted (a level below 0, or level-0 files that happen to be disjoint). Only one
 * file's iterator is open at a time; seeks find the file by binary search over the bounds,
 * so a merge over a level costs one child instead of one per file.
 */
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes, type ValueKind } from "../key/internal-key.js";

/** The bounds of a file: its smallest and largest internal keys (key and sequence). */
export interface FileBounds {
  readonly smallestKey: Uint8Array;
  readonly smallestSeq: number;
  readonly largestKey: Uint8Array;
  readonly largestSeq: number;
}

/** Compares (aKey, aSeq) with (bKey, bSeq) in internal-key order (higher seq first). */
function compareBound(aKey: Uint8Array, aSeq: number, bKey: Uint8Array, bSeq: number): number {
  const c = compareBytes(aKey, bKey);
  if (c !== 0) return c;
  return aSeq === bSeq ? 0 : aSeq > bSeq ? -1 : 1;
}

export class LevelIterator implements InternalIterator {
  private index = -1;
  private current: InternalIterator | undefined;

  /**
   * @param files sorted, non-overlapping
   * @param openFile opens an iterator over files[i]; the LevelIterator closes it
   */
  constructor(
    private readonly files: readonly FileBounds[],
    private readonly openFile: (index: number) => InternalIterator,
  ) {}

  valid(): boolean {
    return this.current?.valid() === true;
  }

  seekToFirst(): void {
    if (!this.setFile(0)) return;
    this.current!.seekToFirst();
    this.skipEmptyForward();
  }

  seekToLast(): void {
    if (!this.setFile(this.files.length - 1)) return;
    this.current!.seekToLast();
    this.skipEmptyBackward();
  }

  seek(key: Uint8Array, seq: number): void {
    // First file whose largest entry is at or after (key, seq).
    let lo = 0;
    let hi = this.files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const f = this.files[mid]!;
      if (compareBound(f.largestKey, f.largestSeq, key, seq) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (!this.setFile(lo)) return;
    this.current!.seek(key, seq);
    this.skipEmptyForward();
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    // Last file whose smallest entry is at or before (key, seq).
    let lo = 0;
    let hi = this.files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const f = this.files[mid]!;
      if (compareBound(f.smallestKey, f.smallestSeq, key, seq) <= 0) lo = mid + 1;
      else hi = mid;
    }
    if (!this.setFile(lo - 1)) return;
    this.current!.seekForPrev(key, seq);
    this.skipEmptyBackward();
  }

  next(): void {
    this.current!.next();
    this.skipEmptyForward();
  }

  prev(): void {
    this.current!.prev();
    this.skipEmptyBackward();
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
    this.current?.close();
    this.current = undefined;
    this.index = -1;
  }

  /** Opens files[i] (closing the previous one); false (and invalid) if out of range. */
  private setFile(i: number): boolean {
    if (i < 0 || i >= this.files.length) {
      this.close();
      return false;
    }
    if (i !== this.index || this.current === undefined) {
      this.current?.close();
      this.current = this.openFile(i);
      this.index = i;
    }
    return true;
  }

  private skipEmptyForward(): void {
    while (this.current !== undefined && !this.current.valid()) {
      if (!this.setFile(this.index + 1)) return;
      this.current!.seekToFirst();
    }
  }

  private skipEmptyBackward(): void {
    while (this.current !== undefined && !this.current.valid()) {
      if (!this.setFile(this.index - 1)) return;
      this.current!.seekToLast();
    }
  }
}
