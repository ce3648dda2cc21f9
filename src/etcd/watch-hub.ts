/**
 * The watchers of one member's multi-version store and the loop that sends them their
 * events (etcd's watchableStore), all from the store's changes entries:
 *
 * - `revision`: every event up to it was sent to each synced watcher that wants it. The
 *   store tells the hub each revision that became visible (MvccStore.onVisible); the loop
 *   reads the new changes once, in batches that never split a revision, and sends each
 *   synced watcher its matching events, one response per watcher per batch.
 * - A watcher whose stream is blocked (its send buffer full: WatchStreamOptions.sendBufferBytes
 *   waiting beyond the client's flow-control window) when it has events to receive leaves
 *   the synced group (unsynced), as does a watcher created with
 *   a start revision at or below `revision`. Unsynced watchers catch up from the store,
 *   at most UNSYNCED_PER_ROUND of them per round over one read, and only while their
 *   stream can take more; once at `revision` they are synced again. So a watcher that
 *   does not read never holds up writes nor makes the hub hold events for it: it holds
 *   its position (`next`) only, and at most one response beyond the stream's buffer.
 * - A watcher whose next revision was compacted is told so (compact_revision) and removed.
 * - The store behind `source` may be replaced (a member installing a snapshot, or given
 *   revisions): `refresh` (and a check every `recheckMs`) moves the hub to the new one;
 *   events then come from its changes (or, when compacted past `revision`, each watcher
 *   is canceled with the compacted revision).
 */
import { isKvError } from "../errors.js";
import { lookUpPrevious, readEvents, type WatchableMvcc, type WatchEvent } from "./watch-events.js";
import type { Watcher } from "./watcher.js";
import { WatcherIndex } from "./watcher-index.js";

export interface WatchHubOptions {
  /** A batch read from the store stops at a revision boundary after this many events (default 1000). */
  readonly batchEvents?: number;
  /** ... or after this many bytes of keys and values (default 1 MiB). */
  readonly batchBytes?: number;
  /** Unsynced watchers caught up per round (default 512, etcd's maxWatchersPerSync). */
  readonly unsyncedPerRound?: number;
  /**
   * Events sent (summed over watchers) between two turns the hub gives the event loop
   * while it delivers a batch (default 8,192: about a megabyte of responses).
   */
  readonly sliceEvents?: number;
  /** How often the hub checks that `source` still gives the store it reads (default 1000 ms). */
  readonly recheckMs?: number;
  /**
   * A watcher created with a start revision in the past gets its history this long after
   * its `created` response (default 50 ms; etcd's sync loop runs every 100 ms), so that a
   * client that attaches its listeners once `created` came (the etcd3 npm client's
   * documented use) misses none of it.
   */
  readonly catchUpDelayMs?: number;
  /** Told of a failure of the loop (it retries at the next check). */
  readonly onError?: (err: unknown) => void;
}

/** Something waiting for every watcher of its stream to be synced (a progress request). */
export interface SyncWaiter {
  /** Returns true when done (then it is forgotten). */
  retry(): boolean;
}

export class WatchHub {
  private mvcc: WatchableMvcc | undefined;
  private unsubscribe: (() => void) | undefined;
  private started = false;
  /** The newest revision the store said is visible. */
  private visible = 0;
  private syncedRev = 0;
  private readonly synced = new WatcherIndex();
  private readonly unsynced = new Set<Watcher>();
  private readonly waiters = new Set<SyncWaiter>();
  private running = false;
  /** A run is scheduled (wake). */
  private scheduled = false;
  /** True while a synced round is between reading a batch and advancing `syncedRev`. */
  private dispatching = false;
  private dirty = false;
  private closed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly limits: { events: number; bytes: number };
  private readonly perRound: number;
  private readonly sliceEvents: number;
  private readonly catchUpDelayMs: number;

  constructor(
    private readonly source: () => WatchableMvcc | undefined,
    private readonly options: WatchHubOptions = {},
  ) {
    this.limits = { events: options.batchEvents ?? 1000, bytes: options.batchBytes ?? 1 << 20 };
    this.perRound = options.unsyncedPerRound ?? 512;
    this.sliceEvents = options.sliceEvents ?? 8192;
    this.catchUpDelayMs = options.catchUpDelayMs ?? 50;
    this.refresh();
    this.timer = setInterval(() => {
      this.refresh();
      this.wake();
    }, options.recheckMs ?? 1000);
    this.timer.unref();
  }

  /** Every event up to this revision was sent to the synced watchers (0: no store yet). */
  get revision(): number {
    return this.syncedRev;
  }

  /**
   * The newest revision the store said is visible (every write answered so far is at or
   * below it): a watcher from "now" starts after it, as etcd's from its current revision.
   */
  get currentRevision(): number {
    return Math.max(this.visible, this.syncedRev);
  }

  /** How many watchers are registered (synced + unsynced). */
  get size(): number {
    return this.synced.size + this.unsynced.size;
  }

  /** How many watchers are behind (catching up, or with a blocked stream). */
  get unsyncedCount(): number {
    return this.unsynced.size;
  }

  /**
   * Registers `w` (its `startRevision` 0: from `currentRevision` + 1 on). One that starts
   * at or below `revision` catches up from the store first; one that starts later waits.
   * Before the hub has had a store, every watcher waits unsynced for one. With
   * `catchUpNow` (a watcher of the server's own, whose sink is ready at once) its
   * history is not delayed by WatchHubOptions.catchUpDelayMs.
   */
  add(w: Watcher, catchUpNow = false): void {
    if (!this.started) {
      // No store yet (a new member awaiting its first snapshot): it waits unsynced, and
      // "from now" means from the revision the store comes with (see refresh).
      this.unsynced.add(w);
      return;
    }
    if (w.startRevision === 0) w.next = this.currentRevision + 1;
    // While a synced round sends a batch, a new watcher joins through the unsynced group:
    // the batch's events were matched before it came.
    if (w.next > this.syncedRev && !this.dispatching) this.toSynced(w);
    else if (w.next <= this.syncedRev && this.catchUpDelayMs > 0 && !catchUpNow) {
      w.notBefore = Date.now() + this.catchUpDelayMs;
      this.unsynced.add(w);
      setTimeout(() => this.wake(), this.catchUpDelayMs).unref();
    } else {
      this.unsynced.add(w);
      this.wake();
    }
  }

  /** Removes `w`: it is sent nothing more. */
  remove(w: Watcher): void {
    w.canceled = true;
    if (w.synced) this.synced.delete(w);
    else this.unsynced.delete(w);
  }

  /**
   * True iff `w` was sent every event up to `revision` and its start revision is not
   * ahead of it: a progress notification at `revision` is then true for it.
   */
  isSynced(w: Watcher): boolean {
    return w.synced && !w.canceled && w.startRevision <= this.syncedRev;
  }

  /** `waiter.retry()` is called after each round of the loop until it returns true. */
  waitSynced(waiter: SyncWaiter): void {
    if (!waiter.retry()) this.waiters.add(waiter);
  }

  forget(waiter: SyncWaiter): void {
    this.waiters.delete(waiter);
  }

  /**
   * Runs the loop (a revision became visible, a stream became writable, a watcher was
   * added...) in a later turn of the event loop (setImmediate), never inside the caller's:
   * the store tells visibility from inside a write's commit (a Raft apply), which must not
   * wait for the delivery of its events, nor the answers and Raft messages it made for
   * their flush.
   */
  wake(): void {
    this.dirty = true;
    if (this.running || this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(this.runScheduled);
  }

  private readonly runScheduled = (): void => {
    this.scheduled = false;
    if (!this.running && !this.closed) void this.run();
  };

  /** Moves to the store `source` gives now, if it changed. */
  refresh(): void {
    if (this.closed) return;
    let m: WatchableMvcc | undefined;
    try {
      m = this.source();
    } catch {
      m = undefined;
    }
    if (m === this.mvcc) return;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.mvcc = undefined;
    if (m === undefined) return;
    let visible: number;
    try {
      const view = m.read();
      visible = view.revision;
      view.release();
    } catch {
      return; // closing: the next check retries
    }
    this.mvcc = m;
    this.unsubscribe = m.onVisible((rev) => {
      if (rev > this.visible) this.visible = rev;
      this.wake();
    });
    this.visible = Math.max(this.visible, visible);
    if (!this.started) {
      this.started = true;
      this.syncedRev = visible;
      for (const w of this.unsynced) if (w.startRevision === 0) w.next = visible + 1;
    }
    this.wake();
  }

  /** Stops the loop and forgets every watcher. */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.unsubscribe?.();
    for (const w of this.synced) w.canceled = true;
    for (const w of this.unsynced) w.canceled = true;
    this.synced.clear();
    this.unsynced.clear();
    this.waiters.clear();
  }

  private toSynced(w: Watcher): void {
    this.unsynced.delete(w);
    w.synced = true;
    this.synced.add(w);
  }

  private toUnsynced(w: Watcher): void {
    this.synced.delete(w);
    w.synced = false;
    this.unsynced.add(w);
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.dirty && !this.closed) {
        this.dirty = false;
        try {
          await this.syncRound();
          await this.unsyncedRound();
        } catch (err) {
          // The store closed under the loop (a snapshot install) or failed: the next
          // check moves to the new store and wakes the loop.
          if (!(isKvError(err) && err.code === "CLOSED")) this.options.onError?.(err);
          this.mvcc = undefined;
          this.unsubscribe?.();
          this.unsubscribe = undefined;
          break;
        }
        for (const waiter of this.waiters) if (waiter.retry()) this.waiters.delete(waiter);
      }
    } finally {
      this.running = false;
    }
  }

  /** Sends the synced watchers the events of (revision, visible]. */
  private async syncRound(): Promise<void> {
    for (;;) {
      const m = this.mvcc;
      if (m === undefined || this.syncedRev >= this.visible || this.closed) return;
      const from = this.syncedRev + 1;
      if (this.synced.size === 0) {
        this.syncedRev = this.visible;
        return;
      }
      if (from < m.compactRevision) {
        // The history the synced watchers need is gone (a snapshot of a compacted store
        // was installed): each is told so by the unsynced round.
        for (const w of [...this.synced]) {
          w.next = Math.max(w.next, from);
          this.toUnsynced(w);
        }
        this.syncedRev = this.visible;
        this.dirty = true;
        return;
      }
      this.dispatching = true;
      try {
        await this.dispatch(m, from);
      } finally {
        this.dispatching = false;
      }
    }
  }

  /** Reads the batch from `from` on and sends it to the synced watchers. */
  private async dispatch(m: WatchableMvcc, from: number): Promise<void> {
    const batch = await readEvents(m, from, this.visible, this.limits);
    const byWatcher = new Map<Watcher, WatchEvent[]>();
    for (const e of batch.events) {
      this.synced.forEachMatch(e.key, (w) => {
        if (e.revision < w.next || !w.accepts(e.change.type)) return;
        const list = byWatcher.get(w);
        if (list === undefined) byWatcher.set(w, [e]);
        else list.push(e);
      });
    }
    await this.deliver(m, byWatcher, batch.last, (w) => {
      // Blocked: it catches up later from its next revision (at least `from`).
      w.next = Math.max(w.next, from);
      this.toUnsynced(w);
    });
    this.syncedRev = batch.last;
  }

  /** Catches up (part of) the unsynced watchers whose stream can take more. */
  private async unsyncedRound(): Promise<void> {
    const m = this.mvcc;
    if (m === undefined || this.unsynced.size === 0) return;
    const chosen: Watcher[] = [];
    let min = Number.MAX_SAFE_INTEGER;
    const now = Date.now();
    for (const w of this.unsynced) {
      if (w.sink.blocked || w.notBefore > now) continue;
      if (w.next < m.compactRevision) {
        this.unsynced.delete(w);
        w.canceled = true;
        w.sink.sendCompacted(w, m.compactRevision);
        continue;
      }
      if (w.next > this.syncedRev) {
        this.toSynced(w);
        continue;
      }
      chosen.push(w);
      min = Math.min(min, w.next);
      if (chosen.length >= this.perRound) break;
    }
    if (chosen.length === 0) return;
    const to = this.syncedRev;
    const batch = await readEvents(m, min, to, this.limits);
    const byWatcher = new Map<Watcher, WatchEvent[]>();
    // Each event is matched once per distinct range the chosen watchers watch (a thousand
    // watchers of one prefix: one comparison per event, not a thousand).
    const byRange = new Map<string, Watcher[]>();
    for (const w of chosen) {
      byWatcher.set(w, []);
      const id = rangeId(w);
      const same = byRange.get(id);
      if (same === undefined) byRange.set(id, [w]);
      else same.push(w);
    }
    for (const e of batch.events) {
      for (const same of byRange.values()) {
        if (!same[0]!.matches(e.key)) continue;
        for (const w of same) {
          if (e.revision >= w.next && w.accepts(e.change.type)) byWatcher.get(w)?.push(e);
        }
      }
    }
    const blocked = new Set<Watcher>();
    await this.deliver(m, byWatcher, batch.last, (w) => blocked.add(w));
    for (const w of chosen) {
      if (w.canceled || blocked.has(w)) continue;
      w.next = Math.max(w.next, batch.last + 1);
      if (w.next > this.syncedRev) this.toSynced(w);
    }
    const later = Date.now();
    for (const w of this.unsynced) {
      if (!w.sink.blocked && w.notBefore <= later) {
        this.dirty = true;
        break;
      }
    }
  }

  /**
   * Sends each watcher of `byWatcher` its events (header revision `last`), looking up
   * the previous versions wanted first; a watcher whose stream is blocked is passed to
   * `onBlocked` instead (and sent nothing). A watcher sent events gets `next` = last + 1.
   * After every `sliceEvents` events sent it lets the event loop run (setImmediate), so
   * that a large fan-out or catch-up does not hold up the connections' I/O, the clients'
   * flow-control window updates first.
   */
  private async deliver(
    m: WatchableMvcc,
    byWatcher: Map<Watcher, WatchEvent[]>,
    last: number,
    onBlocked: (w: Watcher) => void,
  ): Promise<void> {
    const wantPrev = new Set<WatchEvent>();
    for (const [w, events] of byWatcher) {
      if (w.options.prevKv) for (const e of events) wantPrev.add(e);
    }
    if (wantPrev.size > 0) {
      const view = m.read();
      try {
        await lookUpPrevious(view, wantPrev);
      } finally {
        view.release();
      }
    }
    let sent = 0;
    for (const [w, events] of byWatcher) {
      if (w.canceled || events.length === 0) continue;
      if (w.sink.blocked) {
        onBlocked(w);
        continue;
      }
      w.next = last + 1;
      w.sink.sendEvents(w, events, last);
      sent += events.length;
      if (sent >= this.sliceEvents) {
        sent = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }
}

/** The range `w` watches, as a map key (latin1 keeps every byte). */
function rangeId(w: Watcher): string {
  const latin1 = (b: Uint8Array) =>
    Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
  return `${w.key.length}:${latin1(w.key)}${latin1(w.end)}`;
}
