/**
 * Scenario registry, in report order. To add a scenario, write `./<name>.ts` exporting a
 * `Scenario` and list it here.
 */
import {
  catchUp,
  clusterGet,
  clusterPut,
  clusterScan,
  clusterSteady,
  failover,
} from "./cluster.js";
import { clusterClients } from "./cluster-clients.js";
import { clusterOpenLoop } from "./cluster-open-loop.js";
import { compressionRandom, compressionText } from "./compression.js";
import { crashRecovery } from "./crash.js";
import { etcdList, etcdPut, etcdRange, etcdTxn } from "./etcd-api.js";
import { etcdClients } from "./etcd-clients.js";
import { fillrandom, fillrandomBatch, fillseq, LOAD_PEERS } from "./fill.js";
import { getMemtable, getMiss, getSstable } from "./get.js";
import { grpcGetMemtable, grpcPut, grpcPutConcurrent, grpcScan } from "./grpc.js";
import { leaseChurn, leaseKeepalive, lock } from "./lease.js";
import { limit } from "./limit.js";
import { put } from "./put.js";
import { putConcurrent } from "./put-concurrent.js";
import { raftPropose } from "./raft-propose.js";
import { deleterandom, mixed5050, overwrite, readrandom, readseq, ycsbA } from "./random.js";
import { scan } from "./scan.js";
import type { Scenario } from "./scenario.js";
import { grpcTransport } from "./transport.js";
import { watchCatchup, watchFanout, watchLatency } from "./watch.js";

export const SCENARIOS: readonly Scenario[] = [
  // Each gRPC scenario right after the in-process one it repeats through a server.
  put,
  grpcPut,
  putConcurrent,
  grpcPutConcurrent,
  limit,
  getMemtable,
  grpcGetMemtable,
  crashRecovery,
  getSstable,
  getMiss,
  scan,
  grpcScan,
  grpcTransport,
  fillseq,
  fillrandomBatch,
  fillrandom,
  // One fixture; run in this order when selected together (readrandom on the settled load,
  // deleterandom last).
  readrandom,
  readseq,
  mixed5050,
  ycsbA,
  overwrite,
  deleterandom,
  compressionText,
  compressionRandom,
  raftPropose,
  // Clusters of kv-engine and etcd processes; cluster_steady only when named.
  clusterPut,
  clusterClients,
  clusterOpenLoop,
  clusterGet,
  clusterScan,
  // etcd's API on both clusters: the same requests and clients.
  etcdPut,
  etcdRange,
  etcdTxn,
  etcdList,
  // etcd's Watch on both clusters: the same watcher processes and writer.
  watchLatency,
  watchFanout,
  watchCatchup,
  // etcd's leases and locks on both clusters: the same requests and clients.
  leaseKeepalive,
  leaseChurn,
  lock,
  // Our etcd client against the etcd3 npm package, on both clusters.
  etcdClients,
  failover,
  catchUp,
  clusterSteady,
];

/** The scenarios run when `--scenarios` is not given. */
export const DEFAULT_SCENARIOS: readonly Scenario[] = SCENARIOS.filter((s) => s.optIn !== true);

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}

/** `--scale`: the sizes (keys) fillrandom and readrandom run at. */
export const SCALE_SIZES: readonly number[] = [1_000_000, 4_000_000, 16_000_000];

/** 1000000 → "1M", 400000 → "400k": a size as the `--scale` scenarios are named. */
export function sizeName(n: number): string {
  if (n % 1_000_000 === 0) return `${n / 1_000_000}M`;
  return n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

/** The `--scale` scenarios: fillrandom and readrandom at each size, named `<name>@<size>`. */
export function scaleScenarios(sizes: readonly number[]): Scenario[] {
  return [fillrandom, readrandom].flatMap((s) =>
    sizes.map((n) => ({
      ...s,
      name: `${s.name}@${sizeName(n)}`,
      base: s.name,
      title: `${s.title} (n = ${sizeName(n)})`,
      extraPeers: LOAD_PEERS,
      defaultN: () => n,
    })),
  );
}
