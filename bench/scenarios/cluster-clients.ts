/**
 * `cluster_clients` (issue 27, point 2): cluster_put's durable puts driven by standard gRPC
 * clients instead of the lean one, for kv-engine's 3-node cluster and etcd's alike, each
 * started fresh per run:
 *
 * - the cold row first: the first COLD_CALLS puts after the members started, one at a
 *   time, through the leader, by the first standard client here (grpcio when
 *   /usr/bin/python3 has it, else grpc-js);
 * - then PRIME_MS of puts at 64 in flight through each client (half to the leader, half
 *   to a follower, untimed), so that the rows after it measure warm servers;
 * - then per client (grpc-js: KvClient for kv-engine, ./etcd-client.ts for etcd, one
 *   channel per process; grpcio: bench/cluster/grpcio-load.py, one channel per process,
 *   futures when more than one call is in flight) and per target (the leader, then a
 *   follower, which forwards each put to the leader): one put at a time, then 64 in
 *   flight from CLUSTER_PROCS processes.
 *
 * The serial follower row carries the loopback echo floor measured beside it (issue 27,
 * point 1: a follower's put may cost one round trip more than the leader's, not a
 * heartbeat). Row labels name the client and the target (`grpcio, leader, 64 in flight, 2 processes`);
 * the cold row's label ends in COLD. Without grpcio its rows are left out (the targets on
 * them then say "not measured").
 */
import { settledLeader } from "../cluster/cluster.js";
import { measureEchoFloor } from "../cluster/echo-floor.js";
import { grpcioMissing, type LoadPhase, runLoad } from "../cluster/load.js";
import type { LoadClientKind } from "../cluster/load-client.js";
import type { Measurement } from "../lib/types.js";
import {
  CLUSTER_PROCS,
  clusterBase,
  clusterOf,
  ECHO_FLOOR_MS,
  ECHO_RTT_P50_US,
  inFlightLabel,
  PRIME_MS,
  PUT_KEYS,
  rowLoad,
  TERM_CHANGES,
  termOf,
  warmupOf,
} from "./cluster.js";
import type { StoreScenario } from "./scenario.js";

/** Calls of the cold row. */
export const COLD_CALLS = 1000;
/** Calls in flight of the concurrent rows. */
export const CLIENTS_IN_FLIGHT = 64;
export type ClientTarget = "leader" | "follower";

/** The standard clients, in row order. */
export const STANDARD_CLIENTS: readonly LoadClientKind[] = ["grpc-js", "grpcio"];

/** The label of a row: `client, target` and, for the concurrent rows, the in-flight part. */
export function clientRowLabel(
  client: LoadClientKind,
  target: ClientTarget,
  inFlight: number,
): string {
  const base = `${client}, ${target}`;
  return inFlight === 1 ? base : `${base}, ${inFlightLabel(inFlight, CLUSTER_PROCS)}`;
}

export const COLD = `cold: the first ${COLD_CALLS.toLocaleString("en-US")} calls`;

/** The cold row's label (`client, leader, cold: ...`). */
export function coldRowLabel(client: LoadClientKind): string {
  return `${client}, leader, ${COLD}`;
}

/** The standard clients that can run here (grpcio needs python3-grpcio). */
export function availableClients(): LoadClientKind[] {
  return STANDARD_CLIENTS.filter((c) => c !== "grpcio" || grpcioMissing() === undefined);
}

export const clusterClients: StoreScenario = {
  ...clusterBase,
  name: "cluster_clients",
  title: "Cluster put through standard gRPC clients (grpc-js, grpcio): 3-node kv-engine vs etcd",
  sizeLine: (n, valueSize) =>
    `Durable puts over ${PUT_KEYS.toLocaleString("en-US")} keys (overwrites), 16-byte keys, ` +
    `${valueSize}-byte values, 3 members on loopback per system started fresh per run. ` +
    `First the cold row: the first ${COLD_CALLS.toLocaleString("en-US")} puts after the ` +
    "members started, one at a time to the leader, through grpcio (grpc-js without it). " +
    `Then ${PRIME_MS} ms of puts at ${CLIENTS_IN_FLIGHT} in flight per client (leader and a ` +
    `follower, untimed), then per client and per target each row: a ${n} ms window after a ` +
    `${warmupOf(n)} ms warm-up, one put at a time, then ${CLIENTS_IN_FLIGHT} in flight from ` +
    `${CLUSTER_PROCS} processes. grpc-js: KvClient (kv-engine) or a grpc-js etcd client, ` +
    "one channel per process; grpcio: Python grpcio 1.51 (bench/cluster/grpcio-load.py), " +
    "futures when more than one call is in flight. A follower forwards each put to the leader.",
  async run(store, ctx) {
    const c = clusterOf(store);
    const clients = availableClients();
    const coldClient = clients.at(-1)!;
    const leader = await settledLeader(c);
    const follower = c.names().find((name) => name !== leader)!;
    const common = (to: string) => rowLoad(c, to, ctx, PUT_KEYS);
    const cpu = () => c.cpuSeconds();
    const cold = await runLoad(
      common(leader),
      {
        label: coldRowLabel(coldClient),
        op: "put",
        procs: 1,
        inFlight: 1,
        client: coldClient,
        coldCalls: COLD_CALLS,
      },
      ctx.seed + 2000,
      cpu,
    );
    const before = await termOf(c);
    // Untimed: every client's code paths, the leader's and a follower's, warm.
    for (const [i, client] of clients.entries()) {
      for (const to of [leader, follower]) {
        await runLoad(
          { ...common(to), warmupMs: 0, durationMs: PRIME_MS / (2 * clients.length) },
          {
            label: "prime",
            op: "put",
            procs: CLUSTER_PROCS,
            inFlight: CLIENTS_IN_FLIGHT,
            client,
          },
          ctx.seed + 1000 + i,
        );
      }
    }
    const rows: Measurement[] = [];
    let seed = ctx.seed;
    for (const client of clients) {
      for (const [target, to] of [
        ["leader", leader],
        ["follower", follower],
      ] as const) {
        for (const inFlight of [1, CLIENTS_IN_FLIGHT]) {
          const phase: LoadPhase = {
            label: clientRowLabel(client, target, inFlight),
            op: "put",
            procs: inFlight === 1 ? 1 : CLUSTER_PROCS,
            inFlight,
            client,
          };
          const row = await runLoad(common(to), phase, seed++, cpu);
          if (target === "follower" && inFlight === 1) {
            // Measured beside it (same run): a write through a follower costs a round
            // trip more than through the leader (forward, then the commit told back).
            const floor = await measureEchoFloor(ECHO_FLOOR_MS);
            row.description =
              `${row.description ?? ""}; loopback floor now: a bare Node echo round trip ` +
              `p50 ${floor.p50Us.toFixed(0)} µs (a follower's put waits for one more than the leader's)`;
            row.values = { ...row.values, [ECHO_RTT_P50_US]: floor.p50Us };
          }
          rows.push(row);
        }
      }
    }
    rows.push(cold);
    const after = await termOf(c);
    if ((await settledLeader(c)) !== leader || after !== before) {
      throw new Error(`the leader changed during the measurement (term ${before} -> ${after})`);
    }
    return { rows, extra: { [TERM_CHANGES]: after - before } };
  },
};
