/** Public API of the KV Engine gRPC client (package entry "kv-engine/client"). */
export { status } from "@grpc/grpc-js";
export {
  type AdminCheckpoint,
  AdminClient,
  type AdminCompactProgress,
  type AdminLevelSizes,
} from "./admin-client.js";
export { parseEndpoints } from "./endpoints.js";
export {
  type DeleteOptions,
  type DeleteResult,
  EtcdClient,
  type EtcdClientOptions,
  type EtcdHeader,
  type GetOptions,
  type HeldLock,
  type HeldOptions,
  type KeySelector,
  type KeyValueRecord,
  type Leadership,
  Lease,
  type LeaseTimeToLive,
  op,
  type PutOptions,
  type PutResult,
  type RangeOptions,
  type RangeResult,
  TxnBuilder,
  type TxnOp,
  type TxnOpResult,
  type TxnResult,
  type WatchBatch,
  type WatchEvent,
  type WatchOptions,
} from "./etcd/index.js";
export {
  type Bytes,
  type CasOutcome,
  type ClientTlsOptions,
  type KvCallOptions,
  KvClient,
  type KvClientOptions,
  type KvReadOptions,
  type MemberList,
  type MemberRecord,
  type MemberStatusRecord,
  type Mutation,
  type Row,
} from "./kv-client.js";
export { type CallFailure, isKvClientError, KvClientError } from "./kv-client-error.js";
