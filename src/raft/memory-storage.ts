/**
 * An in-memory RaftStorage (after etcd-io/raft's MemoryStorage): for tests, for the
 * simulation, and for applications that keep their own durable copy (write each Ready
 * to disk, and to a MemoryStorage the core reads from). Nothing here is durable.
 *
 * Layout: `ents[0]` stands for the snapshot's last entry (its index and term, no data);
 * `ents[k]` is the entry at index snapshotIndex + k.
 */
import { RaftError } from "./errors.js";
import type { ConfState, Entry, HardState, InitialState, RaftStorage, Snapshot } from "./types.js";

const NO_DATA = new Uint8Array(0);

export interface MemoryStorageOptions {
  /** The configuration the group starts with (bootstrap): the snapshot at index 0 carries it. */
  readonly confState?: ConfState;
  /** Start from this snapshot instead (its configuration is the initial one). */
  readonly snapshot?: Snapshot;
}

export class MemoryStorage implements RaftStorage {
  private hard: HardState = { term: 0, vote: 0, commit: 0 };
  private snap: Snapshot;
  private ents: Entry[];
  private repair: { readonly throughIndex: number } | undefined = undefined;

  constructor(options: MemoryStorageOptions = {}) {
    const snapshot = options.snapshot ?? {
      metadata: { index: 0, term: 0, confState: options.confState ?? { voters: [], learners: [] } },
      data: NO_DATA,
    };
    this.snap = snapshot;
    this.ents = [dummy(snapshot)];
    if (snapshot.metadata.index > 0) {
      this.hard = { term: snapshot.metadata.term, vote: 0, commit: snapshot.metadata.index };
    }
  }

  initialState(): InitialState {
    const base = { hardState: this.hard, confState: this.snap.metadata.confState };
    return this.repair === undefined ? base : { ...base, repair: this.repair };
  }

  /** Reports damage on the next `initialState()` (see InitialState.repair); undefined clears it. */
  setRepair(throughIndex: number | undefined): void {
    this.repair = throughIndex === undefined ? undefined : { throughIndex };
  }

  hardState(): HardState {
    return this.hard;
  }

  setHardState(hs: HardState): void {
    this.hard = hs;
  }

  private offset(): number {
    return this.ents[0]!.index;
  }

  firstIndex(): number {
    return this.offset() + 1;
  }

  lastIndex(): number {
    return this.offset() + this.ents.length - 1;
  }

  term(index: number): number {
    const off = this.offset();
    if (index < off)
      throw new RaftError("COMPACTED", `term(${index}): compacted (first index ${off + 1})`);
    const e = this.ents[index - off];
    if (e === undefined) {
      throw new RaftError(
        "UNAVAILABLE",
        `term(${index}): beyond the last index ${this.lastIndex()}`,
      );
    }
    return e.term;
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const off = this.offset();
    if (lo <= off)
      throw new RaftError("COMPACTED", `entries(${lo}): compacted (first index ${off + 1})`);
    if (hi > this.lastIndex() + 1) {
      throw new RaftError(
        "UNAVAILABLE",
        `entries(${lo}, ${hi}): beyond the last index ${this.lastIndex()}`,
      );
    }
    const out: Entry[] = [];
    let size = 0;
    for (let i = lo; i < hi; i++) {
      const e = this.ents[i - off]!;
      size += e.data.length;
      if (out.length > 0 && size > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  /**
   * Appends entries (consecutive indexes, the first at most lastIndex + 1): an entry at an
   * index already stored replaces the stored entries from there on; entries at or below the
   * snapshot are ignored.
   */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    if (entries[0]!.index === this.lastIndex() + 1) {
      for (let i = 0; i < entries.length; i++) this.ents.push(entries[i]!);
      return;
    }
    const first = this.firstIndex();
    const last = entries[entries.length - 1]!.index;
    if (last < first) return;
    let start = 0;
    if (entries[0]!.index < first) start = first - entries[0]!.index;
    const from = entries[start]!.index;
    const off = this.offset();
    if (from > this.lastIndex() + 1) {
      throw new RaftError(
        "INVALID_ARGUMENT",
        `append: entry ${from} leaves a gap after the last index ${this.lastIndex()}`,
      );
    }
    this.ents.length = from - off;
    for (let i = start; i < entries.length; i++) this.ents.push(entries[i]!);
  }

  /** Replaces the whole log with `snap` (a snapshot from the leader). */
  applySnapshot(snap: Snapshot): void {
    if (snap.metadata.index <= this.snap.metadata.index) {
      throw new RaftError(
        "SNAPSHOT_OUT_OF_DATE",
        `applySnapshot: snapshot ${snap.metadata.index} is not newer than ${this.snap.metadata.index}`,
      );
    }
    this.snap = snap;
    this.ents = [dummy(snap)];
  }

  /**
   * Records the application's snapshot at `index` (<= the last index, newer than the
   * current snapshot) with the configuration as of that index; entries stay until `compact`.
   */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    if (index <= this.snap.metadata.index) {
      throw new RaftError(
        "SNAPSHOT_OUT_OF_DATE",
        `createSnapshot(${index}): not newer than the snapshot at ${this.snap.metadata.index}`,
      );
    }
    if (index > this.lastIndex()) {
      throw new RaftError(
        "UNAVAILABLE",
        `createSnapshot(${index}): beyond the last index ${this.lastIndex()}`,
      );
    }
    this.snap = { metadata: { index, term: this.term(index), confState }, data };
    return this.snap;
  }

  /** Drops the entries up to `index` (REQUIRES: a snapshot at or after it exists, index <= last). */
  compact(index: number): void {
    const off = this.offset();
    if (index <= off)
      throw new RaftError("COMPACTED", `compact(${index}): already compacted to ${off}`);
    if (index > this.lastIndex()) {
      throw new RaftError(
        "UNAVAILABLE",
        `compact(${index}): beyond the last index ${this.lastIndex()}`,
      );
    }
    const e = this.ents[index - off]!;
    const kept = this.ents.slice(index - off + 1);
    kept.unshift({ term: e.term, index: e.index, type: "normal", data: NO_DATA });
    this.ents = kept;
  }

  /** Drops the entries after `index` (tests: a crash that lost a damaged tail). */
  truncateAfter(index: number): void {
    const off = this.offset();
    if (index < off)
      throw new RaftError("COMPACTED", `truncateAfter(${index}): below the snapshot ${off}`);
    if (index - off + 1 < this.ents.length) this.ents.length = index - off + 1;
  }

  /** Persists a Ready's snapshot, entries and hard state, in that order. */
  save(rd: {
    readonly snapshot: Snapshot | undefined;
    readonly entries: readonly Entry[];
    readonly hardState: HardState | undefined;
  }): void {
    if (rd.snapshot !== undefined) this.applySnapshot(rd.snapshot);
    this.append(rd.entries);
    if (rd.hardState !== undefined) this.setHardState(rd.hardState);
  }

  /** A copy sharing no mutable state (entries are immutable and shared). */
  clone(): MemoryStorage {
    const c = new MemoryStorage({ snapshot: this.snap });
    c.ents = this.ents.slice();
    c.hard = this.hard;
    c.repair = this.repair;
    return c;
  }
}

function dummy(s: Snapshot): Entry {
  return { term: s.metadata.term, index: s.metadata.index, type: "normal", data: NO_DATA };
}
