/**
 * The cursor every sorted source of internal keys offers (memtable, SSTable block, table,
 * level, merging iterator), so the read path can merge them without knowing their kind.
 *
 * Order is internal-key order (src/key/internal-key.ts). Positioning methods may leave
 * the iterator invalid (before the first or after the last entry). The accessors and
 * `next`/`prev` REQUIRE `valid()`. Accessor results are views that stay valid only until
 * the iterator moves, unless an implementation documents more.
 */
import type { ValueKind } from "./internal-key.js";

export interface InternalIterator {
  /** True iff the iterator is positioned on an entry. */
  valid(): boolean;
  /** Positions on the first entry (invalid if there is none). */
  seekToFirst(): void;
  /** Positions on the last entry (invalid if there is none). */
  seekToLast(): void;
  /** Positions on the first entry >= the internal key (key, seq, highest kind). */
  seek(key: Uint8Array, seq: number): void;
  /** Positions on the last entry <= the internal key (key, seq, lowest kind). */
  seekForPrev(key: Uint8Array, seq: number): void;
  /** Moves to the following entry. REQUIRES valid(). */
  next(): void;
  /** Moves to the preceding entry. REQUIRES valid(). */
  prev(): void;
  /** User key of the current entry. REQUIRES valid(). */
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;
  /** Releases what the iterator holds (pinned blocks, table references). Idempotent. */
  close(): void;
}
