/**
 * One watcher of etcd's Watch service: what it watches (a key, or a range with etcd's
 * conventions), its options, the stream it answers on (WatchSink), and where it stands:
 * `next`, the lowest revision whose events it has not been sent yet.
 */
import type { WatchEvent } from "./watch-events.js";

/** What the hub (watch-hub.ts) needs of the stream a watcher answers on (watch-stream.ts). */
export interface WatchSink {
  /**
   * True while the stream can take no more (a Watch stream: its send buffer is full beyond
   * the client's flow-control window): the hub then sends its watchers no events (they
   * fall behind and catch up from the store later).
   */
  readonly blocked: boolean;
  /**
   * Sends `events` (of revisions up to `revision`, the header's) to `w`, as
   * `e.message(w.options.prevKv)` or its encoding `e.encoded(...)` (prev_kv looked up).
   */
  sendEvents(w: Watcher, events: readonly WatchEvent[], revision: number): void;
  /** Tells `w` it was canceled: its next revision was compacted (`compactRevision`). */
  sendCompacted(w: Watcher, compactRevision: number): void;
}

export interface WatcherOptions {
  /** Leave out put events (etcd's NOPUT filter). */
  readonly noPut: boolean;
  /** Leave out delete events (NODELETE). */
  readonly noDelete: boolean;
  /** Send each event's previous version of the key (prev_kv). */
  readonly prevKv: boolean;
  /** Send progress notifications when idle (progress_notify). */
  readonly progressNotify: boolean;
  /** Split a large response into fragments. */
  readonly fragment: boolean;
}

/** No filters, no prev_kv, no progress notifications, no fragments. */
export const PLAIN_WATCHER_OPTIONS: WatcherOptions = {
  noPut: false,
  noDelete: false,
  prevKv: false,
  progressNotify: false,
  fragment: false,
};

export class Watcher {
  /** Set once canceled or closed: nothing more is sent. */
  canceled = false;
  /** In the hub's synced group (else unsynced). */
  synced = false;
  /** No events sent since the last progress tick (watch-stream.ts). */
  idle = true;
  /** The lowest revision not yet sent: events below it were sent or are not wanted. */
  next: number;
  /** Date.now() before which the hub sends it no history (WatchHubOptions.catchUpDelayMs). */
  notBefore = 0;

  /**
   * Watches [key, end): `end` empty means `key` alone, [0x00] every key >= `key` (etcd's
   * range_end). `startRevision` 0 means from the hub's revision on (the caller sets `next`).
   */
  constructor(
    readonly id: bigint,
    readonly key: Uint8Array,
    readonly end: Uint8Array,
    readonly startRevision: number,
    readonly options: WatcherOptions,
    readonly sink: WatchSink,
  ) {
    this.next = startRevision;
  }

  /** True iff the watcher watches one key. */
  get single(): boolean {
    return this.end.length === 0;
  }

  /** True iff `k` is in the watched range. */
  matches(k: Uint8Array): boolean {
    const end = this.end;
    if (end.length === 0) return Buffer.compare(k, this.key) === 0;
    if (Buffer.compare(k, this.key) < 0) return false;
    return (end.length === 1 && end[0] === 0) || Buffer.compare(k, end) < 0;
  }

  /** True iff the filters let an event of this type through. */
  accepts(type: "put" | "delete"): boolean {
    return type === "put" ? !this.options.noPut : !this.options.noDelete;
  }
}

/** True iff [key, end) holds no key (etcd's ErrEmptyWatcherRange): an end at or before key. */
export function isEmptyWatchRange(key: Uint8Array, end: Uint8Array): boolean {
  if (end.length === 0 || (end.length === 1 && end[0] === 0)) return false;
  return Buffer.compare(key, end) >= 0;
}
