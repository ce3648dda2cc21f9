/**
 * The multi-version key-value model (docs/format/mvcc.md; etcd's `mvcc` package is the
 * reference): one store-wide revision counter; each write that changes keys advances it by
 * exactly one and all its changes carry that revision; every key keeps its versions until
 * they are compacted. The etcd API (src/etcd/) and kv.v1 on a cluster read and write
 * through these interfaces.
 *
 * Ranges follow etcd's conventions: `[key, end)`, where an empty `end` means `key` alone
 * and `end = [0x00]` means every key >= `key` (an empty `key` with it: every key).
 */
import type { WriteBatch } from "../batch/write-batch.js";

/** One version of a key, as etcd's `mvccpb.KeyValue`. */
export interface KeyValue {
  readonly key: Uint8Array;
  /** The revision of the put that created the key (since its last deletion). */
  readonly createRevision: number;
  /** The revision of the last change to the key. */
  readonly modRevision: number;
  /** 1 at creation, +1 per put; a deletion ends the key's generation. */
  readonly version: number;
  readonly value: Uint8Array;
  /** The lease the key is attached to (0n: none); etcd's lease IDs use all 64 bits. */
  readonly lease: bigint;
}

export interface RangeOptions {
  /** At most this many kvs (0 or absent: no limit). `count` ignores it. */
  readonly limit?: number;
  /** Read as of this revision (0 or absent: the view's revision). */
  readonly revision?: number;
  /** Return no kvs, only `count`. */
  readonly countOnly?: boolean;
}

export interface RangeResult {
  /** The live keys of the range as of the revision read, in key order, at most `limit`. */
  readonly kvs: KeyValue[];
  /** How many live keys the range holds at that revision (ignoring `limit`). */
  readonly count: number;
  /** The revision read (the view's revision when none was asked). */
  readonly revision: number;
}

/**
 * A consistent view of the store. `range` throws KvError COMPACTED for a revision below
 * `compactRevision` (the compacted revision itself stays readable) and FUTURE_REVISION for
 * one above `revision`.
 */
export interface MvccView {
  /** The last revision the view includes. */
  readonly revision: number;
  /** The revision history was compacted to (0: never); reads below it fail. */
  readonly compactRevision: number;
  range(key: Uint8Array, end: Uint8Array, options?: RangeOptions): Promise<RangeResult>;
}

/** A view of the visible state that pins it until released. */
export interface MvccReadView extends MvccView {
  release(): void;
}

/**
 * One write transaction (etcd's TxnWrite). Its reads see every earlier write transaction
 * (ended, visible or not yet) and its own changes. Its changes carry revision
 * `beginRevision + 1`; `revision` is `beginRevision` until the first change and
 * `beginRevision + 1` after it. Keys and values are not copied: the caller must not
 * change them until `end` resolves.
 */
export interface MvccWrite extends MvccView {
  /** The store's revision when the transaction began. */
  readonly beginRevision: number;
  /**
   * Puts `key` = `value` on `lease`: a new version (version + 1; created at this
   * revision when the key is absent). Resolves with the key's previous live version.
   */
  put(key: Uint8Array, value: Uint8Array, lease: bigint): Promise<KeyValue | undefined>;
  /** Deletes the live keys of the range; resolves with their last versions, in key order. */
  deleteRange(key: Uint8Array, end: Uint8Array): Promise<KeyValue[]>;
  /**
   * Ends the transaction: its changes, the revision counter and `extra`'s operations (the
   * caller's own keys, outside the MVCC key space) go to the store as ONE atomic batch,
   * after every earlier write's. Resolves when the batch is visible to reads (and to
   * `MvccStore.read`). The next `write` may begin as soon as `end` is called. A
   * rejection means the store failed: its state past the last visible write is unknown.
   */
  end(extra?: (batch: WriteBatch) => void): Promise<void>;
}

/** The compaction a `compact` call started. */
export interface Compaction {
  /** Resolves when the history below the revision is removed from the store. */
  readonly done: Promise<void>;
}

/** A multi-version store: the real one (mvcc-store.ts) and the test model implement it. */
export interface Mvcc {
  /**
   * The revision of the last write ended (visible or not yet). A new store is at revision
   * 1, as etcd's is: its first write gets revision 2.
   */
  readonly revision: number;
  /** The compacted revision as of the last compaction started (0: never). */
  readonly compactRevision: number;
  /** A view of the visible state (every write whose `end` resolved). */
  read(): MvccReadView;
  /** Begins a write transaction. REQUIRES: no other write begun and not yet ended. */
  write(): MvccWrite;
  /**
   * Compacts history to `revision`: reads below it fail from now on; each key keeps its
   * newest version at or below it (none if that is a deletion). Ordered after every
   * earlier write, atomic with `extra` like `MvccWrite.end`. Throws KvError COMPACTED when
   * `revision <= compactRevision` and FUTURE_REVISION when `revision > this.revision`,
   * doing nothing. REQUIRES: no write open.
   */
  compact(revision: number, extra?: (batch: WriteBatch) => void): Compaction;
  /**
   * Gathers the writes and compactions ended from now until `release` into one store
   * batch (a new one whenever it passes `maxBytes`), written at `release`: a caller that
   * knows a burst in advance (the apply of a Ready's entries) pays one store write for it.
   * Their promises settle after `release`; reads inside later writes see them as before.
   * The revision counter is written once per batch, and `trailer` (the caller's state that
   * only the last write of a batch needs to record, such as an applied index) adds its
   * operations last to each batch written. REQUIRES: not held.
   */
  hold(maxBytes: number, trailer?: (batch: WriteBatch) => void): void;
  /** Writes what `hold` gathered (nothing when not held). */
  release(): void;
}
