/**
 * Store registry. To add a peer (a RocksDB binding, lmdb, ...): write `./<name>.ts`
 * exporting `adapter: StoreAdapter`, and add an entry here. The import happens in the
 * child process that runs the store, so a missing package only marks that store missing.
 */
import type { StoreAdapter } from "./store.js";

export interface StoreEntry {
  /** Name used in reports. */
  label: string;
  load(): Promise<StoreAdapter>;
}

/** The store under test. Every other entry is a peer. */
export const KV_ENGINE = "kv-engine";
/** KV Engine with log preallocation on: a peer option, not run by default. */
export const KV_PREALLOC = "kv-engine-prealloc";
/** KV Engine with a 128 MiB block cache: the memory-matched row of the table reads. */
export const KV_CACHE128 = "kv-engine-cache128";
/** RocksDB (@nxtedition/rocksdb): a default peer of the write-heavy scenarios only. */
export const ROCKSDB = "rocksdb";
/** lmdb (lmdb-js): a default peer of the read scenarios and the loads. */
export const LMDB = "lmdb";
/** KV Engine's gRPC server (`kv-engine serve`) in its own process, through KvClient. */
export const KV_GRPC = "kv-engine-grpc";
/** KV Engine with compression none, lz4, deflate (4 MiB block cache): the compression scenarios. */
export const KV_COMPRESSION_NONE = "kv-engine-none";
export const KV_COMPRESSION_LZ4 = "kv-engine-lz4";
export const KV_COMPRESSION_DEFLATE = "kv-engine-deflate";
/** The same gRPC service over an in-memory Map (no engine): the transport floor. */
export const GRPC_FLOOR = "grpc-floor";

/** A 3-node kv-engine cluster (`kv-engine serve` members): the cluster scenarios. */
export const KV_CLUSTER = "kv-engine-cluster";
/** A 3-node etcd 3.4 cluster (the `etcd` on PATH): the cluster scenarios' peer. */
export const ETCD_CLUSTER = "etcd";

export const STORES: Readonly<Record<string, StoreEntry>> = {
  [KV_ENGINE]: {
    label: "KV Engine",
    load: async () => (await import("./kv-engine.js")).adapter,
  },
  [KV_PREALLOC]: {
    label: "KV Engine, walPreallocateBytes 1 MiB",
    load: async () => (await import("./kv-engine-prealloc.js")).adapter,
  },
  [KV_CACHE128]: {
    label: "KV Engine, block cache 128 MiB",
    load: async () => (await import("./kv-engine-cache128.js")).adapter,
  },
  "classic-level": {
    label: "classic-level (LevelDB)",
    load: async () => (await import("./classic-level.js")).adapter,
  },
  [ROCKSDB]: {
    label: "RocksDB (@nxtedition/rocksdb)",
    load: async () => (await import("./rocksdb.js")).adapter,
  },
  [LMDB]: {
    label: "lmdb (LMDB)",
    load: async () => (await import("./lmdb.js")).adapter,
  },
  [KV_COMPRESSION_NONE]: {
    label: "KV Engine, compression none",
    load: async () => (await import("./kv-engine-compression.js")).none,
  },
  [KV_COMPRESSION_LZ4]: {
    label: "KV Engine, compression lz4",
    load: async () => (await import("./kv-engine-compression.js")).lz4,
  },
  [KV_COMPRESSION_DEFLATE]: {
    label: "KV Engine, compression deflate",
    load: async () => (await import("./kv-engine-compression.js")).deflate,
  },
  [KV_GRPC]: {
    label: "KV Engine over gRPC",
    load: async () => (await import("./kv-engine-grpc.js")).adapter,
  },
  [GRPC_FLOOR]: {
    label: "gRPC floor (Map, no engine)",
    load: async () => (await import("./grpc-floor.js")).adapter,
  },
  [KV_CLUSTER]: {
    label: "KV Engine, 3-node cluster",
    load: async () => (await import("./cluster.js")).kvCluster,
  },
  [ETCD_CLUSTER]: {
    label: "etcd 3.4, 3-node cluster",
    load: async () => (await import("./cluster.js")).loadEtcdCluster(),
  },
};

export function storeLabel(name: string): string {
  return STORES[name]?.label ?? name;
}
