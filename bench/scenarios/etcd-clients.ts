/**
 * `etcd_clients` (issue 31, point 4): the product's Node client of etcd's API against the
 * `etcd3` npm package, the same calls against the same servers in the same run: a 3-member
 * kv-engine cluster and a 3-member etcd 3.4 cluster, durable, each started fresh per run,
 * every call to the leader. The clients (bench/cluster/etcd-client-ops.ts): EtcdClient on
 * its lean transport ("etcd-client"), EtcdClient on grpc-js ("etcd-client-grpc-js"), and
 * etcd3 1.1.2 ("etcd3").
 *
 * - put, get (a linearizable Range of one key) and txn (Kubernetes' update) over ETCD_KEYS
 *   loaded keys: per call kind and calls in flight (1, then IN_FLIGHT), each client in turn
 *   (alternated, so that drift in the machine's load spreads over all three), one client
 *   process of its own, a WARMUP_MS warm-up then an n ms window: calls/s, p50/p99, and the
 *   client process's CPU (process.cpuUsage over the window) per call, whence calls per
 *   client CPU-second;
 * - watch: one watcher of the prefix `key_` in a client process of its own, on the leader;
 *   the writer (the benchmark's process, the lean bare client, bench/cluster/watch-load.ts)
 *   puts new keys, WRITER_IN_FLIGHT in flight: watchPuts(n) / 10 untimed, then
 *   watchPuts(n) timed: events/s from the first timed put's send to the last event's
 *   arrival, the latency from each put's send to its event's arrival (p50/p99), and the
 *   watcher process's CPU per event. Every event must arrive exactly once.
 *
 * Before the rows: PRIME_MS of txns at IN_FLIGHT through the bench's lean client, untimed.
 * The client processes run beside the servers on the same cores: the figures are for
 * ratios within one run.
 */
import { settledLeader } from "../cluster/cluster.js";
import {
  ETCD_LIBRARIES,
  type EtcdLibraryKind,
  type EtcdLibraryOp,
} from "../cluster/etcd-client-ops.js";
import { LOAD_CLIENT_CPU_US, type LoadCommon, runLoad } from "../cluster/load.js";
import type { WatchClientSpec } from "../cluster/watch-client.js";
import { WatcherGroup, writePuts } from "../cluster/watch-load.js";
import { summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import { formatKey, valueSource } from "../lib/workload.js";
import {
  CALL_TIMEOUT_MS,
  clusterBase,
  clusterOf,
  load,
  PRIME_MS,
  SCAN_ROWS,
  TERM_CHANGES,
  termOf,
} from "./cluster.js";
import { ETCD_KEYS, IN_FLIGHT } from "./etcd-api.js";
import type { StoreScenario } from "./scenario.js";
import { WATCH_CLIENT_CPU_US, WRITER_IN_FLIGHT } from "./watch.js";

export const LIBRARY_OPS: readonly EtcdLibraryOp[] = ["put", "get", "txn"];
export const LIBRARY_IN_FLIGHTS: readonly number[] = [1, IN_FLIGHT];
/** Each row's warm-up: long enough for a client process's code to be compiled. */
export const WARMUP_MS = 1000;
/** Measurement.values: the client process's calls (events) per second of its CPU. */
export const CALLS_PER_CLIENT_CPU_SECOND = "callsPerClientCpuSecond";

/** Timed puts of a watch row at n (ms). */
export function watchPuts(n: number): number {
  return Math.max(5_000, 2 * n);
}

/** The label of a call row: `etcd3, put, 64 in flight`. */
export function libraryRowLabel(client: EtcdLibraryKind, o: EtcdLibraryOp, inFlight: number) {
  return `${client}, ${o}, ${inFlight} in flight`;
}

/** The label of a watch row: `etcd3, watch`. */
export function libraryWatchLabel(client: EtcdLibraryKind): string {
  return `${client}, watch`;
}

const encoder = new TextEncoder();
const PREFIX = "key_";
const PREFIX_END = "key`";
/** How long the watcher gets to reach the last put's revision once it is answered. */
const DELIVERY_MS = 120_000;

/** `usPer` µs of client CPU per call, as calls per client CPU-second, in the row's values and text. */
function withCpuRate(row: Measurement, usPer: number | undefined, what: string): Measurement {
  if (usPer === undefined || usPer <= 0) return row;
  const rate = 1e6 / usPer;
  return {
    ...row,
    description: `${row.description ?? ""}; ${rate.toFixed(0)} ${what} per client CPU-second`,
    values: { ...row.values, [CALLS_PER_CLIENT_CPU_SECOND]: rate },
  };
}

export const etcdClients: StoreScenario = {
  ...clusterBase,
  name: "etcd_clients",
  title:
    "etcd clients: EtcdClient (lean, grpc-js) vs the etcd3 npm package, 3-node kv-engine and 3-node etcd",
  minTimeoutSeconds: (n) => 600 + (LIBRARY_OPS.length * 2 * 3 * (n + WARMUP_MS)) / 1000,
  sizeLine: (n, valueSize) =>
    `Clients: ${ETCD_LIBRARIES.join(", ")} (bench/cluster/etcd-client-ops.ts), one client ` +
    `process each, to the leader. Put, linearizable get and txn (Kubernetes' update) over ` +
    `${ETCD_KEYS.toLocaleString("en-US")} loaded keys, 16-byte keys, ${valueSize}-byte values: ` +
    `1 then ${IN_FLIGHT} calls in flight, the clients alternated, each row a ${n} ms window ` +
    `after a ${WARMUP_MS} ms warm-up. Watch: one watcher of the prefix \`${PREFIX}\`, ` +
    `${watchPuts(n).toLocaleString("en-US")} puts of new keys (${WRITER_IN_FLIGHT} in flight, ` +
    "bare lean client from the benchmark's process) after a tenth as many untimed; events/s " +
    "from the first put's send to the last event, latency a put's send to its event. Client " +
    "CPU: process.cpuUsage() of the client process over the window, per call (event). " +
    "3 durable members on loopback per system, started fresh per run; clients and servers " +
    "share the machine's cores, so compare within one run.",
  async run(store, ctx) {
    const c = clusterOf(store);
    await load(c, ETCD_KEYS, ctx);
    const leader = await settledLeader(c);
    const to = c.clientAddress(leader);
    const common: LoadCommon = {
      kind: c.kind,
      api: "etcd",
      endpoints: [to],
      warmupMs: WARMUP_MS,
      durationMs: ctx.n,
      keySpace: ETCD_KEYS,
      scanRows: SCAN_ROWS,
      valueSize: ctx.valueSize,
      timeoutMs: CALL_TIMEOUT_MS,
    };
    await runLoad(
      { ...common, warmupMs: 0, durationMs: PRIME_MS },
      { label: "prime", op: "txn", procs: 1, inFlight: IN_FLIGHT, client: "lean" },
      ctx.seed + 1000,
    );
    const before = await termOf(c);
    const rows: Measurement[] = [];
    let seed = ctx.seed;
    for (const o of LIBRARY_OPS) {
      for (const n of LIBRARY_IN_FLIGHTS) {
        for (const client of ETCD_LIBRARIES) {
          const label = libraryRowLabel(client, o, n);
          const phase = { label, op: o, procs: 1, inFlight: n, client };
          const row = await runLoad(common, phase, seed++, () => c.cpuSeconds());
          rows.push(withCpuRate(row, row.values?.[LOAD_CLIENT_CPU_US], "calls"));
        }
      }
    }
    const puts = watchPuts(ctx.n);
    const warmup = Math.ceil(puts / 10);
    for (const [i, client] of ETCD_LIBRARIES.entries()) {
      const epoch = process.hrtime.bigint();
      const spec: WatchClientSpec = {
        endpoint: to,
        watchers: 1,
        perStream: 1,
        key: PREFIX,
        rangeEnd: PREFIX_END,
        startRevision: 0,
        latency: true,
        epochNs: epoch.toString(),
        client,
      };
      const first = (i + 1) * 10_000_000;
      const putsOf = (from: number, count: number) => ({
        first: from,
        count,
        key: (k: number) => encoder.encode(formatKey(k)),
        value: valueSource(ctx.valueSize, ctx.seed),
        inFlight: WRITER_IN_FLIGHT,
        epoch,
        timeoutMs: CALL_TIMEOUT_MS,
      });
      const row = await WatcherGroup.with([spec], async (group) => {
        await group.go();
        const warm = await writePuts(to, putsOf(first, warmup));
        await group.round(warm.revision, warmup, DELIVERY_MS);
        await group.go();
        const cpu0 = c.cpuSeconds();
        const done = await writePuts(to, putsOf(first + warmup, puts));
        const round = await group.round(done.revision, puts, DELIVERY_MS);
        const serverCpu = c.cpuSeconds() - cpu0;
        const seconds = (round.lastEventNs - done.firstSentNs) / 1e9;
        const clientUs = (round.clientCpuSeconds * 1e6) / round.events;
        const m: Measurement = {
          label: libraryWatchLabel(client),
          ops: round.events,
          seconds,
          opsPerSec: round.events / seconds,
          latency: summarize(round.latenciesNs),
          description:
            `${client} watcher, ${round.events.toLocaleString("en-US")} events in ` +
            `${seconds.toFixed(2)} s, ${(round.events / round.responses).toFixed(1)} events ` +
            `per response, client CPU ${clientUs.toFixed(1)} µs per event, servers' CPU ` +
            `${((serverCpu * 1e6) / round.events).toFixed(1)} µs per event (all members)`,
          values: { [WATCH_CLIENT_CPU_US]: clientUs },
        };
        return withCpuRate(m, clientUs, "events");
      });
      rows.push(row);
    }
    const after = await termOf(c);
    if ((await settledLeader(c)) !== leader || after !== before) {
      throw new Error(`the leader changed during the measurement (term ${before} -> ${after})`);
    }
    return { rows, extra: { [TERM_CHANGES]: after - before } };
  },
};
