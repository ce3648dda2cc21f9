/**
 * CompactionIterator: the keep/drop rules of a compaction, as a cursor over the entries a
 * merge of the inputs yields (internal-key order), stepping to each entry to keep.
 *
 * What is kept, per user key (versions newest first). Readers are the current state plus
 * one per live snapshot; the snapshots cut the sequence numbers into stripes: the stripe of
 * an entry is the smallest snapshot >= its sequence (or "above every snapshot"). A reader
 * at snapshot s sees the newest entry of its stripe or an older one, so:
 * 1. An entry is dropped when a newer entry of the same user key lies in the same stripe
 *    (no snapshot s with entry.seq <= s < newer.seq): no reader can see it (LevelDB's rule,
 *    exact per snapshot rather than against the oldest snapshot only).
 * 2. Of the entries left, a tombstone directly followed (older) by another kept tombstone
 *    is dropped: every reader it served finds the older tombstone instead, with the same
 *    answer ("deleted").
 * 3. The oldest entry left, if it is a tombstone, is dropped when no level below the output
 *    level holds the key (`deeperFiles`): readers of its stripe and of every older stripe
 *    then find nothing at all, which is what the tombstone told them. This is LevelDB's
 *    "seq <= smallest snapshot and base level for key" generalised: with a tombstone at or
 *    below the oldest snapshot, rule 1 already dropped everything older, so it is the
 *    oldest entry left.
 * Levels above the output level only hold newer entries of a key, which none of this can
 * change.
 *
 * Steps. `next()` returns what it stopped at:
 * - STEP_USER_KEY: the input reached a new user key (`key`), before any entry of it is
 *   kept; an output may be cut here (outputs never split a user key's versions). Every user
 *   key of the input gets one, also a key none of whose entries is kept.
 * - STEP_ENTRY: `key`, `seq`, `kind`, `value` are the next entry to write. Views: valid
 *   until the next call.
 * - STEP_SKIP: an input entry was consumed with nothing to write (dropped, or a tombstone
 *   held until what follows it is known).
 * - STEP_YIELD: `entriesIn` reached a multiple of YIELD_EVERY (event-loop-yield.ts): the
 *   caller yields before the entry is looked at.
 * - STEP_END: every entry is done (call `next` no more).
 * So the caller sees every input entry (it can poll for an abort once per step) and every
 * user-key boundary, in input order. Counters: entriesIn = entries kept (STEP_ENTRY steps)
 * + droppedVersions + droppedTombstones.
 */
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes, KIND_DELETE, KIND_PUT, type ValueKind } from "../key/internal-key.js";
import { YIELD_EVERY } from "./event-loop-yield.js";

/** A user-key range [smallest, largest], both inclusive. */
export type KeyRange = readonly [smallest: Uint8Array, largest: Uint8Array];

export const STEP_END = 0;
export const STEP_ENTRY = 1;
export const STEP_USER_KEY = 2;
export const STEP_SKIP = 3;
export const STEP_YIELD = 4;
export type CompactionStep =
  | typeof STEP_END
  | typeof STEP_ENTRY
  | typeof STEP_USER_KEY
  | typeof STEP_SKIP
  | typeof STEP_YIELD;

/** True iff no range of any deeper level holds `key`. */
export function isBaseLevelForKey(
  deeperFiles: readonly (readonly KeyRange[])[],
  key: Uint8Array,
): boolean {
  for (const ranges of deeperFiles) {
    // First range whose largest key >= key; it holds key iff its smallest key <= key.
    let lo = 0;
    let hi = ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(ranges[mid]![1], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    const r = ranges[lo];
    if (r !== undefined && compareBytes(r[0], key) <= 0) return false;
  }
  return true;
}

/** True iff a equals b[0, bLength) (bLength -1: never). */
function sameBytes(a: Uint8Array, b: Uint8Array, bLength: number): boolean {
  if (a.length !== bLength) return false;
  for (let i = bLength - 1; i >= 0; i--) if (a[i] !== b[i]) return false;
  return true;
}

// Where `next` resumes:
/** Move the input to its next entry (the first at the start). */
const ADVANCE = 0;
/** Look at the input's current entry (counted already). */
const EXAMINE = 1;
/** The current entry starts a new user key: report it. */
const NEW_KEY = 2;
/** Apply the rules to the current entry (its user key is the current one). */
const APPLY = 3;
/** Write the current entry, a put (the held tombstone before it was just written). */
const EMIT_PUT = 4;
/** The input is done: settle the held tombstone. */
const FINISH = 5;
const DONE = 6;

const NO_BYTES = new Uint8Array(0);

export class CompactionIterator {
  /** The current step's entry (STEP_ENTRY) or user key (STEP_USER_KEY). */
  key: Uint8Array = NO_BYTES;
  seq = 0;
  kind: ValueKind = KIND_PUT;
  value: Uint8Array = NO_BYTES;
  /** Entries read from the input so far. */
  entriesIn = 0;
  /** Entries (puts or tombstones) dropped by rule 1. */
  droppedVersions = 0;
  /** Tombstones dropped by rules 2 and 3. */
  droppedTombstones = 0;

  private phase = ADVANCE;
  private started = false;
  // The current user key, copied (input keys are views): userKeyBytes[0, userKeyLength),
  // userKeyLength -1 before the first entry.
  private userKeyBytes = new Uint8Array(64);
  private userKeyLength = -1;
  private lastStripe = -1;
  // A kept tombstone not yet written: rules 2 and 3 need to know what follows it.
  private heldSeq = -1;
  private heldValue: Uint8Array = NO_BYTES;

  /**
   * Over `input` (positioned by the iterator itself: it seeks to the first entry), with
   * `snapshots` the live snapshots' sequences, ascending, and `deeperFiles` the key ranges
   * of the levels below the output level (see isBaseLevelForKey).
   */
  constructor(
    private readonly input: InternalIterator,
    private readonly snapshots: readonly number[],
    private readonly deeperFiles: readonly (readonly KeyRange[])[],
  ) {}

  /** Steps (see the module comment). */
  next(): CompactionStep {
    const it = this.input;
    for (;;) {
      switch (this.phase) {
        case ADVANCE:
          if (this.started) it.next();
          else {
            it.seekToFirst();
            this.started = true;
          }
          if (!it.valid()) {
            this.phase = FINISH;
            continue;
          }
          this.entriesIn++;
          this.phase = EXAMINE;
          if (this.entriesIn % YIELD_EVERY === 0) return STEP_YIELD;
          continue;
        case EXAMINE:
          if (sameBytes(it.key, this.userKeyBytes, this.userKeyLength)) {
            this.phase = APPLY;
            continue;
          }
          this.phase = NEW_KEY;
          if (this.endKey()) return STEP_ENTRY;
          continue;
        case NEW_KEY: {
          const key = it.key;
          if (key.length > this.userKeyBytes.length) {
            this.userKeyBytes = new Uint8Array(key.length * 2);
          }
          this.userKeyBytes.set(key);
          this.userKeyLength = key.length;
          this.lastStripe = -1;
          this.key = key;
          this.phase = APPLY;
          return STEP_USER_KEY;
        }
        case APPLY:
          return this.apply();
        case EMIT_PUT:
          this.setEntry(it.key, it.seq, KIND_PUT, it.value);
          this.phase = ADVANCE;
          return STEP_ENTRY;
        case FINISH:
          this.phase = DONE;
          if (this.endKey()) return STEP_ENTRY;
          return STEP_END;
        case DONE:
          return STEP_END;
      }
    }
  }

  /** Rules 1 and 2 for the input's current entry; the held tombstone goes before a put. */
  private apply(): CompactionStep {
    const it = this.input;
    const seq = it.seq;
    const stripe = this.stripeOf(seq);
    this.phase = ADVANCE;
    if (stripe === this.lastStripe) {
      this.droppedVersions++; // rule 1
      return STEP_SKIP;
    }
    this.lastStripe = stripe;
    const kind = it.kind;
    if (kind === KIND_DELETE) {
      if (this.heldSeq >= 0) this.droppedTombstones++; // rule 2: this older one serves its readers
      this.heldSeq = seq;
      this.heldValue = it.value.slice();
      return STEP_SKIP;
    }
    if (kind !== KIND_PUT) return STEP_SKIP;
    if (this.heldSeq >= 0) {
      // The held tombstone is of this user key (endKey settled the previous ones').
      this.setEntry(it.key, this.heldSeq, KIND_DELETE, this.heldValue);
      this.heldSeq = -1;
      this.phase = EMIT_PUT;
      return STEP_ENTRY;
    }
    this.setEntry(it.key, seq, kind, it.value);
    return STEP_ENTRY;
  }

  /**
   * End of a user key's versions: rule 3 for the held tombstone. True iff it is kept (it
   * is then the current entry).
   */
  private endKey(): boolean {
    if (this.heldSeq < 0) return false;
    const seq = this.heldSeq;
    this.heldSeq = -1;
    const key = this.userKeyBytes.subarray(0, this.userKeyLength);
    if (isBaseLevelForKey(this.deeperFiles, key)) {
      this.droppedTombstones++;
      return false;
    }
    this.setEntry(key, seq, KIND_DELETE, this.heldValue);
    return true;
  }

  private setEntry(key: Uint8Array, seq: number, kind: ValueKind, value: Uint8Array): void {
    this.key = key;
    this.seq = seq;
    this.kind = kind;
    this.value = value;
  }

  /** Index of the smallest snapshot >= seq (snapshots.length: above every snapshot). */
  private stripeOf(seq: number): number {
    const snapshots = this.snapshots;
    let lo = 0;
    let hi = snapshots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (snapshots[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
