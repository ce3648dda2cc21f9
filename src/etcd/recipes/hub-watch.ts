/**
 * A watcher of the server's own on a member's WatchHub (what clientv3's Watch is to etcd's
 * concurrency recipes): the events of a key or range from a start revision, taken one
 * batch at a time. Its sink never blocks, so the hub sends it every batch as it reads it;
 * the batches wait here until taken.
 */
import { KvError } from "../../errors.js";
import type { Event } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { EtcdCallOptions } from "../etcd-backend.js";
import type { WatchEvent } from "../watch-events.js";
import type { WatchHub } from "../watch-hub.js";
import { PLAIN_WATCHER_OPTIONS, Watcher, type WatchSink } from "../watcher.js";

/** One batch: events of revisions up to `revision` (the hub's header revision). */
export interface WatchBatch {
  readonly events: Event[];
  readonly revision: number;
}

/** What `next` gives: a batch, or the watcher's next revision was compacted. */
export type WatchItem = WatchBatch | { readonly compacted: number };

export class HubWatch implements WatchSink {
  readonly blocked = false;
  private readonly watcher: Watcher;
  private readonly queue: WatchItem[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  /**
   * Watches [key, end) (`end` empty: the key alone) from `startRevision` (>= 1) on.
   * `close()` must be called once done.
   */
  constructor(
    private readonly hub: WatchHub,
    key: Uint8Array,
    end: Uint8Array,
    startRevision: number,
  ) {
    this.watcher = new Watcher(0n, key, end, startRevision, PLAIN_WATCHER_OPTIONS, this);
    hub.add(this.watcher, true);
  }

  sendEvents(_w: Watcher, events: readonly WatchEvent[], revision: number): void {
    this.push({ events: events.map((e) => e.message(false)), revision });
  }

  sendCompacted(_w: Watcher, compactRevision: number): void {
    this.push({ compacted: compactRevision });
  }

  /**
   * The next batch (or compaction notice), waiting for it. Throws KvError ABORTED when
   * `options.signal` fires first, or when the watch was closed.
   */
  async next(options: EtcdCallOptions = {}): Promise<WatchItem> {
    const signal = options.signal;
    for (;;) {
      const item = this.queue.shift();
      if (item !== undefined) return item;
      if (this.closed || signal?.aborted) throw aborted();
      await new Promise<void>((resolve) => {
        const done = () => {
          signal?.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal?.addEventListener("abort", done);
      });
    }
  }

  /** Removes the watcher from the hub; a pending `next` throws. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.hub.remove(this.watcher);
    this.wake?.();
  }

  private push(item: WatchItem): void {
    if (this.closed) return;
    this.queue.push(item);
    this.wake?.();
  }
}

function aborted(): KvError {
  return new KvError("ABORTED", "the call was cancelled while waiting");
}
