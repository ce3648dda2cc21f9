/**
 * The etcd API scenarios (issue 28, point 9): the same etcd v3 requests (bench/cluster/
 * etcd-ops.ts) from the same client processes to a 3-member kv-engine cluster and a
 * 3-member etcd 3.4 cluster, durable, each started fresh per run:
 *
 * - `etcd_put`: KV.Put over PUT_KEYS keys (overwrites);
 * - `etcd_range`: linearizable KV.Range of one of ETCD_KEYS loaded keys;
 * - `etcd_txn`: Kubernetes' update over ETCD_KEYS loaded keys: a Txn comparing the key's
 *   mod_revision with the one the process last saw, then a put, else a read of the key;
 * - `etcd_list`: Kubernetes' list: a prefix Range over the ETCD_KEYS keys in pages of
 *   SCAN_ROWS at the revision of the first page (one list = one call; rows = keys).
 *
 * Each through the leader and through a follower, by the lean client (bench/cluster/
 * lean-grpc-client.ts) and a standard one (grpcio when present, else grpc-js): one call at
 * a time, then LIST_IN_FLIGHT (lists) or IN_FLIGHT calls in flight from CLUSTER_PROCS
 * processes. Before the rows: PRIME_MS of the scenario's calls, untimed.
 */
import { settledLeader } from "../cluster/cluster.js";
import { type LoadCommon, type LoadPhase, runLoad } from "../cluster/load.js";
import type { LoadClientKind, LoadOp } from "../cluster/load-client.js";
import type { Measurement } from "../lib/types.js";
import {
  CLUSTER_PROCS,
  clusterBase,
  clusterOf,
  inFlightLabel,
  load,
  PRIME_MS,
  PUT_KEYS,
  rowLoad,
  SCAN_ROWS,
  TERM_CHANGES,
  termOf,
  warmupOf,
} from "./cluster.js";
import { availableClients } from "./cluster-clients.js";
import type { ScenarioContext, StoreScenario } from "./scenario.js";

/** Keys loaded for etcd_range, etcd_txn and etcd_list. */
export const ETCD_KEYS = 10_000;
export const IN_FLIGHT = 64;
export const LIST_IN_FLIGHT = 8;

/** The clients of the rows: the lean one and one standard client. */
function rowClients(): LoadClientKind[] {
  return ["lean", availableClients().at(-1) ?? "grpc-js"];
}

/** `client, target` and, beyond one call in flight, the in-flight part. */
export function etcdRowLabel(client: LoadClientKind, target: string, inFlight: number): string {
  const base = `${client}, ${target}`;
  return inFlight === 1 ? base : `${base}, ${inFlightLabel(inFlight, CLUSTER_PROCS)}`;
}

function scenario(
  name: string,
  op: LoadOp,
  what: string,
  loaded: boolean,
  unit?: string,
): StoreScenario {
  const inFlight = op === "list" ? LIST_IN_FLIGHT : IN_FLIGHT;
  const keySpace = loaded ? ETCD_KEYS : PUT_KEYS;
  return {
    ...clusterBase,
    name,
    title: `etcd API ${what}: 3-node kv-engine vs 3-node etcd, same requests and clients`,
    ...(unit === undefined ? {} : { unit }),
    sizeLine: (n, valueSize) =>
      `${what} over ${keySpace.toLocaleString("en-US")} keys${loaded ? " (loaded untimed)" : ""}, ` +
      `16-byte keys, ${valueSize}-byte values, etcd's v3 API for both systems (bench/cluster/etcd-ops.ts). ` +
      `Per client (lean; grpcio, else grpc-js) and target (leader, follower) each row: a ${n} ms ` +
      `window after a ${warmupOf(n)} ms warm-up, one call at a time, then ${inFlight} in flight ` +
      `from ${CLUSTER_PROCS} processes; before the rows ${PRIME_MS} ms of the calls, untimed. ` +
      "3 durable members on loopback per system, started fresh per run.",
    async run(store, ctx) {
      const c = clusterOf(store);
      if (loaded) await load(c, ETCD_KEYS, ctx);
      return runEtcdRows(c, ctx, { op, keySpace, clients: rowClients(), inFlights: [1, inFlight] });
    },
  };
}

/** What `runEtcdRows` measures. */
export interface EtcdRows {
  op: LoadOp;
  /** Keys drawn from key_0 .. key_(keySpace - 1). */
  keySpace: number;
  clients: readonly LoadClientKind[];
  /** The rows' calls in flight (1: one process; more: CLUSTER_PROCS processes). */
  inFlights: readonly number[];
  /** keepalive: the leases each load process keeps alive. */
  leasesPerProc?: number;
  /** Put before each row's label (a scenario with rows of several workloads). */
  labelPrefix?: string;
}

/**
 * Rows of `rows.op` on cluster `c`: per client, target (leader, then a follower) and calls
 * in flight, one window each, after PRIME_MS of the calls through the leader, untimed.
 * Throws when the leader changed during the rows.
 */
export async function runEtcdRows(
  c: ReturnType<typeof clusterOf>,
  ctx: ScenarioContext,
  spec: EtcdRows,
): Promise<{ rows: Measurement[]; extra: Record<string, number> }> {
  const { op, clients } = spec;
  const leader = await settledLeader(c);
  const follower = c.names().find((m) => m !== leader)!;
  const common = (to: string): LoadCommon => ({
    ...rowLoad(c, to, ctx, spec.keySpace),
    api: "etcd",
    ...(spec.leasesPerProc === undefined ? {} : { leases: spec.leasesPerProc }),
  });
  const most = Math.max(...spec.inFlights);
  for (const [i, client] of clients.entries()) {
    await runLoad(
      { ...common(leader), warmupMs: 0, durationMs: PRIME_MS / clients.length },
      { label: "prime", op, procs: most === 1 ? 1 : CLUSTER_PROCS, inFlight: most, client },
      ctx.seed + 1000 + i,
    );
  }
  const before = await termOf(c);
  const rows: Measurement[] = [];
  let seed = ctx.seed;
  for (const client of clients) {
    for (const [target, to] of [
      ["leader", leader],
      ["follower", follower],
    ] as const) {
      for (const n of spec.inFlights) {
        const phase: LoadPhase = {
          label: (spec.labelPrefix ?? "") + etcdRowLabel(client, target, n),
          op,
          procs: n === 1 ? 1 : CLUSTER_PROCS,
          inFlight: n,
          client,
        };
        rows.push(await runLoad(common(to), phase, seed++, () => c.cpuSeconds()));
      }
    }
  }
  const after = await termOf(c);
  if ((await settledLeader(c)) !== leader || after !== before) {
    throw new Error(`the leader changed during the measurement (term ${before} -> ${after})`);
  }
  return { rows, extra: { [TERM_CHANGES]: after - before } };
}

export const etcdPut = scenario("etcd_put", "put", "Put", false);
export const etcdRange = scenario(
  "etcd_range",
  "get",
  "Range of one key, linearizable,",
  true,
  "gets",
);
export const etcdTxn = scenario("etcd_txn", "txn", "Txn, Kubernetes' update,", true, "txns");
export const etcdList = scenario(
  "etcd_list",
  "list",
  `paginated list (pages of ${SCAN_ROWS})`,
  true,
  "rows",
);
