/**
 * The Raft log as the durable storage holds it in memory: the snapshot, the compaction
 * point, the retained entries, the hard state and the repair mark. Recovery rebuilds it by
 * replaying records through the same methods that the writer uses after each durable
 * write, so both agree on what every record means (docs/format/raft-log.md, "Meaning of
 * the records").
 *
 * Every change comes in two steps: `plan*` checks an update against the current state and
 * throws RaftError (INVALID_ARGUMENT, SNAPSHOT_OUT_OF_DATE, COMPACTED, UNAVAILABLE) without
 * changing anything;
 * `apply*` performs a planned change and cannot fail.
 *
 * Invariants (outside recovery): compactIndex <= snapshot index <= lastIndex, and the
 * entries are exactly compactIndex + 1 .. lastIndex. During recovery, replay may start at
 * a segment whose older entries were removed: the entries from compactIndex + 1 to
 * entriesStart - 1 are then not known (a *gap*), and later records must close it (a
 * compaction past it, a snapshot install, or entries overwriting it); recovery reports a
 * gap left open as damage.
 */

import { RaftError } from "../errors.js";
import {
  type ConfState,
  EMPTY_SNAPSHOT,
  type Entry,
  type HardState,
  NONE,
  type Snapshot,
} from "../types.js";
import type { HeaderRecord } from "./log-record.js";

export const EMPTY_HARD_STATE: HardState = { term: 0, vote: NONE, commit: 0 };

/** What `save` is asked to persist; fields as in the core's Ready. */
export interface RaftLogUpdate {
  /** The new hard state; absent: unchanged. */
  readonly hardState?: HardState | undefined;
  /**
   * Entries to append, consecutive. An entry at an index <= the last index replaces the
   * stored entries from that index on; entries at or below the compaction point are skipped
   * (they are committed and already covered), as etcd's MemoryStorage does.
   */
  readonly entries?: readonly Entry[] | undefined;
  /** A snapshot from the leader to install before the entries: it replaces the whole log. */
  readonly snapshot?: Snapshot | undefined;
  /** false: append without fdatasync (the Ready's `mustSync`). Default true. */
  readonly mustSync?: boolean | undefined;
}

/** A checked update, ready to be written and then applied. */
export interface PlannedSave {
  readonly hardState: HardState;
  readonly snapshot: Snapshot | undefined;
  readonly entries: readonly Entry[];
  /** The last index once applied. */
  readonly lastIndex: number;
  /** False iff applying it would change nothing (nothing needs to be written). */
  readonly changes: boolean;
}

function invalid(message: string): RaftError {
  return new RaftError("INVALID_ARGUMENT", message);
}

function checkNumber(v: number, what: string): void {
  if (!Number.isSafeInteger(v) || v < 0) {
    throw invalid(`${what} must be a non-negative safe integer, got ${v}`);
  }
}

function sameHardState(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export function formatHardState(hs: HardState): string {
  return `term ${hs.term}, vote ${hs.vote}, commit ${hs.commit}`;
}

export class LogState {
  /** The most recent snapshot (installed from a leader or created by the application). */
  snapshot: Snapshot = EMPTY_SNAPSHOT;
  /** Entries up to this index are gone; firstIndex is compactIndex + 1. */
  compactIndex = 0;
  /** The term of the entry at compactIndex. */
  compactTerm = 0;
  /** The index of entries[0]; compactIndex + 1 except while a gap is open in recovery. */
  entriesStart = 1;
  /** The term of the entry at entriesStart - 1, when known. */
  startTerm: number | undefined = 0;
  entries: Entry[] = [];
  hardState: HardState = EMPTY_HARD_STATE;
  /** Entries up to this index were durably acknowledged and are to be re-fetched (0: none). */
  repairThrough = 0;

  get firstIndex(): number {
    return this.compactIndex + 1;
  }

  get lastIndex(): number {
    return this.entriesStart - 1 + this.entries.length;
  }

  /** True iff entries between the compaction point and entriesStart are unknown. */
  get hasGap(): boolean {
    return this.entriesStart > this.compactIndex + 1;
  }

  get confState(): ConfState {
    return this.snapshot.metadata.confState;
  }

  /** The term of the entry at `index`, or undefined if not known. */
  termAt(index: number): number | undefined {
    if (index >= this.entriesStart && index <= this.lastIndex) {
      return this.entries[index - this.entriesStart]!.term;
    }
    if (index === this.entriesStart - 1) return this.startTerm;
    if (index === this.compactIndex) return this.compactTerm;
    return undefined;
  }

  /** A deep-enough copy (entries are immutable and shared). */
  clone(): LogState {
    const c = new LogState();
    c.snapshot = this.snapshot;
    c.compactIndex = this.compactIndex;
    c.compactTerm = this.compactTerm;
    c.entriesStart = this.entriesStart;
    c.startTerm = this.startTerm;
    c.entries = this.entries.slice();
    c.hardState = this.hardState;
    c.repairThrough = this.repairThrough;
    return c;
  }

  // ---- save: snapshot install, entries, hard state ----

  planSave(update: RaftLogUpdate): PlannedSave {
    const snapshot = update.snapshot;
    let compactIndex = this.compactIndex;
    let snapshotIndex = this.snapshot.metadata.index;
    let lastIndex = this.lastIndex;
    let termBefore = (index: number): number | undefined => this.termAt(index);
    if (snapshot !== undefined) {
      const { index, term } = snapshot.metadata;
      checkNumber(index, "snapshot index");
      checkNumber(term, "snapshot term");
      const newer = index > Math.max(snapshotIndex, compactIndex);
      const bootstrap = index === 0 && lastIndex === 0;
      if (!newer && !bootstrap) {
        throw new RaftError(
          "SNAPSHOT_OUT_OF_DATE",
          `snapshot at index ${index} is out of date: the log's snapshot is at ${snapshotIndex} ` +
            `and it is compacted through ${compactIndex}`,
        );
      }
      compactIndex = index;
      snapshotIndex = index;
      lastIndex = index;
      termBefore = (i) => (i === index ? term : undefined);
    }

    let entries = update.entries ?? [];
    if (entries.length > 0) {
      const first = entries[0]!;
      checkNumber(first.index, "entry index");
      checkNumber(first.term, "entry term");
      let prev = first;
      for (let i = 1; i < entries.length; i++) {
        const e = entries[i]!;
        if (e.index !== prev.index + 1) {
          throw invalid(`entries are not consecutive: index ${e.index} follows ${prev.index}`);
        }
        checkNumber(e.term, "entry term");
        if (e.term < prev.term) {
          throw invalid(
            `entry ${e.index} has term ${e.term}, lower than entry ${prev.index}'s ${prev.term}`,
          );
        }
        prev = e;
      }
      if (first.index <= compactIndex) {
        const skip = Math.min(entries.length, compactIndex + 1 - first.index);
        entries = entries.slice(skip);
      }
    }
    if (entries.length > 0) {
      const first = entries[0]!;
      if (first.index > lastIndex + 1) {
        throw invalid(`entry ${first.index} would leave a gap after the last index ${lastIndex}`);
      }
      if (first.index <= snapshotIndex) {
        throw invalid(
          `entry ${first.index} would replace entries at or below the snapshot index ${snapshotIndex}`,
        );
      }
      const before = termBefore(first.index - 1);
      if (before !== undefined && first.term < before) {
        throw invalid(
          `entry ${first.index} has term ${first.term}, lower than the term ${before} of the entry before it`,
        );
      }
      lastIndex = entries[entries.length - 1]!.index;
    }

    const current = this.hardState;
    const hardState = update.hardState ?? current;
    if (hardState !== current) {
      checkNumber(hardState.term, "hard state term");
      checkNumber(hardState.vote, "hard state vote");
      checkNumber(hardState.commit, "hard state commit");
      if (hardState.term < current.term) {
        throw invalid(
          `hard state term ${hardState.term} is lower than the stored term ${current.term}`,
        );
      }
      if (
        hardState.term === current.term &&
        current.vote !== NONE &&
        hardState.vote !== current.vote
      ) {
        throw invalid(
          `hard state changes the vote of term ${current.term} from ${current.vote} to ${hardState.vote}`,
        );
      }
    }
    if (hardState.commit > lastIndex) {
      throw invalid(`hard state commit ${hardState.commit} is past the last index ${lastIndex}`);
    }
    const changes =
      snapshot !== undefined || entries.length > 0 || !sameHardState(hardState, current);
    return { hardState, snapshot, entries, lastIndex, changes };
  }

  /**
   * Applies a planned save. Returns the lowest index whose previously stored entry is no
   * longer part of the log (1 after a snapshot install: every older record is superseded),
   * or Infinity when nothing stored was replaced.
   */
  applySave(plan: PlannedSave): number {
    let replacedFrom = Number.POSITIVE_INFINITY;
    const snapshot = plan.snapshot;
    if (snapshot !== undefined) {
      const { index, term } = snapshot.metadata;
      this.snapshot = snapshot;
      this.compactIndex = index;
      this.compactTerm = term;
      this.entriesStart = index + 1;
      this.startTerm = term;
      this.entries = [];
      replacedFrom = 1;
      if (this.repairThrough !== 0 && index >= this.repairThrough) this.repairThrough = 0;
    }
    const entries = plan.entries;
    if (entries.length > 0) {
      const first = entries[0]!.index;
      if (first < this.entriesStart) {
        // Recovery only: the entries overwrite part of an open gap.
        this.startTerm = this.termAt(first - 1);
        this.entriesStart = first;
        this.entries = [];
        replacedFrom = Math.min(replacedFrom, first);
      } else if (first <= this.lastIndex) {
        this.entries.length = first - this.entriesStart;
        replacedFrom = Math.min(replacedFrom, first);
      }
      for (const e of entries) this.entries.push(e);
      const last = entries[entries.length - 1]!.index;
      if (this.repairThrough !== 0 && last >= this.repairThrough) this.repairThrough = 0;
    }
    this.hardState = plan.hardState;
    return replacedFrom;
  }

  // ---- the application's snapshot ----

  /**
   * The snapshot the application took at `index`; throws if it cannot be recorded.
   * `knownTerm` (recovery only): the entry's term as the record states it, used when the
   * entry lies in an open gap.
   */
  planCreateSnapshot(
    index: number,
    confState: ConfState,
    data: Uint8Array,
    knownTerm?: number,
  ): Snapshot {
    checkNumber(index, "snapshot index");
    const current = this.snapshot.metadata.index;
    if (index <= current) {
      throw new RaftError(
        "SNAPSHOT_OUT_OF_DATE",
        `snapshot at index ${index} is out of date: the log's snapshot is at ${current}`,
      );
    }
    if (index > this.lastIndex) {
      throw new RaftError(
        "UNAVAILABLE",
        `snapshot at index ${index} is past the last index ${this.lastIndex}`,
      );
    }
    const term = this.termAt(index) ?? knownTerm;
    if (term === undefined) {
      throw new RaftError("COMPACTED", `snapshot at index ${index}: the entry is compacted`);
    }
    return { metadata: { index, term, confState }, data };
  }

  applyCreateSnapshot(snapshot: Snapshot): void {
    this.snapshot = snapshot;
  }

  // ---- compaction ----

  /**
   * The term of the entry at `index`, the new compaction point; throws if not allowed.
   * `knownTerm` (recovery only): the term as the record states it, for an entry in a gap.
   */
  planCompact(index: number, knownTerm?: number): number {
    checkNumber(index, "compaction index");
    if (index <= this.compactIndex) {
      throw new RaftError(
        "COMPACTED",
        `compaction to ${index}: the log is already compacted through ${this.compactIndex}`,
      );
    }
    const snapshotIndex = this.snapshot.metadata.index;
    if (index > snapshotIndex) {
      throw invalid(
        `compaction to ${index} would pass the snapshot at ${snapshotIndex}: take a snapshot first`,
      );
    }
    const term = this.termAt(index) ?? knownTerm;
    if (term === undefined) throw invalid(`compaction to ${index}: the entry's term is not known`);
    return term;
  }

  applyCompact(index: number, term: number): void {
    if (index >= this.entriesStart - 1) {
      this.entries = this.entries.slice(index + 1 - this.entriesStart);
      this.entriesStart = index + 1;
      this.startTerm = term;
    }
    this.compactIndex = index;
    this.compactTerm = term;
  }

  /**
   * Recovery only: drops every entry after the snapshot (or the compaction point, if
   * later), leaving snapshot + nothing; for a log whose entries cannot be trusted.
   */
  dropEntries(): void {
    const { index, term } = this.snapshot.metadata;
    if (index > this.compactIndex) {
      this.compactIndex = index;
      this.compactTerm = term;
    }
    this.entriesStart = this.compactIndex + 1;
    this.startTerm = this.compactTerm;
    this.entries = [];
  }

  // ---- segment headers ----

  /** The header of a new segment holding this state (`selfContained`: with every entry). */
  header(
    seq: number,
    previousSeq: number,
    previousEnd: number,
    selfContained: boolean,
  ): HeaderRecord {
    const lastIndex = this.lastIndex;
    const complete = selfContained || lastIndex === this.compactIndex;
    return {
      kind: "header",
      syncedEnd: 0,
      lastIndex,
      hardState: this.hardState,
      seq,
      previousSeq: complete ? 0 : previousSeq,
      previousEnd: complete ? 0 : previousEnd,
      compactIndex: this.compactIndex,
      compactTerm: this.compactTerm,
      lastTerm: this.termAt(lastIndex) ?? 0,
      repairThrough: this.repairThrough,
      snapshot: this.snapshot,
      entries: complete ? this.entries : [],
    };
  }

  /** The state a header describes; throws RaftError MALFORMED if it is inconsistent. */
  static fromHeader(h: HeaderRecord): LogState {
    const problem = headerProblem(h);
    if (problem !== undefined) throw new RaftError("MALFORMED", `segment header: ${problem}`);
    const s = new LogState();
    s.snapshot = h.snapshot;
    s.compactIndex = h.compactIndex;
    s.compactTerm = h.compactTerm;
    s.entriesStart = h.lastIndex - h.entries.length + 1;
    s.startTerm =
      s.entriesStart - 1 === h.compactIndex
        ? h.compactTerm
        : h.entries.length === 0
          ? h.lastTerm
          : undefined;
    s.entries = h.entries.slice();
    s.hardState = h.hardState;
    s.repairThrough = h.repairThrough;
    return s;
  }

  /** Why a header does not describe this state (undefined: it does). */
  headerMismatch(h: HeaderRecord): string | undefined {
    const mine = `compacted through ${this.compactIndex} (term ${this.compactTerm}), last index ${this.lastIndex} (term ${this.termAt(this.lastIndex)}), snapshot at ${this.snapshot.metadata.index}, ${formatHardState(this.hardState)}, repair through ${this.repairThrough}`;
    const theirs = `compacted through ${h.compactIndex} (term ${h.compactTerm}), last index ${h.lastIndex} (term ${h.lastTerm}), snapshot at ${h.snapshot.metadata.index}, ${formatHardState(h.hardState)}, repair through ${h.repairThrough}`;
    const last = this.termAt(this.lastIndex);
    const same =
      h.compactIndex === this.compactIndex &&
      h.compactTerm === this.compactTerm &&
      h.lastIndex === this.lastIndex &&
      (last === undefined || h.lastTerm === last) &&
      h.snapshot.metadata.index === this.snapshot.metadata.index &&
      h.snapshot.metadata.term === this.snapshot.metadata.term &&
      sameHardState(h.hardState, this.hardState) &&
      h.repairThrough === this.repairThrough;
    return same ? undefined : `the header says ${theirs}; the log before it is ${mine}`;
  }
}

/** True iff the header holds every retained entry (recovery needs no older segment). */
export function isSelfContained(h: HeaderRecord): boolean {
  return h.entries.length === h.lastIndex - h.compactIndex;
}

function headerProblem(h: HeaderRecord): string | undefined {
  const snapshotIndex = h.snapshot.metadata.index;
  if (h.compactIndex > snapshotIndex) {
    return `compaction point ${h.compactIndex} past the snapshot at ${snapshotIndex}`;
  }
  if (snapshotIndex > h.lastIndex) {
    return `snapshot at ${snapshotIndex} past the last index ${h.lastIndex}`;
  }
  if (h.entries.length > h.lastIndex - h.compactIndex) {
    return `${h.entries.length} entries after the compaction point ${h.compactIndex} but last index ${h.lastIndex}`;
  }
  const start = h.lastIndex - h.entries.length + 1;
  for (let i = 0; i < h.entries.length; i++) {
    if (h.entries[i]!.index !== start + i) return `entries not consecutive up to ${h.lastIndex}`;
  }
  const last = h.entries[h.entries.length - 1];
  if (last !== undefined && last.term !== h.lastTerm) {
    return `last entry's term ${last.term} is not the last term ${h.lastTerm}`;
  }
  if (h.hardState.commit > h.lastIndex) {
    return `commit ${h.hardState.commit} past the last index ${h.lastIndex}`;
  }
  return undefined;
}
