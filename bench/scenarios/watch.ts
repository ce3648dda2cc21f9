/**
 * The Watch scenarios (issue 29, point 8): etcd's Watch on a 3-member kv-engine cluster and
 * a 3-member etcd 3.4 cluster, durable, each started fresh per run, through the same
 * client code for both: watcher processes (bench/cluster/watch-client.ts: @grpc/grpc-js
 * bidirectional streams, WATCHERS_PER_STREAM watchers per stream, one connection per
 * process, one process per member, the watchers split evenly among them) and one writer
 * (puts to the leader from the benchmark's process through the lean client,
 * bench/cluster/watch-load.ts), every put a new key `key_%012d` under the watched prefix
 * `key_`, so that each put is one event for every watcher.
 *
 * - `watch_latency`: LATENCY_WATCHERS watchers; puts at LATENCY_RATE/s (open loop) for a
 *   warm-up then the window (n ms); per event of a put sent in the window, the time from
 *   the put's send to the event's arrival in the watcher's process (the put's value
 *   carries its send time: bench/cluster/watch-stamp.ts): p50/p99/max.
 * - `watch_fanout`: FANOUT_WATCHERS watchers; n/10 puts untimed (until every watcher has
 *   them), then n puts, WRITER_IN_FLIGHT in flight: events delivered per second, all
 *   watchers together, from the first put's send to the last event's arrival.
 * - `watch_catchup`: n puts (WRITER_IN_FLIGHT in flight, untimed), then one watcher on the
 *   leader from the first of their revisions: events per second from its create
 *   request's send to the arrival of the newest revision.
 *
 * Every watcher must receive each event exactly once: a watcher with fewer or more events
 * than puts fails the run (reported with the counts).
 */
import { settledLeader } from "../cluster/cluster.js";
import { decodeRange, ETCD_RANGE, encodeRange } from "../cluster/etcd-codec.js";
import { LeanGrpcClient } from "../cluster/lean-grpc-client.js";
import type { WatchClientSpec } from "../cluster/watch-client.js";
import { type PutsSpec, WatcherGroup, type WatchRound, writePuts } from "../cluster/watch-load.js";
import { summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import { formatKey, valueSource } from "../lib/workload.js";
import type { BenchStore } from "../stores/store.js";
import {
  CALL_TIMEOUT_MS,
  CLUSTER_STORES,
  clusterBase,
  clusterOf,
  SERIAL,
  TERM_CHANGES,
  termOf,
  warmupOf,
} from "./cluster.js";
import type { ScenarioContext, ScenarioOutput, StoreScenario } from "./scenario.js";

export const LATENCY_WATCHERS = 100;
export const LATENCY_RATE = 500;
export const FANOUT_WATCHERS = 1000;
export const WATCHERS_PER_STREAM = 10;
export const WRITER_IN_FLIGHT = 64;
/** The watched prefix and its range end. */
const PREFIX = "key_";
const PREFIX_END = "key`";
/** How long the watchers get to reach the last put's revision once it is answered. */
const DELIVERY_MS = 240_000;

/** Measurement.values keys. */
export const WATCH_CLIENT_CPU_US = "clientCpuUsPerEvent";
export const WATCH_SERVER_CPU_US = "serverCpuUsPerEvent";
export const WATCH_EVENTS_PER_RESPONSE = "eventsPerResponse";
export const WATCH_PUTS_PER_SEC = "putsPerSec";
/** watch_latency: the writer's put p50 (send to answer), ms: the part before the write is acknowledged. */
export const WATCH_PUT_P50_MS = "putP50Ms";

const encoder = new TextEncoder();
const keyOf = (i: number) => encoder.encode(formatKey(i));

/** A watcher process's spec: `watchers` watchers of PREFIX on `endpoint`. */
function watcherSpec(
  endpoint: string,
  watchers: number,
  startRevision: number,
  latency: boolean,
  epoch: bigint,
): WatchClientSpec {
  return {
    endpoint,
    watchers,
    perStream: WATCHERS_PER_STREAM,
    key: PREFIX,
    rangeEnd: PREFIX_END,
    startRevision,
    latency,
    epochNs: epoch.toString(),
  };
}

/**
 * `watchers` watchers from now, split evenly over one process per member (the members in
 * start order), WATCHERS_PER_STREAM per stream.
 */
function spreadWatchers(
  store: BenchStore,
  watchers: number,
  latency: boolean,
  epoch: bigint,
): WatchClientSpec[] {
  const c = clusterOf(store);
  const names = c.names();
  return names.map((name, i) => {
    const share = Math.floor(watchers / names.length) + (i < watchers % names.length ? 1 : 0);
    return watcherSpec(c.clientAddress(name), share, 0, latency, epoch);
  });
}

/** The member's current revision (a serializable Range's header). */
async function currentRevision(endpoint: string): Promise<number> {
  const client = new LeanGrpcClient(endpoint, CALL_TIMEOUT_MS);
  try {
    const [res] = await client.call(ETCD_RANGE, encodeRange(keyOf(0), undefined, 1, true));
    return decodeRange(res!).revision;
  } finally {
    client.close();
  }
}

/** The row's common figures: CPU per event, events per response. */
function perEvent(round: WatchRound, serverCpuSeconds: number): Record<string, number> {
  return {
    [WATCH_CLIENT_CPU_US]: (round.clientCpuSeconds * 1e6) / round.events,
    [WATCH_SERVER_CPU_US]: (serverCpuSeconds * 1e6) / round.events,
    [WATCH_EVENTS_PER_RESPONSE]: round.events / round.responses,
  };
}

function describe(v: Record<string, number>, what: string): string {
  return (
    `${what}; ${v[WATCH_EVENTS_PER_RESPONSE]!.toFixed(1)} events per response, ` +
    `watcher processes' CPU ${v[WATCH_CLIENT_CPU_US]!.toFixed(2)} µs per event, ` +
    `servers' CPU (all members) ${v[WATCH_SERVER_CPU_US]!.toFixed(2)} µs per event`
  );
}

/** A throughput row: the round's events over `seconds`. */
function eventsRow(
  round: WatchRound,
  seconds: number,
  values: Record<string, number>,
  what: string,
): Measurement {
  return {
    label: SERIAL,
    ops: round.events,
    seconds,
    opsPerSec: round.events / seconds,
    description: describe(
      values,
      `${round.events.toLocaleString("en-US")} events${what} in ${seconds.toFixed(2)} s`,
    ),
    values,
  };
}

/** Runs `measure` with the leader's address; fails the run if the leader changed meanwhile. */
async function onLeader(
  store: BenchStore,
  measure: (leader: string) => Promise<Measurement>,
): Promise<ScenarioOutput> {
  const c = clusterOf(store);
  const leader = await settledLeader(c);
  const before = await termOf(c);
  const row = await measure(leader);
  const after = await termOf(c);
  if ((await settledLeader(c)) !== leader || after !== before) {
    throw new Error(`the leader changed during the measurement (term ${before} -> ${after})`);
  }
  return { rows: [row], extra: { [TERM_CHANGES]: after - before } };
}

function putsOf(ctx: ScenarioContext, epoch: bigint): Omit<PutsSpec, "first" | "count"> {
  return {
    key: keyOf,
    value: valueSource(ctx.valueSize, ctx.seed),
    inFlight: WRITER_IN_FLIGHT,
    epoch,
    timeoutMs: CALL_TIMEOUT_MS,
  };
}

export const watchLatency: StoreScenario = {
  ...clusterBase,
  name: "watch_latency",
  title: `Watch latency, ${LATENCY_WATCHERS} watchers: 3-node kv-engine vs 3-node etcd, same clients`,
  unit: "events",
  sizeLine: (n, valueSize) =>
    `${LATENCY_WATCHERS} watchers of the prefix \`${PREFIX}\` (grpc-js bidirectional streams, ` +
    `${WATCHERS_PER_STREAM} watchers per stream, one process and connection per member, the ` +
    `watchers split evenly); one writer puts new 16-byte keys with ${valueSize}-byte values ` +
    `to the leader at ${LATENCY_RATE}/s (open loop, at most ${WRITER_IN_FLIGHT} in flight, ` +
    `lean client) for a ${warmupOf(n)} ms warm-up, then a ${n} ms window; latency: from a ` +
    "put's send to its event's arrival in each watcher's process, for the window's puts " +
    "(every watcher's event counted); events/s: those events per second of the window. " +
    "3 durable members on loopback per system, started fresh per run.",
  run: (store, ctx) =>
    onLeader(store, async (leader) => {
      const c = clusterOf(store);
      const epoch = process.hrtime.bigint();
      const warmup = Math.ceil((LATENCY_RATE * warmupOf(ctx.n)) / 1000);
      const count = warmup + Math.ceil((LATENCY_RATE * ctx.n) / 1000);
      return WatcherGroup.with(
        spreadWatchers(store, LATENCY_WATCHERS, true, epoch),
        async (group) => {
          await group.go();
          const cpu0 = c.cpuSeconds();
          const puts = await writePuts(c.clientAddress(leader), {
            ...putsOf(ctx, epoch),
            first: 0,
            count,
            ratePerSec: LATENCY_RATE,
            measured: (i) => i >= warmup,
          });
          const round = await group.round(puts.revision, count, DELIVERY_MS);
          const values = perEvent(round, c.cpuSeconds() - cpu0);
          const putsPerSec = (count * 1e9) / (puts.lastAnsweredNs - puts.firstSentNs);
          values[WATCH_PUTS_PER_SEC] = putsPerSec;
          const putP50 = summarize(Float64Array.from(puts.latenciesNs)).p50Ns / 1e6;
          values[WATCH_PUT_P50_MS] = putP50;
          const samples = round.latenciesNs.length;
          return {
            label: SERIAL,
            ops: samples,
            seconds: ctx.n / 1000,
            opsPerSec: samples / (ctx.n / 1000),
            latency: summarize(round.latenciesNs),
            description: describe(
              values,
              `puts at ${putsPerSec.toFixed(0)}/s, put p50 ${putP50.toFixed(2)} ms (send to answer)`,
            ),
            values,
          };
        },
      );
    }),
};

export const watchFanout: StoreScenario = {
  kind: "store",
  name: "watch_fanout",
  title: `Watch fan-out, ${FANOUT_WATCHERS.toLocaleString("en-US")} watchers of one prefix: 3-node kv-engine vs 3-node etcd`,
  sync: true,
  stores: CLUSTER_STORES,
  unit: "events",
  defaultN: (quick) => (quick ? 2_000 : 10_000),
  minTimeoutSeconds: () => 600,
  sizeLine: (n, valueSize) =>
    `${FANOUT_WATCHERS.toLocaleString("en-US")} watchers of the prefix \`${PREFIX}\` (grpc-js ` +
    `bidirectional streams, ${WATCHERS_PER_STREAM} watchers per stream, one process and ` +
    "connection per member, the watchers split evenly); one writer puts new 16-byte keys " +
    `with ${valueSize}-byte values to the leader, ${WRITER_IN_FLIGHT} in flight (lean client): ` +
    `${Math.ceil(n / 10).toLocaleString("en-US")} puts untimed (until every watcher has ` +
    `them), then n = ${n.toLocaleString("en-US")} puts; events/s: every watcher's events ` +
    "together, from the first timed put's send to the last event's arrival. 3 durable " +
    "members on loopback per system, started fresh per run.",
  run: (store, ctx) =>
    onLeader(store, async (leader) => {
      const c = clusterOf(store);
      const epoch = process.hrtime.bigint();
      const to = c.clientAddress(leader);
      const warmup = Math.ceil(ctx.n / 10);
      return WatcherGroup.with(
        spreadWatchers(store, FANOUT_WATCHERS, false, epoch),
        async (group) => {
          await group.go();
          const warm = await writePuts(to, { ...putsOf(ctx, epoch), first: 0, count: warmup });
          await group.round(warm.revision, warmup, DELIVERY_MS);
          await group.go();
          const cpu0 = c.cpuSeconds();
          const puts = await writePuts(to, { ...putsOf(ctx, epoch), first: warmup, count: ctx.n });
          const round = await group.round(puts.revision, ctx.n, DELIVERY_MS);
          const values = perEvent(round, c.cpuSeconds() - cpu0);
          const putsPerSec = (ctx.n * 1e9) / (puts.lastAnsweredNs - puts.firstSentNs);
          values[WATCH_PUTS_PER_SEC] = putsPerSec;
          const seconds = (round.lastEventNs - puts.firstSentNs) / 1e9;
          return eventsRow(round, seconds, values, `, puts at ${putsPerSec.toFixed(0)}/s,`);
        },
      );
    }),
};

export const watchCatchup: StoreScenario = {
  kind: "store",
  name: "watch_catchup",
  title: "Watch catch-up, one watcher from far back: 3-node kv-engine vs 3-node etcd",
  sync: true,
  stores: CLUSTER_STORES,
  unit: "events",
  defaultN: (quick) => (quick ? 20_000 : 100_000),
  minTimeoutSeconds: () => 600,
  sizeLine: (n, valueSize) =>
    `n = ${n.toLocaleString("en-US")} puts of new 16-byte keys with ${valueSize}-byte values ` +
    `(one revision each; ${WRITER_IN_FLIGHT} in flight to the leader, untimed), then one ` +
    `watcher of the prefix \`${PREFIX}\` on the leader (grpc-js bidirectional stream) from ` +
    "the first of their revisions; events/s: from its create request's send to " +
    "the arrival of the newest revision's event. 3 durable members on loopback per system, " +
    "started fresh per run.",
  run: (store, ctx) =>
    onLeader(store, async (leader) => {
      const c = clusterOf(store);
      const epoch = process.hrtime.bigint();
      const to = c.clientAddress(leader);
      const start = (await currentRevision(to)) + 1;
      const puts = await writePuts(to, { ...putsOf(ctx, epoch), first: 0, count: ctx.n });
      const expected = puts.revision - start + 1;
      if (expected !== ctx.n) {
        throw new Error(`${ctx.n} puts took revisions ${start} to ${puts.revision}`);
      }
      const spec = watcherSpec(to, 1, start, false, epoch);
      return WatcherGroup.with([spec], async (group) => {
        const cpu0 = c.cpuSeconds();
        await group.go();
        const round = await group.round(puts.revision, expected, DELIVERY_MS);
        const values = perEvent(round, c.cpuSeconds() - cpu0);
        const seconds = (round.lastEventNs - round.goNs) / 1e9;
        return eventsRow(round, seconds, values, ` (revisions ${start} to ${puts.revision})`);
      });
    }),
};
