/** The etcd client's public API (re-exported by the package entry, src/client/index.ts). */

export { EtcdClient, type EtcdClientOptions, type GetOptions } from "./etcd-client.js";
export type { HeldLock, HeldOptions, Leadership } from "./etcd-concurrency.js";
export type {
  DeleteOptions,
  DeleteResult,
  PutOptions,
  PutResult,
  RangeOptions,
  RangeResult,
} from "./etcd-kv.js";
export { Lease, type LeaseTimeToLive } from "./etcd-lease.js";
export { op, TxnBuilder, type TxnOp, type TxnOpResult, type TxnResult } from "./etcd-txn.js";
export type { EtcdHeader, KeySelector, KeyValueRecord } from "./etcd-types.js";
export type { WatchBatch, WatchEvent, WatchOptions } from "./etcd-watch.js";
