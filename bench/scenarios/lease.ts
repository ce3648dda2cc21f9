/**
 * The lease and lock scenarios (issue 30, point 8): the same requests (bench/cluster/
 * lease-ops.ts) from the same client processes to a 3-member kv-engine cluster and a
 * 3-member etcd 3.4 cluster, durable, each started fresh per run, through the leader and
 * through a follower:
 *
 * - `lease_keepalive`: LeaseKeepAlive over KEEPALIVE_LEASES leases (granted untimed by
 *   the load processes), one stream per process, IN_FLIGHT in flight; grpc-js only (the
 *   lean client has no bidirectional streams);
 * - `lease_churn`: LeaseGrant, a Put with the lease, LeaseRevoke (one operation);
 * - `lock`: v3lock Lock then Unlock, LOCK_CONTENDERS calls contending for one lock, then
 *   IN_FLIGHT calls on locks of their own.
 */
import type { LoadClientKind } from "../cluster/load-client.js";
import { CLUSTER_PROCS, clusterBase, clusterOf, PRIME_MS, PUT_KEYS, warmupOf } from "./cluster.js";
import { IN_FLIGHT, runEtcdRows } from "./etcd-api.js";
import type { StoreScenario } from "./scenario.js";

export const KEEPALIVE_LEASES = 10_000;
export const LOCK_CONTENDERS = 8;

const CLIENTS: readonly LoadClientKind[] = ["lean", "grpc-js"];

function window(n: number): string {
  return `a ${n} ms window after a ${warmupOf(n)} ms warm-up; before the rows ${PRIME_MS} ms of the calls, untimed. `;
}

const SYSTEMS = "3 durable members on loopback per system, started fresh per run.";

export const leaseKeepalive: StoreScenario = {
  ...clusterBase,
  name: "lease_keepalive",
  title: "etcd API LeaseKeepAlive: 3-node kv-engine vs 3-node etcd, same requests and client",
  unit: "keep-alives",
  sizeLine: (n) =>
    `LeaseKeepAlive of random leases among ${KEEPALIVE_LEASES.toLocaleString("en-US")} ` +
    `(TTL 600 s, granted untimed), grpc-js, one stream per process, ${IN_FLIGHT} in flight ` +
    `from ${CLUSTER_PROCS} processes, through the leader and a follower; each row ${window(n)}${SYSTEMS}`,
  run(store, ctx) {
    return runEtcdRows(clusterOf(store), ctx, {
      op: "keepalive",
      keySpace: KEEPALIVE_LEASES,
      clients: ["grpc-js"],
      inFlights: [IN_FLIGHT],
      leasesPerProc: Math.ceil(KEEPALIVE_LEASES / CLUSTER_PROCS),
    });
  },
};

export const leaseChurn: StoreScenario = {
  ...clusterBase,
  name: "lease_churn",
  title: "etcd API lease churn (grant, put, revoke): 3-node kv-engine vs 3-node etcd",
  unit: "leases",
  sizeLine: (n, valueSize) =>
    `LeaseGrant (TTL 60 s), Put of a random key among ${PUT_KEYS.toLocaleString("en-US")} with ` +
    `the lease (${valueSize}-byte values), LeaseRevoke: one operation. Per client (lean, ` +
    `grpc-js) and target (leader, follower): one at a time, then ${IN_FLIGHT} in flight from ` +
    `${CLUSTER_PROCS} processes; each row ${window(n)}${SYSTEMS}`,
  run(store, ctx) {
    return runEtcdRows(clusterOf(store), ctx, {
      op: "lease_churn",
      keySpace: PUT_KEYS,
      clients: CLIENTS,
      inFlights: [1, IN_FLIGHT],
    });
  },
};

export const lock: StoreScenario = {
  ...clusterBase,
  name: "lock",
  title: "etcd API v3lock Lock + Unlock: 3-node kv-engine vs 3-node etcd",
  unit: "locks",
  sizeLine: (n) =>
    `v3lock Lock then Unlock, each call on a lease of its own (TTL 600 s). "one lock": ` +
    `${LOCK_CONTENDERS} calls in flight contend for one lock; "own locks": ${IN_FLIGHT} in ` +
    `flight, each on a lock no other call takes; from ${CLUSTER_PROCS} processes, per client ` +
    `(lean, grpc-js) and target (leader, follower); each row ${window(n)}${SYSTEMS}`,
  async run(store, ctx) {
    const c = clusterOf(store);
    const one = await runEtcdRows(c, ctx, {
      op: "lock_one",
      keySpace: 1,
      clients: CLIENTS,
      inFlights: [LOCK_CONTENDERS],
      labelPrefix: "one lock: ",
    });
    const own = await runEtcdRows(c, ctx, {
      op: "lock_many",
      keySpace: 1,
      clients: CLIENTS,
      inFlights: [IN_FLIGHT],
      labelPrefix: "own locks: ",
    });
    const extra: Record<string, number> = {};
    for (const [k, v] of Object.entries(one.extra)) extra[k] = v + (own.extra[k] ?? 0);
    return { rows: [...one.rows, ...own.rows], extra };
  },
};
