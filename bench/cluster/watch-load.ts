/**
 * The parent side of the watch benchmarks: watcher processes (./watch-client.ts, forked,
 * started together and driven round by round) and the writer (puts from this process
 * through the lean client, ./lean-grpc-client.ts, each value stamped with its send time,
 * ./watch-stamp.ts).
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { decodeResponseHeader, ETCD_PUT, encodePut } from "./etcd-codec.js";
import { LeanGrpcClient } from "./lean-grpc-client.js";
import { receiver } from "./load.js";
import type {
  FromWatchClient,
  ToWatchClient,
  WatchClientResult,
  WatchClientSpec,
} from "./watch-client.js";
import { sinceEpochNs, stampValue } from "./watch-stamp.js";

const WATCH_CLIENT = fileURLToPath(new URL("./watch-client.js", import.meta.url));
/** Time a watcher process gets to connect and create its watchers. */
const READY_MS = 60_000;

interface WatchChild {
  child: ChildProcess;
  send: (m: ToWatchClient) => void;
  next: (withinMs: number) => Promise<FromWatchClient>;
}

/** Watcher processes, one per spec; `stop` kills them. */
export class WatcherGroup {
  private constructor(private readonly children: WatchChild[]) {}

  /** Starts one process per spec; resolves once every one is ready (its watchers created). */
  static async start(specs: readonly WatchClientSpec[]): Promise<WatcherGroup> {
    const children = specs.map((spec) => {
      const child = fork(WATCH_CLIENT, [], {
        execArgv: process.execArgv,
        stdio: ["ignore", "ignore", "inherit", "ipc"],
      });
      const next = receiver<FromWatchClient>(
        child,
        (deliver) => child.on("message", (m: FromWatchClient) => deliver(m)),
        (error) => ({ type: "failed", error: `watcher process: ${error}` }),
      );
      const c: WatchChild = { child, send: (m) => child.send(m), next };
      c.send({ type: "spec", spec });
      return c;
    });
    const group = new WatcherGroup(children);
    try {
      await Promise.all(children.map((c) => expect(c, "ready", READY_MS)));
    } catch (err) {
      group.stop();
      throw err;
    }
    return group;
  }

  /** Runs `body` with the processes of `specs` started (see `start`); stops them after. */
  static async with<T>(
    specs: readonly WatchClientSpec[],
    body: (group: WatcherGroup) => Promise<T>,
  ): Promise<T> {
    const group = await WatcherGroup.start(specs);
    try {
      return await body(group);
    } finally {
      group.stop();
    }
  }

  /** Starts a round in every process; resolves once each has started it. */
  async go(): Promise<void> {
    for (const c of this.children) c.send({ type: "go" });
    await Promise.all(this.children.map((c) => expect(c, "started", READY_MS)));
  }

  /**
   * The round's results once every watcher reached `revision` (each process gives up after
   * `withinMs`: its result then says `complete: false`).
   */
  async until(revision: number, withinMs: number): Promise<WatchClientResult[]> {
    for (const c of this.children) c.send({ type: "until", revision, withinMs });
    const results: WatchClientResult[] = [];
    for (const c of this.children) {
      const m = await expect(c, "result", withinMs + READY_MS);
      if (m.type === "result") results.push(m.result);
    }
    return results;
  }

  /** `until(revision, withinMs)` added up by mergeRound with `expected` events per watcher. */
  async round(revision: number, expected: number, withinMs: number): Promise<WatchRound> {
    return mergeRound(await this.until(revision, withinMs), revision, expected);
  }

  stop(): void {
    for (const c of this.children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
  }
}

async function expect(
  c: WatchChild,
  type: FromWatchClient["type"],
  withinMs: number,
): Promise<FromWatchClient> {
  const m = await c.next(withinMs);
  if (m.type === "failed") throw new Error(m.error);
  if (m.type !== type) throw new Error(`watcher process: expected ${type}, got ${m.type}`);
  return m;
}

/** A round's results together. */
export interface WatchRound {
  events: number;
  responses: number;
  /** Fewest and most events one watcher received. */
  minEvents: number;
  maxEvents: number;
  /** The earliest "go" and the last event of any process (ns since the epoch). */
  goNs: number;
  lastEventNs: number;
  latenciesNs: Float64Array;
  clientCpuSeconds: number;
}

/**
 * Adds up a round; throws unless every watcher reached the revision and received exactly
 * `expected` events (a duplicate or a missing event is a failure of the Watch service).
 */
export function mergeRound(
  results: readonly WatchClientResult[],
  revision: number,
  expected: number,
): WatchRound {
  const incomplete = results.filter((r) => !r.complete);
  if (incomplete.length > 0) {
    const lowest = Math.min(...incomplete.map((r) => r.minRevision));
    throw new Error(
      `watchers stalled: ${incomplete.length} of ${results.length} processes have a watcher ` +
        `below revision ${revision} (lowest at ${lowest}; fewest events ` +
        `${Math.min(...incomplete.map((r) => r.minEvents))} of ${expected})`,
    );
  }
  const minEvents = Math.min(...results.map((r) => r.minEvents));
  const maxEvents = Math.max(...results.map((r) => r.maxEvents));
  if (minEvents !== expected || maxEvents !== expected) {
    throw new Error(
      `a watcher received ${minEvents === expected ? maxEvents : minEvents} events, ` +
        `${expected} expected (revisions up to ${revision})`,
    );
  }
  const latencies = new Float64Array(results.reduce((a, r) => a + r.latenciesNs.length, 0));
  let at = 0;
  for (const r of results) for (const l of r.latenciesNs) latencies[at++] = l;
  return {
    events: results.reduce((a, r) => a + r.events, 0),
    responses: results.reduce((a, r) => a + r.responses, 0),
    minEvents,
    maxEvents,
    goNs: Math.min(...results.map((r) => r.goNs)),
    lastEventNs: Math.max(...results.map((r) => r.lastEventNs)),
    latenciesNs: latencies,
    clientCpuSeconds: results.reduce((a, r) => a + r.clientCpuSeconds, 0),
  };
}

export interface PutsSpec {
  /** Puts of keys `key(first) .. key(first + count - 1)`. */
  first: number;
  count: number;
  key: (i: number) => Uint8Array;
  value: (i: number) => Uint8Array;
  /** Puts outstanding at most. */
  inFlight: number;
  /** Open loop: put i is sent at `i / ratePerSec` s from the start (late ones at once). */
  ratePerSec?: number;
  /** The run's epoch (a process.hrtime.bigint() reading) the stamps count from. */
  epoch: bigint;
  /** Whether put i is measured (its stamp says so); default all. */
  measured?: (i: number) => boolean;
  timeoutMs: number;
}

export interface PutsDone {
  /** The highest revision a put's response carried. */
  revision: number;
  /** When the first put was sent and the last answered (ns since the epoch). */
  firstSentNs: number;
  lastAnsweredNs: number;
  /** Each put's latency (send to answer), ns, in the order they were answered. */
  latenciesNs: number[];
}

/** Sends the puts through `endpoint` (the lean client); rejects at the first failure. */
export async function writePuts(endpoint: string, s: PutsSpec): Promise<PutsDone> {
  const client = new LeanGrpcClient(endpoint, s.timeoutMs);
  const out: PutsDone = { revision: 0, firstSentNs: 0, lastAnsweredNs: 0, latenciesNs: [] };
  let outstanding = 0;
  let failure: unknown;
  let freed: (() => void) | undefined;
  const put = async (i: number) => {
    const sent = sinceEpochNs(s.epoch);
    const value = stampValue(s.value(i), sent, s.measured?.(i) ?? true);
    const [res] = await client.call(ETCD_PUT, encodePut(s.key(i), value));
    out.latenciesNs.push(sinceEpochNs(s.epoch) - sent);
    out.revision = Math.max(out.revision, Number(decodeResponseHeader(res!).revision));
  };
  try {
    const start = sinceEpochNs(s.epoch);
    out.firstSentNs = start;
    for (let n = 0; n < s.count && failure === undefined; n++) {
      if (s.ratePerSec !== undefined) {
        const waitMs = (start + (n * 1e9) / s.ratePerSec - sinceEpochNs(s.epoch)) / 1e6;
        if (waitMs >= 1) await new Promise((r) => setTimeout(r, waitMs));
      }
      while (outstanding >= s.inFlight) await new Promise<void>((r) => (freed = r));
      outstanding++;
      put(s.first + n).then(
        () => {
          outstanding--;
          freed?.();
        },
        (err: unknown) => {
          failure ??= err;
          outstanding--;
          freed?.();
        },
      );
    }
    while (outstanding > 0) await new Promise<void>((r) => (freed = r));
    if (failure !== undefined) throw failure;
    out.lastAnsweredNs = sinceEpochNs(s.epoch);
    return out;
  } finally {
    client.close();
  }
}
