/**
 * A watcher process of the watch benchmarks (forked by ./watch-load.ts): `watchers`
 * watchers of one prefix on one member, over one @grpc/grpc-js channel (one HTTP/2
 * connection) carrying ceil(watchers / perStream) Watch streams, `perStream` watchers each,
 * as a clientv3 or Kubernetes user multiplexes them. Each response is read with
 * ./watch-codec.ts; with `latency`, each event's value stamp (./watch-stamp.ts) gives the
 * time from its put's send to its arrival here.
 *
 * IPC protocol: the parent sends `{type: "spec", spec}`; the child connects and, for
 * watchers from now (startRevision 0), creates every watcher and waits for each `created`;
 * then answers `{type: "ready"}`. Then rounds of: `{type: "go"}` starts a round (its counts
 * from zero; the first one creates watchers with a start revision), answered `{type:
 * "started"}` (the parent writes only then: an event read before "go" would be reset
 * away); `{type: "until",
 * revision, withinMs}`: once every watcher received an event at or above `revision` (or
 * `withinMs` passed: the result then says `complete: false`), the child answers `{type:
 * "result", result}` (the round's). The parent kills the child when done. A canceled
 * watcher or a failed stream ends the child with `{type: "failed", error}`. A child whose
 * parent goes away exits.
 */
import { Client, type ClientDuplexStream, credentials, Metadata } from "@grpc/grpc-js";
import type { EtcdLibraryKind } from "./etcd-client-ops.js";
import { LibraryWatching } from "./watch-by-library.js";
import { decodeWatchResponse, ETCD_WATCH, encodeWatchCreate } from "./watch-codec.js";
import { type WatcherState, WatchTally } from "./watch-tally.js";

export interface WatchClientSpec {
  endpoint: string;
  watchers: number;
  perStream: number;
  /** The watched range [key, rangeEnd), latin1. */
  key: string;
  rangeEnd: string;
  /** 0: from now (created before "ready"); else the first revision (created at "go"). */
  startRevision: number;
  /** Record each measured event's latency from its value's stamp. */
  latency: boolean;
  /** The run's epoch, a process.hrtime.bigint() reading, in decimal. */
  epochNs: string;
  /**
   * Watch through this client library (./watch-by-library.ts: one watch per watcher, the
   * library's own streams; `perStream` unused) instead of raw streams over grpc-js.
   */
  client?: EtcdLibraryKind;
}

export interface WatchClientResult {
  /** Every watcher reached the `until` revision. */
  complete: boolean;
  /** Events received by all watchers since "go". */
  events: number;
  /** Fewest and most events one watcher received, and the lowest last revision. */
  minEvents: number;
  maxEvents: number;
  minRevision: number;
  /** Responses received since "go". */
  responses: number;
  /** Times since the epoch: "go", the first and the last event (ns; 0: none). */
  goNs: number;
  firstEventNs: number;
  lastEventNs: number;
  /** With `latency`: the latency of each measured event, ns. */
  latenciesNs: number[];
  /** CPU (user + system) of this process from "go" to the result, seconds. */
  clientCpuSeconds: number;
}

export type ToWatchClient =
  | { type: "spec"; spec: WatchClientSpec }
  | { type: "go" }
  | { type: "until"; revision: number; withinMs: number };
export type FromWatchClient =
  | { type: "ready" }
  | { type: "started" }
  | { type: "result"; result: WatchClientResult }
  | { type: "failed"; error: string };

const identity = (b: Buffer): Buffer => b;

/** Raw Watch streams over one @grpc/grpc-js channel, read with ./watch-codec.ts. */
class Watching extends WatchTally {
  private readonly client: Client;
  private readonly streams: ClientDuplexStream<Buffer, Buffer>[] = [];

  constructor(spec: WatchClientSpec, fail: (error: string) => void) {
    super(spec, fail);
    this.client = new Client(spec.endpoint, credentials.createInsecure(), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    });
    const count = Math.ceil(spec.watchers / spec.perStream);
    for (let i = 0; i < count; i++) this.streams.push(this.open(i));
  }

  private open(i: number): ClientDuplexStream<Buffer, Buffer> {
    const call = this.client.makeBidiStreamRequest(ETCD_WATCH, identity, identity, new Metadata());
    const byId = new Map<number, WatcherState>();
    let now = 0;
    const onValue = (value: Uint8Array) => this.stamped(value, now);
    call.on("data", (message: Buffer) => {
      now = this.now();
      const r = decodeWatchResponse(message, this.spec.latency ? onValue : undefined);
      if (r.canceled) {
        this.fail(
          `stream ${i}: watcher ${r.watchId} canceled (compact_revision ${r.compactRevision}, ` +
            `reason "${r.cancelReason}")`,
        );
        return;
      }
      if (r.created) byId.set(r.watchId, this.added());
      if (r.events === 0) return;
      const w = byId.get(r.watchId);
      if (w === undefined) {
        this.fail(`stream ${i}: events for watcher ${r.watchId}, never created`);
        return;
      }
      this.delivered(w, r.events, r.lastModRevision, now);
    });
    call.on("error", (err: Error) => this.fail(`stream ${i}: ${err.message}`));
    return call;
  }

  /** Creates this stream's share of the watchers; resolves once every one is created. */
  create(): Promise<void> {
    const { key, rangeEnd, startRevision, watchers, perStream } = this.spec;
    const request = encodeWatchCreate(
      Buffer.from(key, "latin1"),
      Buffer.from(rangeEnd, "latin1"),
      startRevision,
    );
    const done = this.allCreated();
    for (let w = 0; w < watchers; w++) this.streams[Math.floor(w / perStream)]!.write(request);
    return done;
  }

  close(): void {
    for (const s of this.streams) s.cancel();
    this.client.close();
  }
}

function send(m: FromWatchClient, then: () => void = () => {}): void {
  process.send?.(m, undefined, {}, then);
}

let watching: WatchTally | undefined;
let failed = false;
let createdAtGo = false;
const fail = (error: string) => {
  if (failed) return;
  failed = true;
  send({ type: "failed", error }, () => process.exit(1));
};
process.on("disconnect", () => process.exit(0));
process.on("message", (m: ToWatchClient) => {
  if (m.type === "spec") {
    const w =
      m.spec.client === undefined ? new Watching(m.spec, fail) : new LibraryWatching(m.spec, fail);
    watching = w;
    (m.spec.startRevision === 0 ? w.create() : Promise.resolve()).then(
      () => send({ type: "ready" }),
      (err: unknown) => fail(String(err)),
    );
  } else if (m.type === "go" && watching !== undefined) {
    const w = watching;
    w.go();
    send({ type: "started" });
    if (w.spec.startRevision !== 0 && !createdAtGo) {
      createdAtGo = true;
      w.create().catch((err: unknown) => fail(String(err)));
    }
  } else if (m.type === "until" && watching !== undefined) {
    const w = watching;
    w.reach(m.revision, m.withinMs).then(() => send({ type: "result", result: w.finish() }));
  }
});
