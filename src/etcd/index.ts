/** etcd's v3 API (issue 28): the KV service, its backends, errors and flags. */
export {
  type EtcdCallOptions,
  type EtcdHeaderIds,
  type EtcdKvBackend,
  fillHeader,
} from "./etcd-backend.js";
export {
  ETCD_ERRORS,
  EtcdError,
  type EtcdErrorName,
  etcdStatusOf,
  toEtcdGrpcError,
} from "./etcd-errors.js";
export { ETCD_FLAG_OPTIONS, ETCD_FLAG_USAGE, etcdFlagValues } from "./etcd-flags.js";
export {
  DEFAULT_MAX_REQUEST_BYTES,
  ETCD_KV_SERVICE_NAME,
  type EtcdKvServiceOptions,
  etcdKvService,
  GRPC_OVERHEAD_BYTES,
  registerEtcdKv,
} from "./kv-service.js";
export { LocalEtcdBackend, type LocalEtcdBackendOptions } from "./local-backend.js";
