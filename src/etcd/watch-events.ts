/**
 * The events a watch sends, read from the store's changes (src/mvcc/changes.ts) in
 * bounded batches that never split a revision, and as etcd's mvccpb.Event messages, with
 * the previous version of the key (prev_kv) looked up once per event however many
 * watchers want it.
 */
import { create } from "@bufbuild/protobuf";
import type { MvccEvent } from "../mvcc/changes.js";
import { toPbKeyValue } from "../mvcc/requests/key-value.js";
import type { KeyValue, MvccReadView } from "../mvcc/types.js";
import { type Event, Event_EventType, EventSchema } from "../proto/gen/etcd/api/mvccpb/kv_pb.js";
import { encodeEvent } from "./watch-response-codec.js";

/** What the hub reads events from: MvccStore (src/mvcc/mvcc-store.ts). */
export interface WatchableMvcc {
  /** Reads below it fail (COMPACTED). */
  readonly compactRevision: number;
  read(): MvccReadView;
  /** The changes of revisions [from, to] visible; throws COMPACTED when from is compacted. */
  changes(from: number, to?: number): AsyncGenerator<MvccEvent, void, undefined>;
  /** Calls `listener` with each revision that became visible; returns the unsubscribe. */
  onVisible(listener: (revision: number) => void): () => void;
}

/**
 * One change as the hub hands it out: etcd's message, and its encoding, each made once
 * however many watchers get it, with prev_kv on demand.
 */
export class WatchEvent {
  private plain: Event | undefined;
  private withPrev: Event | undefined;
  private plainBytes: Uint8Array | undefined;
  private withPrevBytes: Uint8Array | undefined;
  /** The key's version before this change (undefined: none, or not looked up). */
  prev: KeyValue | undefined;
  /** Set once `prev` was looked up. */
  prevLooked = false;

  constructor(readonly change: MvccEvent) {}

  get revision(): number {
    return this.change.revision;
  }

  get key(): Uint8Array {
    return this.change.kv.key;
  }

  /** True for a put that created its key (etcd's IsCreateEvent: no previous version). */
  get isCreate(): boolean {
    const c = this.change;
    return c.type === "put" && c.kv.createRevision === c.kv.modRevision;
  }

  /** etcd's Event, with prev_kv iff `prevKv` and a previous version was found. */
  message(prevKv: boolean): Event {
    if (prevKv && this.prev !== undefined) {
      this.withPrev ??= create(EventSchema, {
        type: this.type(),
        kv: toPbKeyValue(this.change.kv),
        prevKv: toPbKeyValue(this.prev),
      });
      return this.withPrev;
    }
    this.plain ??= create(EventSchema, { type: this.type(), kv: toPbKeyValue(this.change.kv) });
    return this.plain;
  }

  /** toBinary(EventSchema, this.message(prevKv)), encoded once (by hand: watch-response-codec.ts). */
  encoded(prevKv: boolean): Uint8Array {
    const c = this.change;
    if (prevKv && this.prev !== undefined) {
      this.withPrevBytes ??= encodeEvent(c.type, c.kv, this.prev);
      return this.withPrevBytes;
    }
    this.plainBytes ??= encodeEvent(c.type, c.kv, undefined);
    return this.plainBytes;
  }

  private type(): Event_EventType {
    return this.change.type === "put" ? Event_EventType.PUT : Event_EventType.DELETE;
  }
}

export interface BatchLimits {
  /** Stop reading at the first revision boundary after this many events. */
  readonly events: number;
  /** ... or after this many key and value bytes. */
  readonly bytes: number;
}

export interface EventBatch {
  readonly events: WatchEvent[];
  /** The last revision read whole: every event of [from, last] is in `events`. */
  readonly last: number;
}

/**
 * The events of revisions [from, to] of `m`, or of [from, last] when the limits are
 * reached first (`last` >= from: a revision is never split, however large). Throws
 * COMPACTED when `from` is below the compacted revision.
 */
export async function readEvents(
  m: WatchableMvcc,
  from: number,
  to: number,
  limits: BatchLimits,
): Promise<EventBatch> {
  const events: WatchEvent[] = [];
  let bytes = 0;
  let last = from - 1;
  for await (const c of m.changes(from, to)) {
    if (c.revision !== last) {
      if (events.length >= limits.events || bytes >= limits.bytes) return { events, last };
      last = c.revision;
    }
    events.push(new WatchEvent(c));
    bytes += c.kv.key.length + c.kv.value.length;
  }
  return { events, last: to };
}

/**
 * Looks up the previous version of each event's key that has one (not a creation): the
 * key as of the revision before, read on `view`. A compacted previous version is left
 * out, as etcd leaves it out.
 */
export async function lookUpPrevious(
  view: MvccReadView,
  events: Iterable<WatchEvent>,
): Promise<void> {
  const EMPTY = new Uint8Array(0);
  for (const e of events) {
    if (e.prevLooked) continue;
    e.prevLooked = true;
    if (e.isCreate || e.revision - 1 < view.compactRevision) continue;
    try {
      const r = await view.range(e.key, EMPTY, { revision: e.revision - 1 });
      e.prev = r.kvs[0];
    } catch {
      // Compacted meanwhile: etcd sends the event without prev_kv.
    }
  }
}
