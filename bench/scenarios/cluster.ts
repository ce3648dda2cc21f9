/**
 * The cluster scenarios (issue 19, point 12): a 3-node kv-engine cluster against a 3-node
 * etcd 3.4 cluster, each started fresh on loopback for the run (bench/stores/cluster.ts),
 * durable, with each system's default timeouts, driven the same way: gRPC calls from
 * several load-generator processes (bench/cluster/load.ts; each a lean gRPC client speaking
 * HTTP/2 over node:net, bench/cluster/lean-grpc-client.ts, the same for both), 16-byte
 * keys `key_%012d` and `--value-size` values, every call sent to the leader (found by
 * Status before the measurement; a follower would forward writes and ask the leader for
 * reads).
 *
 * - `cluster_put`: one writer, one put at a time (latency and ops/s); then 64 puts in
 *   flight from N = 2 client processes, and again from N + 1 = 3, to show whether one
 *   more process raises the figure.
 * - `cluster_get`: linearizable gets of a loaded key set (10,000 keys), the same modes;
 *   the serial row also carries the loopback floor measured beside it (./echo-floor.ts).
 * - `cluster_scan`: linearizable scans of 500 consecutive keys of that set, one at a
 *   time, then 16 in flight from 2 and from 3 processes (rows/s).
 * - `failover`: `--n` rounds of: kill -9 of the leader, then puts from this process, one
 *   at a time round-robin over the members, each with a 200 ms deadline, until the first
 *   acknowledged one; the time from the kill to that acknowledgement. The member is
 *   restarted and caught up before the next round.
 * - `catch_up`: `--n` entries loaded (batches of 100 puts), then a fourth member added
 *   (member add, a new process joining the running cluster with an empty directory): the
 *   time from the member add until its applied index reaches the leader's, and the user
 *   bytes loaded per second of it (MB/s).
 * - `cluster_steady` (not in the default list): the kv-engine cluster under an open-loop
 *   50/50 put/get load (`--rate` calls per second, default OPEN_LOOP_RATE, from 2
 *   processes, latency from when each call was due) for `--n` ms (`--duration S`), every
 *   member's Status polled each second: the leader changes and term changes seen, and the
 *   longest call against the election timeout.
 *
 * For the duration-based scenarios, n is the measured window per row in milliseconds.
 * cluster_put, cluster_get and cluster_scan prime each cluster first (PRIME_MS of the
 * rows' calls, untimed), so that no row measures a cold server.
 */
import type { BenchCluster, MemberClient } from "../cluster/cluster.js";
import { settledLeader, waitUntil } from "../cluster/cluster.js";
import { measureEchoFloor } from "../cluster/echo-floor.js";
import { type LoadCommon, type LoadPhase, runLoad } from "../cluster/load.js";
import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import { formatKey, valueSource } from "../lib/workload.js";
import { ETCD_CLUSTER, KV_CLUSTER } from "../stores/index.js";
import type { BenchStore } from "../stores/store.js";
import type { ScenarioContext, StoreScenario } from "./scenario.js";

export const CLUSTER_STORES: readonly string[] = [KV_CLUSTER, ETCD_CLUSTER];
export const STEADY_STORES: readonly string[] = [KV_CLUSTER];

/** Client processes of the concurrent rows, and one more. */
export const CLUSTER_PROCS = 2;
export const SERIAL = "";
export const inFlightLabel = (inFlight: number, procs: number) =>
  `${inFlight} in flight, ${procs} processes`;

/** Keys loaded for cluster_get and cluster_scan. */
const READ_KEYS = 10_000;
/** Keys cluster_put writes over (overwriting). */
export const PUT_KEYS = 100_000;
export const SCAN_ROWS = 500;
export const CALL_TIMEOUT_MS = 10_000;
/**
 * Before the first row of cluster_put, cluster_get and cluster_scan: this many ms of the
 * rows' operation at their largest concurrency, untimed, so that the first (serial) row
 * measures servers whose code is compiled, as the later rows do (a fresh kv-engine member
 * needs a few thousand calls to reach its steady CPU per call; etcd's Go code needs none).
 */
export const PRIME_MS = 3000;
const BATCH = 100;
/** Calls per second of the open-loop scenarios when `--rate` is not given. */
export const OPEN_LOOP_RATE = 3000;
/** The most calls an open-loop row keeps outstanding (in all, split among its processes). */
export const OPEN_LOOP_MAX_IN_FLIGHT = 256;
/** The shortest election timeout of a kv-engine member at the defaults (6 ticks of 100 ms). */
export const ELECTION_TIMEOUT_MS = 600;

/** Measurement.values keys. */
export const TERM_CHANGES = "termChanges";
export const LEADER_CHANGES = "leaderChanges";
export const FAILOVER_MEDIAN_MS = "medianMs";
export const FAILOVER_MAX_MS = "maxMs";
/** cluster_get's serial row: the loopback echo round trip (bench/cluster/echo-floor.ts). */
export const ECHO_RTT_P50_US = "echoRttP50Us";
export const ECHO_RTT_MEAN_US = "echoRttMeanUs";
/** How long the echo floor is measured. */
export const ECHO_FLOOR_MS = 2000;

const encoder = new TextEncoder();

export function clusterOf(store: BenchStore): BenchCluster {
  if (store.cluster === undefined) throw new Error("a cluster scenario needs a cluster store");
  return store.cluster;
}

export function warmupOf(n: number): number {
  return Math.min(1000, Math.max(200, Math.floor(n / 5)));
}

/**
 * The load of a row of a duration-based scenario sent to member `to`: a window of ctx.n ms
 * after warmupOf(n), keys from `keySpace`, ctx's value size, CALL_TIMEOUT_MS per call.
 */
export function rowLoad(
  c: BenchCluster,
  to: string,
  ctx: ScenarioContext,
  keySpace: number,
): LoadCommon {
  return {
    kind: c.kind,
    endpoints: [c.clientAddress(to)],
    warmupMs: warmupOf(ctx.n),
    durationMs: ctx.n,
    keySpace,
    scanRows: SCAN_ROWS,
    valueSize: ctx.valueSize,
    timeoutMs: CALL_TIMEOUT_MS,
  };
}

/** Loads keys 0..count-1 through the leader, BATCH puts per call, 4 calls in flight. */
export async function load(c: BenchCluster, count: number, ctx: ScenarioContext): Promise<void> {
  const client = c.client(await settledLeader(c));
  const value = valueSource(ctx.valueSize, ctx.seed);
  let next = 0;
  const slot = async () => {
    while (next < count) {
      const first = next;
      next = Math.min(count, next + BATCH);
      const keys: Uint8Array[] = [];
      const values: Uint8Array[] = [];
      for (let i = first; i < next; i++) {
        keys.push(encoder.encode(formatKey(i)));
        values.push(value(i));
      }
      await client.putBatch(keys, values);
    }
  };
  await Promise.all([slot(), slot(), slot(), slot()]);
}

/** The highest term any running member reports. */
export async function termOf(c: BenchCluster): Promise<number> {
  const running = c.names().filter((n) => c.running(n));
  const states = await Promise.all(running.map((n) => c.state(n)));
  return Math.max(...states.map((s) => s.term));
}

/** Runs the phases against the leader; the term before and after goes into `extra`. */
async function phases(
  store: BenchStore,
  ctx: ScenarioContext,
  keySpace: number,
  list: LoadPhase[],
): Promise<{ rows: Measurement[]; extra: Record<string, number> }> {
  const c = clusterOf(store);
  const leader = await settledLeader(c);
  const common = rowLoad(c, leader, ctx, keySpace);
  const before = await termOf(c);
  const first = list[0];
  if (first !== undefined) {
    // Untimed: the servers' code paths warm (kv-engine's JIT) before the first row.
    await runLoad(
      { ...common, warmupMs: 0, durationMs: PRIME_MS },
      {
        label: "prime",
        op: first.op,
        procs: CLUSTER_PROCS,
        inFlight: Math.max(...list.map((p) => p.inFlight)),
      },
      ctx.seed + 1000,
    );
  }
  const rows: Measurement[] = [];
  for (const [i, phase] of list.entries()) {
    rows.push(await runLoad(common, phase, ctx.seed + i, () => c.cpuSeconds()));
  }
  const after = await termOf(c);
  if ((await settledLeader(c)) !== leader || after !== before) {
    throw new Error(`the leader changed during the measurement (term ${before} -> ${after})`);
  }
  return { rows, extra: { [TERM_CHANGES]: after - before } };
}

function modes(op: LoadPhase["op"], inFlight: number): LoadPhase[] {
  return [
    { label: SERIAL, op, procs: 1, inFlight: 1 },
    { label: inFlightLabel(inFlight, CLUSTER_PROCS), op, procs: CLUSTER_PROCS, inFlight },
    { label: inFlightLabel(inFlight, CLUSTER_PROCS + 1), op, procs: CLUSTER_PROCS + 1, inFlight },
  ];
}

const windowLine = (what: string) => (n: number, valueSize: number) =>
  `${what} 16-byte keys, ${valueSize}-byte values; each row: a ${n} ms window after a ` +
  `${warmupOf(n)} ms warm-up (and before the first row, ${PRIME_MS} ms of the same calls at ` +
  "the largest concurrency, untimed), calls to the leader from client processes over gRPC " +
  "(a lean HTTP/2 client over node:net, the same for both systems) " +
  "(first row: 1 process, 1 call in flight); 3 durable members on loopback per system, " +
  "started fresh per run.";

export const clusterBase = {
  kind: "store" as const,
  sync: true,
  stores: CLUSTER_STORES,
  defaultN: (quick: boolean) => (quick ? 1500 : 10_000),
  nIsMilliseconds: true,
};

export const clusterPut: StoreScenario = {
  ...clusterBase,
  name: "cluster_put",
  title: "Cluster put: 3-node kv-engine vs 3-node etcd, durable",
  sizeLine: windowLine(`Puts over ${PUT_KEYS.toLocaleString("en-US")} keys (overwrites),`),
  run: (store, ctx) => phases(store, ctx, PUT_KEYS, modes("put", 64)),
};

export const clusterGet: StoreScenario = {
  ...clusterBase,
  name: "cluster_get",
  title: "Cluster get, linearizable: 3-node kv-engine vs 3-node etcd",
  sizeLine: windowLine(
    `Random gets of ${READ_KEYS.toLocaleString("en-US")} loaded keys (loaded untimed),`,
  ),
  unit: "gets",
  async run(store, ctx) {
    await load(clusterOf(store), READ_KEYS, ctx);
    const result = await phases(store, ctx, READ_KEYS, modes("get", 64));
    const serial = result.rows[0];
    if (serial !== undefined) {
      // Measured beside each system's serial row (same run, cluster idle): see echo-floor.ts.
      const floor = await measureEchoFloor(ECHO_FLOOR_MS);
      serial.description =
        `${serial.description ?? ""}; loopback floor now: a bare Node echo round trip ` +
        `p50 ${floor.p50Us.toFixed(0)} µs, mean ${floor.meanUs.toFixed(0)} µs ` +
        "(a lone linearizable get waits for two)";
      serial.values = {
        ...serial.values,
        [ECHO_RTT_P50_US]: floor.p50Us,
        [ECHO_RTT_MEAN_US]: floor.meanUs,
      };
    }
    return result;
  },
};

export const clusterScan: StoreScenario = {
  ...clusterBase,
  name: "cluster_scan",
  title: `Cluster scan, linearizable, ${SCAN_ROWS} rows per scan: 3-node kv-engine vs 3-node etcd`,
  sizeLine: windowLine(
    `Scans of ${SCAN_ROWS} consecutive keys from a random start among ` +
      `${READ_KEYS.toLocaleString("en-US")} loaded keys,`,
  ),
  unit: "rows",
  async run(store, ctx) {
    await load(clusterOf(store), READ_KEYS, ctx);
    return phases(store, ctx, READ_KEYS, modes("scan", 16));
  },
};

/** Waits until every running member applied at least what the leader has applied. */
async function caughtUp(c: BenchCluster, timeoutMs = 60_000): Promise<string> {
  const leader = await settledLeader(c);
  const target = (await c.state(leader)).appliedIndex;
  await waitUntil(
    async () => {
      const running = c.names().filter((n) => c.running(n));
      const states = await Promise.all(running.map((n) => c.state(n)));
      return states.every((s) => s.appliedIndex >= target);
    },
    `${c.kind}: every member caught up`,
    timeoutMs,
  );
  return leader;
}

/** Milliseconds from killing the leader to the first acknowledged put. */
async function failoverRound(c: BenchCluster, round: number, valueSize: number): Promise<number> {
  const leader = await caughtUp(c);
  const names = c.names();
  const value = new Uint8Array(valueSize).fill(round & 0xff);
  for (const n of names) await c.client(n).put(encoder.encode(formatKey(round)), value, 5000);
  const start = names.indexOf(leader) + 1;
  const t0 = nowNs();
  const killed = c.kill(leader);
  let ms: number | undefined;
  for (let i = 0; ms === undefined; i++) {
    if (nowNs() - t0 > 60e9) throw new Error("failover: no write acknowledged within 60 s");
    const name = names[(start + i) % names.length]!;
    try {
      await c.client(name).put(encoder.encode(formatKey(round)), value, 200);
      ms = (nowNs() - t0) / 1e6;
    } catch {
      if ((i + 1) % names.length === 0) await new Promise((r) => setTimeout(r, 5));
    }
  }
  await killed;
  await c.restart(leader);
  await caughtUp(c);
  return ms;
}

/** The failover method with the user's client: its label and its deadline per call. */
export const FAILOVER_USER = "KvClient, endpoint list, 10 s deadline";
const USER_TIMEOUT_MS = 10_000;
/** failover's user-client row: calls that failed. */
export const FAILOVER_FAILED_CALLS = "failedCalls";

/**
 * Milliseconds from killing the leader to the acknowledgement of the first put started
 * after the kill, while one user client (`userClient`) puts continuously, one at a time;
 * and the calls that failed in the round.
 */
async function userFailoverRound(
  c: BenchCluster,
  client: MemberClient,
  round: number,
  valueSize: number,
): Promise<{ ms: number; failed: number }> {
  const leader = await caughtUp(c);
  const value = new Uint8Array(valueSize).fill(round & 0xff);
  let killedAt = Number.POSITIVE_INFINITY;
  let ms: number | undefined;
  let failed = 0;
  const writer = (async () => {
    for (let i = 0; ms === undefined; i++) {
      const started = nowNs();
      try {
        await client.put(encoder.encode(formatKey(round * 1_000_000 + i)), value);
        if (started >= killedAt) ms = (nowNs() - killedAt) / 1e6;
      } catch {
        failed++;
      }
      if (nowNs() - killedAt > 60e9) throw new Error("failover: no write acknowledged within 60 s");
    }
  })();
  await new Promise((r) => setTimeout(r, 300));
  killedAt = nowNs();
  await c.kill(leader);
  await writer;
  await c.restart(leader);
  await caughtUp(c);
  return { ms: ms!, failed };
}

export const failover: StoreScenario = {
  kind: "store",
  name: "failover",
  title: "Failover: kill -9 of the leader until the first acknowledged put, 3 nodes",
  sync: true,
  stores: CLUSTER_STORES,
  defaultN: (quick) => (quick ? 2 : 5),
  sizeLine: (n) =>
    `n = ${n} rounds per run: kill -9 of the leader, then puts one at a time round-robin ` +
    "over the members (the killed one included), 200 ms deadline each, until one is " +
    "acknowledged; the killed member is restarted and caught up between rounds. Then " +
    `(kv-engine) the user's method, "${FAILOVER_USER}": one KvClient over every member's ` +
    "address puts continuously, one at a time, while the leader is killed; timed until the " +
    "first put started after the kill is acknowledged; failed calls counted. Default " +
    "timeouts: kv-engine tick 100 ms, election after 6 to 12 ticks; etcd heartbeat 100 ms, " +
    "election 1000 ms.",
  unit: "failovers",
  async run(store, { n, valueSize }) {
    const c = clusterOf(store);
    const times: number[] = [];
    for (let round = 0; round < n; round++) times.push(await failoverRound(c, round, valueSize));
    const rows = [failoverRow(SERIAL, times, "")];
    const user = c.userClient?.(USER_TIMEOUT_MS);
    if (user !== undefined) {
      const userTimes: number[] = [];
      let failed = 0;
      try {
        for (let round = 0; round < n; round++) {
          const r = await userFailoverRound(c, user, n + round, valueSize);
          userTimes.push(r.ms);
          failed += r.failed;
        }
      } finally {
        user.close();
      }
      const row = failoverRow(FAILOVER_USER, userTimes, `; ${failed} calls failed`);
      row.values = { ...row.values, [FAILOVER_FAILED_CALLS]: failed };
      rows.push(row);
    }
    return { rows };
  },
};

function failoverRow(label: string, times: readonly number[], note: string): Measurement {
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return {
    label,
    ops: times.length,
    seconds: times.reduce((a, b) => a + b, 0) / 1000,
    // A throughput, so that the median run by throughput is the median failover.
    opsPerSec: 1000 / median,
    latency: summarize(Float64Array.from(times, (t) => t * 1e6)),
    description: `rounds: ${times.map((t) => t.toFixed(0)).join(", ")} ms${note}`,
    values: { [FAILOVER_MEDIAN_MS]: median, [FAILOVER_MAX_MS]: sorted.at(-1)! },
  };
}

export const catchUp: StoreScenario = {
  kind: "store",
  name: "catch_up",
  title: "Catch-up: a fourth member added to a loaded 3-node cluster, until in sync",
  sync: true,
  stores: CLUSTER_STORES,
  defaultN: (quick) => (quick ? 20_000 : 200_000),
  sizeLine: (n, valueSize) =>
    `n = ${n.toLocaleString("en-US")} keys loaded untimed (batches of ${BATCH} puts, ` +
    `16-byte keys, ${valueSize}-byte values); timed: from the (accepted) member add until the new ` +
    "member's applied index reaches the leader's; MB/s = user bytes loaded ÷ that time " +
    "(the new process's start included). kv-engine: the joiner installs a snapshot, then " +
    "the log after it; etcd: log replay unless its snapshot (every 100,000 entries) covers it.",
  unit: "MB",
  async run(store, ctx) {
    const c = clusterOf(store);
    await load(c, ctx.n, ctx);
    const leader = await caughtUp(c);
    const t0 = await c.add("n4");
    const target = (await c.state(leader)).appliedIndex;
    await waitUntil(
      async () => (await c.state("n4", 1000)).appliedIndex >= target,
      `${c.kind}: the new member in sync`,
      120_000,
    );
    const seconds = (nowNs() - t0) / 1e9;
    const mb = (ctx.n * (16 + ctx.valueSize)) / 1e6;
    return {
      rows: [
        {
          label: SERIAL,
          ops: mb,
          seconds,
          opsPerSec: mb / seconds,
          bytesPerSec: (mb * 1e6) / seconds,
          description: `${mb.toFixed(1)} MB in ${seconds.toFixed(2)} s`,
        },
      ],
    };
  },
};

export const clusterSteady: StoreScenario = {
  kind: "store",
  name: "cluster_steady",
  title: "Steady load without faults: leader changes in a 3-node kv-engine cluster",
  sync: true,
  stores: STEADY_STORES,
  defaultN: (quick) => (quick ? 30_000 : 600_000),
  nIsMilliseconds: true,
  optIn: true,
  minTimeoutSeconds: (n) => Math.ceil(n / 1000) + 120,
  sizeLine: (n, valueSize) =>
    `A ${(n / 1000).toFixed(0)} s run: 50/50 puts and linearizable gets of ` +
    `${READ_KEYS.toLocaleString("en-US")} keys (${valueSize}-byte values), an open loop at ` +
    `--rate calls/s (default ${OPEN_LOOP_RATE}; at most ${OPEN_LOOP_MAX_IN_FLIGHT} ` +
    `outstanding) from ${CLUSTER_PROCS} client processes to the leader, latency from when ` +
    "each call was due; every member's Status polled " +
    "each second: leader changes (a member naming another leader than before) and term " +
    "changes.",
  async run(store, ctx) {
    const c = clusterOf(store);
    await load(c, READ_KEYS, ctx);
    const leader = await settledLeader(c);
    const firstTerm = await termOf(c);
    let lastLeader = leader;
    let leaderChanges = 0;
    let maxTerm = firstTerm;
    let failedPolls = 0;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        await new Promise((r) => setTimeout(r, 1000));
        for (const name of c.names()) {
          try {
            const s = await c.state(name, 1000);
            maxTerm = Math.max(maxTerm, s.term);
            if (s.leader !== "" && s.leader !== lastLeader) {
              leaderChanges++;
              lastLeader = s.leader;
            }
          } catch {
            failedPolls++;
          }
        }
      }
    })();
    let row: Measurement;
    try {
      row = await runLoad(
        {
          kind: c.kind,
          endpoints: [c.clientAddress(leader)],
          warmupMs: 1000,
          durationMs: ctx.n,
          keySpace: READ_KEYS,
          scanRows: SCAN_ROWS,
          valueSize: ctx.valueSize,
          timeoutMs: CALL_TIMEOUT_MS,
        },
        {
          label: SERIAL,
          op: "mixed",
          procs: CLUSTER_PROCS,
          inFlight: OPEN_LOOP_MAX_IN_FLIGHT,
          ratePerSec: ctx.rate ?? OPEN_LOOP_RATE,
        },
        ctx.seed,
        () => c.cpuSeconds(),
      );
    } finally {
      polling = false;
      await poll;
    }
    const termChanges = maxTerm - firstTerm;
    return {
      rows: [
        {
          ...row,
          description: `${row.description}; ${leaderChanges} leader changes, terms ${firstTerm} to ${maxTerm}, ${failedPolls} failed status polls`,
          values: { ...row.values, [LEADER_CHANGES]: leaderChanges, [TERM_CHANGES]: termChanges },
        },
      ],
      extra: { [LEADER_CHANGES]: leaderChanges, [TERM_CHANGES]: termChanges, failedPolls },
    };
  },
};
