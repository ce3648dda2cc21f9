/**
 * Test support for the durable Raft log: a plain model of the log (written independently
 * of src/raft/storage/log-state.ts), a seeded generator of valid operations (appends,
 * overwrites of an uncommitted suffix, hard-state changes, snapshot installs, the
 * application's snapshots, compactions, reopens), and a canonical view of a log to
 * compare a storage with the model.
 */
import type { RaftLogStorage } from "../../../src/raft/storage/index.js";
import type { RaftLogUpdate } from "../../../src/raft/storage/log-state.js";
import {
  type ConfState,
  EMPTY_SNAPSHOT,
  type Entry,
  type HardState,
  type Snapshot,
} from "../../../src/raft/types.js";
import { randInt } from "../../support/random.js";

export type LogOp =
  | { readonly kind: "save"; readonly update: RaftLogUpdate }
  | {
      readonly kind: "createSnapshot";
      readonly index: number;
      readonly confState: ConfState;
      readonly data: Uint8Array;
    }
  | { readonly kind: "compact"; readonly index: number }
  | { readonly kind: "reopen" };

/** Everything a log holds, as comparable text. */
export interface LogView {
  readonly firstIndex: number;
  readonly lastIndex: number;
  /** Term of the entry before the first one. */
  readonly termBefore: number;
  readonly entries: readonly string[];
  readonly hardState: string;
  readonly snapshot: string;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");

export function entryText(e: Entry): string {
  return `${e.index}/${e.term}/${e.type}/${hex(e.data)}`;
}

export function hardStateText(hs: HardState): string {
  return `term ${hs.term} vote ${hs.vote} commit ${hs.commit}`;
}

export function snapshotText(s: Snapshot): string {
  const m = s.metadata;
  return `${m.index}/${m.term} voters ${m.confState.voters.join(",")} learners ${m.confState.learners.join(",")} data ${hex(s.data)}`;
}

/** The canonical view of a storage (every entry read through the RaftStorage API). */
export function viewOf(st: RaftLogStorage): LogView {
  const first = st.firstIndex();
  const last = st.lastIndex();
  const entries = last >= first ? st.entries(first, last + 1, Number.MAX_SAFE_INTEGER) : [];
  return {
    firstIndex: first,
    lastIndex: last,
    termBefore: st.term(first - 1),
    entries: entries.map(entryText),
    hardState: hardStateText(st.initialState().hardState),
    snapshot: snapshotText(st.snapshot()),
  };
}

/** The model: the log as a plain list after a compaction point. */
export class LogModel {
  snapshot: Snapshot = EMPTY_SNAPSHOT;
  compactIndex = 0;
  compactTerm = 0;
  entries: Entry[] = [];
  hardState: HardState = { term: 0, vote: 0, commit: 0 };

  get lastIndex(): number {
    return this.compactIndex + this.entries.length;
  }

  termAt(index: number): number {
    if (index === this.compactIndex) return this.compactTerm;
    const e = this.entries[index - this.compactIndex - 1];
    if (e === undefined) throw new Error(`model: no entry ${index}`);
    return e.term;
  }

  apply(op: LogOp): void {
    switch (op.kind) {
      case "save": {
        const u = op.update;
        if (u.snapshot !== undefined) {
          this.snapshot = u.snapshot;
          this.compactIndex = u.snapshot.metadata.index;
          this.compactTerm = u.snapshot.metadata.term;
          this.entries = [];
        }
        for (const e of u.entries ?? []) {
          if (e.index <= this.compactIndex) continue;
          this.entries.length = e.index - this.compactIndex - 1;
          this.entries.push(e);
        }
        if (u.hardState !== undefined) this.hardState = u.hardState;
        break;
      }
      case "createSnapshot":
        this.snapshot = {
          metadata: { index: op.index, term: this.termAt(op.index), confState: op.confState },
          data: op.data,
        };
        break;
      case "compact":
        this.compactTerm = this.termAt(op.index);
        this.entries = this.entries.slice(op.index - this.compactIndex);
        this.compactIndex = op.index;
        break;
      case "reopen":
        break;
    }
  }

  view(): LogView {
    return {
      firstIndex: this.compactIndex + 1,
      lastIndex: this.lastIndex,
      termBefore: this.compactTerm,
      entries: this.entries.map(entryText),
      hardState: hardStateText(this.hardState),
      snapshot: snapshotText(this.snapshot),
    };
  }
}

export interface GeneratorOptions {
  /** Largest entry data, bytes. */
  maxData: number;
  /** Share of saves with mustSync false. */
  unsyncedShare: number;
  /** Share of reopen operations. */
  reopenShare: number;
}

function bytes(r: () => number, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = randInt(r, 256);
  return b;
}

function entries(
  r: () => number,
  from: number,
  count: number,
  term: number,
  maxData: number,
): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < count; i++) {
    out.push({
      index: from + i,
      term,
      type: r() < 0.1 ? "confChange" : "normal",
      data: bytes(r, randInt(r, maxData + 1)),
    });
  }
  return out;
}

/** The next valid operation for the model's current state (it does not apply it). */
export function nextOp(model: LogModel, r: () => number, options: GeneratorOptions): LogOp {
  const hs = model.hardState;
  const last = model.lastIndex;
  const snapIndex = model.snapshot.metadata.index;
  const mustSync = r() >= options.unsyncedShare;
  const roll = r();
  if (roll < options.reopenShare) return { kind: "reopen" };
  const p = (roll - options.reopenShare) / (1 - options.reopenShare);
  if (hs.term === 0 || p < 0.08) {
    // A new term (an election): maybe a vote, commit unchanged.
    const term = hs.term + 1;
    return {
      kind: "save",
      update: { hardState: { term, vote: randInt(r, 4), commit: hs.commit }, mustSync: true },
    };
  }
  if (p < 0.5) {
    const es = entries(r, last + 1, 1 + randInt(r, 4), hs.term, options.maxData);
    const newLast = last + es.length;
    const commit = r() < 0.6 ? hs.commit + randInt(r, newLast - hs.commit + 1) : hs.commit;
    const vote = hs.vote === 0 && r() < 0.3 ? 1 + randInt(r, 3) : hs.vote;
    return {
      kind: "save",
      update: { entries: es, hardState: { term: hs.term, vote, commit }, mustSync },
    };
  }
  const floor = Math.max(hs.commit, snapIndex);
  if (p < 0.6 && last > floor) {
    // A new leader overwrites part of the uncommitted suffix.
    const from = floor + 1 + randInt(r, last - floor);
    const term = hs.term + 1;
    const es = entries(r, from, 1 + randInt(r, 3), term, options.maxData);
    return {
      kind: "save",
      update: {
        entries: es,
        hardState: { term, vote: randInt(r, 4), commit: hs.commit },
        mustSync,
      },
    };
  }
  if (p < 0.66) {
    // A leader's snapshot past the log's end, maybe with entries after it.
    const index = last + 1 + randInt(r, 5);
    const term = hs.term + randInt(r, 2);
    const snapshot: Snapshot = {
      metadata: { index, term, confState: { voters: [1, 2, 3], learners: r() < 0.3 ? [4] : [] } },
      data: bytes(r, randInt(r, 40)),
    };
    const es = r() < 0.5 ? entries(r, index + 1, 1 + randInt(r, 3), term, options.maxData) : [];
    return {
      kind: "save",
      update: {
        snapshot,
        entries: es,
        hardState: { term, vote: hs.term === term ? hs.vote : 0, commit: index },
      },
    };
  }
  if (p < 0.78 && hs.commit > snapIndex) {
    const index = snapIndex + 1 + randInt(r, hs.commit - snapIndex);
    return {
      kind: "createSnapshot",
      index,
      confState: { voters: [1, 2, 3], learners: [] },
      data: bytes(r, randInt(r, 40)),
    };
  }
  if (p < 0.9 && snapIndex > model.compactIndex) {
    return {
      kind: "compact",
      index: model.compactIndex + 1 + randInt(r, snapIndex - model.compactIndex),
    };
  }
  const commit = hs.commit < last ? hs.commit + 1 + randInt(r, last - hs.commit) : hs.commit;
  return { kind: "save", update: { hardState: { ...hs, commit }, mustSync } };
}

/** Performs a log operation other than reopen on a storage. */
export async function applyToStorage(st: RaftLogStorage, op: LogOp): Promise<void> {
  switch (op.kind) {
    case "save":
      await st.save(op.update);
      break;
    case "createSnapshot":
      await st.createSnapshot(op.index, op.confState, op.data);
      break;
    case "compact":
      await st.compact(op.index);
      break;
    case "reopen":
      throw new Error("reopen is the caller's");
  }
}

/** True iff the operation is durable once it resolves. */
export function syncs(op: LogOp): boolean {
  return op.kind !== "save" || op.update.mustSync !== false || op.update.snapshot !== undefined;
}
