/**
 * One Watch stream (etcd's serverWatchStream): its watchers by ID, the answers to its
 * requests, and the responses the hub (watch-hub.ts) sends its watchers, all written to
 * the gRPC call in the order they are made, as etcd 3.5 sends them:
 *
 * - create: `created` with the watch ID (the client's `watch_id`, or the lowest free one
 *   from 0 up) and the hub's current revision in the header (a watcher from "now" starts
 *   after it); refused creates are answered with
 *   `created` and `canceled`, watch ID -1 and etcd's reason (a negative start revision,
 *   an empty range, an ID in use on the stream).
 * - cancel: `canceled` for a watcher of the stream; nothing for an unknown ID.
 * - progress_request: a response with watch ID -1 at the hub's revision once every
 *   watcher of the stream is synced (at once when it is, and with no watcher).
 * - progress_notify: every `progressIntervalMs`, a watcher that asked for it and was sent
 *   no events since the last tick is sent an empty response at the hub's revision, if
 *   synced (not otherwise: etcd 15220).
 * - events: one response per watcher per hub batch; with `fragment`, a response larger
 *   than the limit is split into responses of whole events, all but the last marked
 *   `fragment`.
 * - compacted: `compact_revision` and `canceled`, header revision 0, as etcd sends it.
 */
import { create } from "@bufbuild/protobuf";
import type { ServerCall } from "../grpc/server-call.js";
import {
  type ResponseHeader,
  ResponseHeaderSchema,
  type WatchCreateRequest,
  WatchCreateRequest_FilterType,
  type WatchRequest,
  type WatchResponse,
  WatchResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdHeaderIds } from "./etcd-backend.js";
import { ETCD_ERRORS } from "./etcd-errors.js";
import type { WatchEvent } from "./watch-events.js";
import type { SyncWaiter, WatchHub } from "./watch-hub.js";
import {
  encodeEventsResponse,
  eventFieldBytes,
  eventsResponseBaseBytes,
  HeaderEncoder,
} from "./watch-response-codec.js";
import { isEmptyWatchRange, Watcher, type WatchSink } from "./watcher.js";

/** etcd's reasons for refusing a create (mvcc's errors' texts). */
export const WATCH_CANCEL_REASONS = {
  COMPACTED: ETCD_ERRORS.COMPACTED.message,
  EMPTY_RANGE: "mvcc: watcher range is empty",
  DUPLICATE_ID: "mvcc: duplicate watch ID provided on the WatchStream",
} as const;

export interface WatchStreamOptions {
  /** Between progress notifications (etcd's --experimental-watch-progress-notify-interval). */
  readonly progressIntervalMs: number;
  /** A response at least this large (encoded) is fragmented when the watcher asked. */
  readonly fragmentBytes: number;
  /**
   * Response bytes the stream may hold beyond the client's flow-control window (etcd's
   * per-watcher channel and gRPC write quota): once more wait, the stream is `blocked`
   * (its watchers receive nothing more and fall behind) until all have left.
   */
  readonly sendBufferBytes: number;
}

/** WatchStreamOptions.sendBufferBytes by default. */
export const DEFAULT_WATCH_SEND_BUFFER_BYTES = 1 << 20;

const ZERO = new Uint8Array([0]);
const EMPTY = new Uint8Array(0);

export class WatchStream implements WatchSink, SyncWaiter {
  private readonly watchers = new Map<bigint, Watcher>();
  private nextId = 0n;
  private readonly headers = new HeaderEncoder();
  private blockedNow = false;
  private closed = false;
  private progressWanted = false;
  private ticker: NodeJS.Timeout | undefined;

  constructor(
    private readonly call: ServerCall<WatchResponse>,
    private readonly hub: WatchHub,
    private readonly ids: () => EtcdHeaderIds,
    private readonly options: WatchStreamOptions,
  ) {}

  get blocked(): boolean {
    return this.blockedNow || this.closed;
  }

  /** Answers one request of the client. */
  handle(req: WatchRequest): void {
    if (this.closed) return;
    const u = req.requestUnion;
    if (u.case === "createRequest") this.create(u.value);
    else if (u.case === "cancelRequest") this.cancel(u.value.watchId);
    else if (u.case === "progressRequest") {
      this.progressWanted = true;
      this.hub.waitSynced(this);
    }
  }

  /** Stops: every watcher of the stream is removed from the hub. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.ticker !== undefined) clearInterval(this.ticker);
    this.hub.forget(this);
    for (const w of this.watchers.values()) this.hub.remove(w);
    this.watchers.clear();
  }

  // ---- WatchSink (the hub) ----

  sendEvents(w: Watcher, changes: readonly WatchEvent[], revision: number): void {
    if (this.closed || w.canceled) return;
    w.idle = false;
    const prevKv = w.options.prevKv;
    const events = changes.map((e) => e.encoded(prevKv));
    const header = this.headers.encode(this.ids(), revision);
    if (w.options.fragment && events.length > 1) {
      let size = eventsResponseBaseBytes(header, w.id, false);
      for (const e of events) size += eventFieldBytes(e);
      if (size >= this.options.fragmentBytes) {
        this.sendFragments(header, w.id, events);
        return;
      }
    }
    this.sendEncoded(encodeEventsResponse(header, w.id, events, false));
  }

  sendCompacted(w: Watcher, compactRevision: number): void {
    if (this.closed || this.watchers.get(w.id) !== w) return;
    this.watchers.delete(w.id);
    this.send(
      this.response(0, { watchId: w.id, canceled: true, compactRevision: BigInt(compactRevision) }),
    );
  }

  /** SyncWaiter: answers a progress request once every watcher is synced. */
  retry(): boolean {
    if (this.closed) return true;
    if (!this.progressWanted) return true;
    for (const w of this.watchers.values()) if (!this.hub.isSynced(w)) return false;
    this.progressWanted = false;
    this.send(this.response(this.hub.revision, { watchId: -1n }));
    return true;
  }

  // ---- requests ----

  private create(c: WatchCreateRequest): void {
    // Copies (small ones share Node's pool): the request's fields are views of the
    // received bytes, which a watcher must not keep alive.
    const key = c.key.length === 0 ? ZERO : Buffer.from(c.key);
    const start = c.startRevision;
    let refusal: string | undefined;
    if (start < 0n) refusal = WATCH_CANCEL_REASONS.COMPACTED;
    else if (isEmptyWatchRange(key, c.rangeEnd)) refusal = WATCH_CANCEL_REASONS.EMPTY_RANGE;
    else if (c.watchId !== 0n && this.watchers.has(c.watchId))
      refusal = WATCH_CANCEL_REASONS.DUPLICATE_ID;
    if (refusal !== undefined) {
      this.send(
        this.response(this.hub.currentRevision, {
          watchId: -1n,
          created: true,
          canceled: true,
          cancelReason: refusal,
        }),
      );
      return;
    }
    let id = c.watchId;
    if (id === 0n) {
      while (this.watchers.has(this.nextId)) this.nextId++;
      id = this.nextId++;
    }
    const filters = c.filters;
    const w = new Watcher(
      id,
      key,
      c.rangeEnd.length === 0 ? EMPTY : Buffer.from(c.rangeEnd),
      start > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(start),
      {
        noPut: filters.includes(WatchCreateRequest_FilterType.NOPUT),
        noDelete: filters.includes(WatchCreateRequest_FilterType.NODELETE),
        prevKv: c.prevKv,
        progressNotify: c.progressNotify,
        fragment: c.fragment,
      },
      this,
    );
    this.watchers.set(id, w);
    this.send(this.response(this.hub.currentRevision, { watchId: id, created: true }));
    this.hub.add(w);
    if (c.progressNotify) this.startTicker();
  }

  private cancel(id: bigint): void {
    const w = this.watchers.get(id);
    if (w === undefined) return;
    this.watchers.delete(id);
    this.hub.remove(w);
    this.send(this.response(this.hub.currentRevision, { watchId: id, canceled: true }));
  }

  private startTicker(): void {
    if (this.ticker !== undefined) return;
    this.ticker = setInterval(() => this.tick(), this.options.progressIntervalMs);
    this.ticker.unref();
  }

  /** Progress notifications to the idle synced watchers that asked for them. */
  private tick(): void {
    if (this.closed) return;
    for (const w of this.watchers.values()) {
      if (!w.options.progressNotify) continue;
      if (w.idle && this.hub.isSynced(w)) {
        this.send(this.response(this.hub.revision, { watchId: w.id }));
      }
      w.idle = true;
    }
  }

  // ---- writing ----

  private header(revision: number): ResponseHeader {
    const ids = this.ids();
    return create(ResponseHeaderSchema, {
      clusterId: ids.clusterId,
      memberId: ids.memberId,
      raftTerm: ids.raftTerm,
      revision: BigInt(revision),
    });
  }

  private response(
    revision: number,
    fields: Partial<Omit<WatchResponse, "header" | "$typeName">>,
  ): WatchResponse {
    return create(WatchResponseSchema, { header: this.header(revision), ...fields });
  }

  /** etcd's sendFragments: whole events, as many as fit under the limit (at least one). */
  private sendFragments(header: Uint8Array, watchId: bigint, events: readonly Uint8Array[]): void {
    const base = eventsResponseBaseBytes(header, watchId, false);
    const limit = this.options.fragmentBytes;
    let piece: Uint8Array[] = [];
    let size = base;
    const flush = (last: boolean) => {
      this.sendEncoded(encodeEventsResponse(header, watchId, piece, !last));
      piece = [];
      size = base;
    };
    for (const e of events) {
      const bytes = eventFieldBytes(e);
      if (piece.length > 0 && size + bytes >= limit) flush(false);
      piece.push(e);
      size += bytes;
    }
    flush(true);
  }

  private send(r: WatchResponse): void {
    if (!this.closed) this.written(this.call.write(r));
  }

  private sendEncoded(bytes: Uint8Array): void {
    if (!this.closed) this.written(this.call.writeEncoded(bytes));
  }

  /** After a write that returned `ok`: blocks the stream once its buffer is full. */
  private written(ok: boolean): void {
    if (ok) return;
    if (this.call.ended) {
      this.close();
      return;
    }
    if (this.blockedNow || this.call.unsentBytes < this.options.sendBufferBytes) return;
    this.blockedNow = true;
    void this.call.whenWritable().then(() => {
      this.blockedNow = false;
      if (this.call.ended) this.close();
      else this.hub.wake();
    });
  }
}
