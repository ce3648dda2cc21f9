/**
 * Counts of the rest of a paged range, remembered between pages. A range read at a
 * revision R has one answer for as long as R is readable (compaction keeps every version
 * a read at or above the compacted revision needs), so once a page of `limit` keys
 * starting at `key` was counted, the count of the next page, which starts right after the
 * page's last key (etcd's and Kubernetes' continuation: that key followed by a 0x00 byte),
 * is the page's count less `limit`. etcd's Range reads one key beyond its limit to tell
 * `more`, so the continuation after the page's last key but one is remembered too. Paging a range of n keys by `limit` then reads n keys
 * for the counts instead of n²/(2·limit). Only reads of the store's visible state use it:
 * a write's reads also see changes not yet stored.
 */
import { keyId } from "./overlay.js";

/** Remembered continuations (least recently used forgotten first). */
const CAPACITY = 256;

function slot(key: Uint8Array, end: Uint8Array, revision: number): string {
  return `${revision}\u0000${end.length}\u0000${keyId(end)}${keyId(key)}`;
}

export class PageCounts {
  private readonly counts = new Map<string, number>();

  /** The count of the live keys of [key, end) at `revision`, if a previous page told it. */
  lookup(key: Uint8Array, end: Uint8Array, revision: number): number | undefined {
    const id = slot(key, end, revision);
    const count = this.counts.get(id);
    if (count !== undefined) {
      this.counts.delete(id);
      this.counts.set(id, count);
    }
    return count;
  }

  /**
   * Remembers that the live keys of [after ‖ 0x00, end) at `revision` number `rest` (a
   * page's count less the keys up to `after`, one the page returned).
   */
  remember(after: Uint8Array, end: Uint8Array, revision: number, rest: number): void {
    if (rest <= 0) return;
    const next = new Uint8Array(after.length + 1);
    next.set(after);
    const id = slot(next, end, revision);
    this.counts.delete(id);
    this.counts.set(id, rest);
    if (this.counts.size > CAPACITY) {
      const oldest = this.counts.keys().next();
      if (oldest.done !== true) this.counts.delete(oldest.value);
    }
  }

  /** Forgets every count (the store's revisions may be reused: MvccStore.recover). */
  clear(): void {
    this.counts.clear();
  }
}
