/**
 * The unstable tail of the log: entries (and at most one snapshot) the node has accepted
 * but the application has not yet made durable. `RaftLog` reads through it to the storage.
 *
 * Invariants: `entries[k]` has index `offset + k`; indexes below `offset` are in the
 * storage (or in `snapshot`, whose index is `offset - 1` when set). Entries with index
 * below `inProgress` have been handed out in the current Ready and are being persisted;
 * the others wait for the next Ready. A truncation moves `inProgress` back to the first
 * replaced index, so [offset, inProgress) always holds entries that were handed out and
 * not changed since: when the application calls `advance()` they are durable
 * (`stableInProgress`). Only one Ready is ever outstanding, so no older write can
 * overwrite a newer one (etcd's ABA race with asynchronous appends cannot happen here).
 */
import type { Entry, Snapshot } from "./types.js";

export class UnstableLog {
  /** A snapshot to install (from the leader), not yet durable. */
  snapshot: Snapshot | undefined = undefined;
  /** True iff `snapshot` was handed out in the current Ready. */
  snapshotInProgress = false;
  /** Never handed out as is: callers get copies (`slice`, `nextEntries`). */
  private entries: Entry[] = [];
  /** The index of entries[0]. */
  offset: number;
  /** Entries below this index are in the current Ready. */
  inProgress: number;

  constructor(offset: number) {
    this.offset = offset;
    this.inProgress = offset;
  }

  get length(): number {
    return this.entries.length;
  }

  /** The first index after the snapshot, or undefined when no snapshot is unstable. */
  firstIndex(): number | undefined {
    return this.snapshot === undefined ? undefined : this.snapshot.metadata.index + 1;
  }

  /** The last index held here (entry or snapshot), or undefined when empty. */
  lastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot === undefined ? undefined : this.snapshot.metadata.index;
  }

  /** The term at `index` if held here, else -1. */
  term(index: number): number {
    if (index < this.offset) {
      const s = this.snapshot;
      return s !== undefined && s.metadata.index === index ? s.metadata.term : -1;
    }
    const e = this.entries[index - this.offset];
    return e === undefined ? -1 : e.term;
  }

  /** The entry at `index` (offset <= index <= lastIndex), else undefined. */
  entryAt(index: number): Entry | undefined {
    return index < this.offset ? undefined : this.entries[index - this.offset];
  }

  hasNextEntries(): boolean {
    return this.offset + this.entries.length > this.inProgress;
  }

  /** The entries not yet handed out (a new array). */
  nextEntries(): Entry[] {
    return this.entries.slice(this.inProgress - this.offset);
  }

  nextSnapshot(): Snapshot | undefined {
    return this.snapshotInProgress ? undefined : this.snapshot;
  }

  /** Marks everything held as handed out in the current Ready. */
  acceptInProgress(): void {
    this.inProgress = this.offset + this.entries.length;
    if (this.snapshot !== undefined) this.snapshotInProgress = true;
  }

  /** The current Ready is durable: drops the entries it held that are unchanged since. */
  stableInProgress(): void {
    const n = this.inProgress - this.offset;
    if (n <= 0) return;
    this.entries = n === this.entries.length ? [] : this.entries.slice(n);
    this.offset = this.inProgress;
  }

  /** The snapshot at `index` is durable. */
  stableSnapshot(index: number): void {
    if (this.snapshot !== undefined && this.snapshot.metadata.index === index) {
      this.snapshot = undefined;
      this.snapshotInProgress = false;
    }
  }

  /** Replaces everything with `s` (the log restarts after it). */
  restore(s: Snapshot): void {
    this.offset = s.metadata.index + 1;
    this.inProgress = this.offset;
    this.entries = [];
    this.snapshot = s;
    this.snapshotInProgress = false;
  }

  /**
   * Appends `ents` (consecutive indexes, the first at most lastIndex + 1), replacing
   * whatever this tail holds from `ents[0].index` on.
   * REQUIRES: ents is non-empty and ents[0].index >= the first index the caller may replace.
   */
  truncateAndAppend(ents: readonly Entry[]): void {
    const from = ents[0]!.index;
    const end = this.offset + this.entries.length;
    if (from === end) {
      for (let i = 0; i < ents.length; i++) this.entries.push(ents[i]!);
      return;
    }
    if (from <= this.offset) {
      this.entries = ents.slice();
      this.offset = from;
      this.inProgress = from;
      return;
    }
    this.entries.length = from - this.offset;
    for (let i = 0; i < ents.length; i++) this.entries.push(ents[i]!);
    if (this.inProgress > from) this.inProgress = from;
  }

  /** Entries in [lo, hi) (a new array). REQUIRES: offset <= lo <= hi <= lastIndex + 1. */
  slice(lo: number, hi: number): Entry[] {
    if (lo < this.offset || hi > this.offset + this.entries.length || lo > hi) {
      throw new Error(
        `unstable slice [${lo}, ${hi}) out of bounds [${this.offset}, ${this.offset + this.entries.length})`,
      );
    }
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}
