/**
 * The log as the core sees it: the application's durable storage (RaftStorage) with the
 * unstable tail (UnstableLog) on top, plus the commit and apply cursors.
 *
 * Invariants: applied <= applying; applying <= committed except after a repair (the
 * application may have applied entries the damaged log lost: they are not handed out
 * again, see `RawNode`); committed <= lastIndex(); entries up to `committed` are never
 * replaced.
 */
import { isRaftError, RaftError } from "./errors.js";
import type { Entry, RaftStorage, Snapshot } from "./types.js";
import { UnstableLog } from "./unstable-log.js";

/** Total data bytes of `ents`. */
export function payloadSize(ents: readonly Entry[]): number {
  let n = 0;
  for (let i = 0; i < ents.length; i++) n += ents[i]!.data.length;
  return n;
}

/**
 * The longest prefix of `ents` whose data fits in `maxBytes`, and always at least one
 * entry. Returns `ents` itself when everything fits.
 */
export function limitSize<T extends readonly Entry[]>(ents: T, maxBytes: number): T | Entry[] {
  if (ents.length === 0) return ents;
  let size = ents[0]!.data.length;
  let n = 1;
  for (; n < ents.length; n++) {
    size += ents[n]!.data.length;
    if (size > maxBytes) break;
  }
  return n === ents.length ? ents : ents.slice(0, n);
}

export class RaftLog {
  readonly unstable: UnstableLog;
  /** The highest index known committed. */
  committed: number;
  /** The highest index handed out to apply (in the current or an earlier Ready). */
  applying: number;
  /** The highest index the application has applied (as of the last `advance`). */
  applied: number;

  constructor(
    readonly storage: RaftStorage,
    private readonly maxApplyingBytes: number,
  ) {
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.unstable = new UnstableLog(last + 1);
    this.committed = first - 1;
    this.applying = first - 1;
    this.applied = first - 1;
  }

  firstIndex(): number {
    return this.unstable.firstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.lastIndex() ?? this.storage.lastIndex();
  }

  /**
   * The last index known durable: the last stored entry not replaced by the unstable
   * tail. REQUIRES: no unstable snapshot (a leader never has one).
   */
  stableLastIndex(): number {
    return this.unstable.offset - 1;
  }

  /** The term of the entry at `index`, or -1 if the log does not hold it (compacted or beyond). */
  term(index: number): number {
    const t = this.unstable.term(index);
    if (t >= 0) return t;
    if (index < this.firstIndex() - 1 || index > this.lastIndex()) return -1;
    try {
      return this.storage.term(index);
    } catch (err) {
      if (isRaftError(err, "COMPACTED") || isRaftError(err, "UNAVAILABLE")) return -1;
      throw err;
    }
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    if (t < 0) throw new Error(`raft log: no term for the last index ${this.lastIndex()}`);
    return t;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** True iff a log ending at (lastTerm, lastIndex) is at least as up to date as this one (Raft 5.4.1). */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /**
   * The index of the first entry of `ents` that this log does not hold with the same term
   * (a conflict, or simply new), or 0 if it holds them all.
   */
  findConflict(ents: readonly Entry[]): number {
    for (let i = 0; i < ents.length; i++) {
      const e = ents[i]!;
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * The fast back-off hint: the largest index <= `index` whose term is <= `term`, with
   * that term (0 if it was compacted away), so that a leader can skip a whole term of
   * divergent entries per round trip instead of one index.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    for (; index > 0; index--) {
      const ours = this.term(index);
      if (ours < 0) return { index, term: 0 };
      if (ours <= term) return { index, term: ours };
    }
    return { index: 0, term: 0 };
  }

  /**
   * Appends a leader's entries that follow (prevIndex, prevTerm), if this log holds that
   * entry: replaces a conflicting suffix, keeps entries already held, and advances the
   * commit index to min(committed, the last new index). Returns the last index the leader's
   * entries cover (the log is known to match the leader up to it), or -1 on a mismatch.
   */
  maybeAppend(
    prevIndex: number,
    prevTerm: number,
    committed: number,
    ents: readonly Entry[],
  ): number {
    if (!this.matchTerm(prevIndex, prevTerm)) return -1;
    const lastNew = prevIndex + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      if (ci <= this.committed) {
        throw new Error(
          `raft log: entry ${ci} conflicts with a committed entry (committed ${this.committed})`,
        );
      }
      const start = ci - (prevIndex + 1);
      this.append(start === 0 ? ents : ents.slice(start));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  /** Appends `ents` (REQUIRES: consecutive, first index in (committed, lastIndex + 1]). */
  append(ents: readonly Entry[]): number {
    if (ents.length === 0) return this.lastIndex();
    const after = ents[0]!.index - 1;
    if (after < this.committed) {
      throw new Error(
        `raft log: append after ${after} is below the commit index ${this.committed}`,
      );
    }
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    if (index > this.lastIndex()) {
      throw new Error(`raft log: commit ${index} is beyond the last index ${this.lastIndex()}`);
    }
    this.committed = index;
  }

  /** Commits `index` iff it is beyond the commit index and its term is `term`. */
  maybeCommit(index: number, term: number): boolean {
    if (index > this.committed && this.term(index) === term) {
      this.commitTo(index);
      return true;
    }
    return false;
  }

  /** Entries from `lo` to the end, at most `maxBytes` of data (at least one). */
  entriesFrom(lo: number, maxBytes: number): Entry[] {
    const last = this.lastIndex();
    if (lo > last) return [];
    return this.slice(lo, last + 1, maxBytes);
  }

  /**
   * Entries in [lo, hi), at most `maxBytes` of data but at least one when lo < hi.
   * Throws RaftError COMPACTED if lo is below the first index.
   */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    const first = this.firstIndex();
    if (lo < first)
      throw new RaftError("COMPACTED", `entry ${lo} is compacted (first index ${first})`);
    if (hi > this.lastIndex() + 1 || lo > hi) {
      throw new Error(
        `raft log: slice [${lo}, ${hi}) out of bounds [${first}, ${this.lastIndex()}]`,
      );
    }
    if (lo === hi) return [];
    const u = this.unstable;
    if (lo >= u.offset) return limitSize(u.slice(lo, hi), maxBytes) as Entry[];
    const cut = Math.min(hi, u.offset);
    const stored = this.storage.entries(lo, cut, maxBytes);
    if (hi <= u.offset || stored.length < cut - lo) return stored;
    const size = payloadSize(stored);
    if (size >= maxBytes) return stored;
    const rest = limitSize(u.slice(u.offset, hi), maxBytes - size);
    if (rest.length === 1 && size + rest[0]!.data.length > maxBytes) return stored;
    for (let i = 0; i < rest.length; i++) stored.push(rest[i]!);
    return stored;
  }

  /** True iff committed entries wait to be handed out. */
  hasNextCommittedEntries(): boolean {
    if (this.unstable.snapshot !== undefined) return false;
    return this.applying < this.committed;
  }

  /** The committed entries to hand out next (after `applying`), up to maxApplyingBytes. */
  nextCommittedEntries(): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    return this.slice(this.applying + 1, this.committed + 1, this.maxApplyingBytes);
  }

  acceptApplying(index: number): void {
    this.applying = index;
  }

  appliedTo(index: number): void {
    if (index > this.applied) this.applied = index;
    if (this.applying < this.applied) this.applying = this.applied;
  }

  /**
   * The application installed the snapshot at `index`: its state is now as of `index`,
   * even if it had applied further before (a repaired node given an older snapshot), so
   * the entries after `index` are handed out (again) from here.
   */
  appliedSnapshot(index: number): void {
    this.applied = index;
    this.applying = index;
  }

  /** The most recent snapshot: the unstable one if any, else the storage's. */
  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }

  /** Replaces the log with `s` (REQUIRES: s.metadata.index > committed). */
  restore(s: Snapshot): void {
    this.committed = s.metadata.index;
    this.unstable.restore(s);
  }
}
