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
import { decodeWatchResponse, ETCD_WATCH, encodeWatchCreate } from "./watch-codec.js";
import { measuredSentNs, sinceEpochNs } from "./watch-stamp.js";

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

interface WatcherState {
  events: number;
  lastRevision: number;
}

class Watching {
  private readonly client: Client;
  private readonly streams: ClientDuplexStream<Buffer, Buffer>[] = [];
  private readonly watchers: WatcherState[] = [];
  private readonly epoch: bigint;
  private created = 0;
  private onCreated: (() => void) | undefined;
  private until: number | undefined;
  private onReached: (() => void) | undefined;
  private cpu0: NodeJS.CpuUsage | undefined;
  readonly result: WatchClientResult = {
    complete: false,
    events: 0,
    minEvents: 0,
    maxEvents: 0,
    minRevision: 0,
    responses: 0,
    goNs: 0,
    firstEventNs: 0,
    lastEventNs: 0,
    latenciesNs: [],
    clientCpuSeconds: 0,
  };

  constructor(
    readonly spec: WatchClientSpec,
    private readonly fail: (error: string) => void,
  ) {
    this.epoch = BigInt(spec.epochNs);
    this.client = new Client(spec.endpoint, credentials.createInsecure(), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    });
    const count = Math.ceil(spec.watchers / spec.perStream);
    for (let i = 0; i < count; i++) this.streams.push(this.open(i));
  }

  private open(i: number): ClientDuplexStream<Buffer, Buffer> {
    const call = this.client.makeBidiStreamRequest(ETCD_WATCH, identity, identity, new Metadata());
    const byId = new Map<number, WatcherState>();
    const latency = this.spec.latency;
    const latencies = this.result.latenciesNs;
    let now = 0;
    const onValue = (value: Uint8Array) => {
      const sent = measuredSentNs(value);
      if (sent !== undefined) latencies.push(now - sent);
    };
    call.on("data", (message: Buffer) => {
      now = sinceEpochNs(this.epoch);
      const r = decodeWatchResponse(message, latency ? onValue : undefined);
      if (r.canceled) {
        this.fail(
          `stream ${i}: watcher ${r.watchId} canceled (compact_revision ${r.compactRevision}, ` +
            `reason "${r.cancelReason}")`,
        );
        return;
      }
      if (r.created) {
        const w: WatcherState = { events: 0, lastRevision: 0 };
        byId.set(r.watchId, w);
        this.watchers.push(w);
        if (++this.created === this.spec.watchers) this.onCreated?.();
      }
      if (r.events === 0) return;
      const w = byId.get(r.watchId);
      if (w === undefined) {
        this.fail(`stream ${i}: events for watcher ${r.watchId}, never created`);
        return;
      }
      w.events += r.events;
      w.lastRevision = r.lastModRevision;
      this.result.events += r.events;
      this.result.responses++;
      if (this.result.firstEventNs === 0) this.result.firstEventNs = now;
      this.result.lastEventNs = now;
      if (this.until !== undefined && w.lastRevision >= this.until) this.check();
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
    const done = new Promise<void>((resolve) => {
      this.onCreated = resolve;
    });
    for (let w = 0; w < watchers; w++) this.streams[Math.floor(w / perStream)]!.write(request);
    return done;
  }

  /** Starts a round: the counts start from zero. */
  go(): void {
    this.cpu0 = process.cpuUsage();
    const r = this.result;
    r.goNs = sinceEpochNs(this.epoch);
    r.complete = false;
    r.events = r.responses = r.firstEventNs = r.lastEventNs = 0;
    r.latenciesNs.length = 0;
    this.until = undefined;
    for (const w of this.watchers) w.events = 0;
  }

  /** Resolves once every watcher reached `revision`, or after `withinMs`. */
  reach(revision: number, withinMs: number): Promise<void> {
    this.until = revision;
    const reached = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, withinMs);
      this.onReached = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.check();
    return reached;
  }

  private check(): void {
    if (this.until === undefined || this.created < this.spec.watchers) return;
    for (const w of this.watchers) if (w.lastRevision < this.until) return;
    this.result.complete = true;
    this.onReached?.();
  }

  /** The round's result. */
  finish(): WatchClientResult {
    const r = this.result;
    const cpu = process.cpuUsage(this.cpu0);
    r.clientCpuSeconds = (cpu.user + cpu.system) / 1e6;
    r.minEvents = Math.min(...this.watchers.map((w) => w.events));
    r.maxEvents = Math.max(...this.watchers.map((w) => w.events));
    r.minRevision = Math.min(...this.watchers.map((w) => w.lastRevision));
    if (this.watchers.length < this.spec.watchers) r.minEvents = r.minRevision = 0;
    return r;
  }

  close(): void {
    for (const s of this.streams) s.cancel();
    this.client.close();
  }
}

function send(m: FromWatchClient, then: () => void = () => {}): void {
  process.send?.(m, undefined, {}, then);
}

let watching: Watching | undefined;
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
    const w = new Watching(m.spec, fail);
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
