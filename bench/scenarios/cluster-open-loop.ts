/**
 * `cluster_open_loop` (issue 32, point 3): the clusters' tails at an equal offered load.
 * A closed loop (64 calls in flight) finds what a system can do; its p99 and max then
 * describe a saturated queue, not what a user sees below saturation. Here both systems get
 * the same open-loop load: durable puts at `--rate` calls per second in all (default
 * OPEN_LOOP_RATE, meant as about 70% of etcd's 64-in-flight puts/s on the machine: the
 * report checks it against the etcd row measured in the same run), from CLUSTER_PROCS
 * client processes, each call's latency counted from when it was due (a stall delays
 * every call behind it, and each of them shows it).
 *
 * Per system, started fresh per run: PRIME_MS of puts at 64 in flight (untimed), the
 * closed-loop row (64 in flight, 2 processes, lean client, leader: the system's capacity,
 * the reference for the rate), then the open-loop rows: the lean client through the
 * leader and through a follower, and Python grpcio (when /usr/bin/python3 has it) through
 * each. At most OPEN_LOOP_MAX_IN_FLIGHT calls outstanding per row.
 */
import { settledLeader } from "../cluster/cluster.js";
import { grpcioMissing, type LoadPhase, runLoad } from "../cluster/load.js";
import type { LoadClientKind } from "../cluster/load-client.js";
import type { Measurement } from "../lib/types.js";
import {
  CLUSTER_PROCS,
  clusterBase,
  clusterOf,
  inFlightLabel,
  OPEN_LOOP_MAX_IN_FLIGHT,
  OPEN_LOOP_RATE,
  PRIME_MS,
  PUT_KEYS,
  rowLoad,
  TERM_CHANGES,
  termOf,
  warmupOf,
} from "./cluster.js";
import type { StoreScenario } from "./scenario.js";

/** Calls in flight of the closed-loop (capacity) row. */
export const CAPACITY_IN_FLIGHT = 64;
/** The share of etcd's capacity the offered load is meant to be (the report checks it). */
export const OPEN_LOOP_SHARE = 0.7;

export type OpenLoopTarget = "leader" | "follower";

/** The label of the capacity row. */
export const CAPACITY_LABEL = `capacity, leader, ${inFlightLabel(CAPACITY_IN_FLIGHT, CLUSTER_PROCS)}`;

/** The label of an open-loop row. */
export function openLoopLabel(client: LoadClientKind, target: OpenLoopTarget): string {
  return `${client}, ${target}, open loop`;
}

/** The clients of the open-loop rows that can run here (grpcio needs python3-grpcio). */
export function openLoopClients(): LoadClientKind[] {
  return grpcioMissing() === undefined ? ["lean", "grpcio"] : ["lean"];
}

export const clusterOpenLoop: StoreScenario = {
  ...clusterBase,
  name: "cluster_open_loop",
  title: "Cluster put at an equal offered load (open loop): tails of 3-node kv-engine vs etcd",
  sizeLine: (n, valueSize) =>
    `Durable puts over ${PUT_KEYS.toLocaleString("en-US")} keys (overwrites), 16-byte keys, ` +
    `${valueSize}-byte values, 3 members on loopback per system started fresh per run. ` +
    `After ${PRIME_MS} ms of untimed puts: the capacity row (${CAPACITY_IN_FLIGHT} in flight ` +
    `from ${CLUSTER_PROCS} processes, lean client, to the leader), then the open-loop rows at ` +
    `the same offered rate for both systems (--rate, default ${OPEN_LOOP_RATE} puts/s, from ` +
    `${CLUSTER_PROCS} processes, at most ${OPEN_LOOP_MAX_IN_FLIGHT} outstanding; latency from ` +
    "when each call was due) through the leader and through a follower, by the lean client " +
    `and by Python grpcio; each row a ${n} ms window after a ${warmupOf(n)} ms warm-up.`,
  async run(store, ctx) {
    const c = clusterOf(store);
    const rate = ctx.rate ?? OPEN_LOOP_RATE;
    const leader = await settledLeader(c);
    const follower = c.names().find((name) => name !== leader)!;
    const common = (to: string) => rowLoad(c, to, ctx, PUT_KEYS);
    const cpu = () => c.cpuSeconds();
    const capacity: LoadPhase = {
      label: CAPACITY_LABEL,
      op: "put",
      procs: CLUSTER_PROCS,
      inFlight: CAPACITY_IN_FLIGHT,
    };
    await runLoad(
      { ...common(leader), warmupMs: 0, durationMs: PRIME_MS },
      { ...capacity, label: "prime" },
      ctx.seed + 1000,
    );
    const before = await termOf(c);
    const rows: Measurement[] = [await runLoad(common(leader), capacity, ctx.seed, cpu)];
    let seed = ctx.seed + 1;
    for (const client of openLoopClients()) {
      for (const [target, to] of [
        ["leader", leader],
        ["follower", follower],
      ] as const) {
        const phase: LoadPhase = {
          label: openLoopLabel(client, target),
          op: "put",
          procs: CLUSTER_PROCS,
          inFlight: OPEN_LOOP_MAX_IN_FLIGHT,
          client,
          ratePerSec: rate,
        };
        rows.push(await runLoad(common(to), phase, seed++, cpu));
      }
    }
    const after = await termOf(c);
    if ((await settledLeader(c)) !== leader || after !== before) {
      throw new Error(`the leader changed during the measurement (term ${before} -> ${after})`);
    }
    return { rows, extra: { [TERM_CHANGES]: after - before } };
  },
};
