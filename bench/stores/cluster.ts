/**
 * The clusters of the cluster scenarios as stores: `kv-engine-cluster` (three
 * `kv-engine serve` members) and `etcd` (three etcd members), each started fresh in the
 * run's directory by `open` and stopped by `close` (bench/cluster/). The scenarios drive
 * the cluster handle (`cluster`) and their own client processes; the BenchStore calls go
 * to member n1 through its client, for completeness. `etcd` loads only when the `etcd`
 * binary is on PATH: otherwise its rows are reported as skipped, with the reason.
 */
import type { BenchCluster } from "../cluster/cluster.js";
import { ETCD_MISSING, EtcdCluster, etcdOnPath } from "../cluster/etcd-cluster.js";
import { KvCluster } from "../cluster/kv-cluster.js";
import type { BenchStore, Row, StoreAdapter } from "./store.js";

function clusterStore(cluster: BenchCluster): BenchStore {
  const n1 = () => cluster.client(cluster.names()[0]!);
  return {
    cluster,
    put: (key, value) => n1().put(key, value),
    get: (key) => n1().get(key),
    putBatch: (keys, values) => n1().putBatch(keys, values),
    deleteBatch() {
      return Promise.reject(new Error(`${cluster.kind} cluster store: no deleteBatch`));
    },
    scan(): Promise<Row[]> {
      return Promise.reject(new Error(`${cluster.kind} cluster store: scans go through clients`));
    },
    reopenFromTables() {
      return Promise.reject(new Error(`${cluster.kind} cluster store: no reopenFromTables`));
    },
    close: () => cluster.stop(),
  };
}

export const kvCluster: StoreAdapter = {
  open: async (dir) => clusterStore(await KvCluster.start(dir)),
};

/** Throws (the store is then reported missing) unless etcd is on PATH. */
export function loadEtcdCluster(): StoreAdapter {
  if (etcdOnPath() === undefined) throw new Error(ETCD_MISSING);
  return { open: async (dir) => clusterStore(await EtcdCluster.start(dir)) };
}
