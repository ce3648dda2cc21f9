/**
 * etcd's v3 API (issues 28, 29, 30): the KV, Watch, Lock and Election services, their
 * backends, errors and flags.
 */

export {
  ETCD_ELECTION_SERVICE_NAME,
  type EtcdElectionServiceOptions,
  etcdElectionService,
  registerEtcdElection,
} from "./election-service.js";
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
  toRecipeGrpcError,
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
export { ETCD_LOCK_SERVICE_NAME, etcdLockService, registerEtcdLock } from "./lock-service.js";
export {
  RECIPE_ERRORS,
  type RecipeBackend,
  RecipeError,
} from "./recipes/recipe-backend.js";
export { WatchHub, type WatchHubOptions } from "./watch-hub.js";
export {
  DEFAULT_PROGRESS_INTERVAL_MS,
  ETCD_WATCH_SERVICE_NAME,
  type EtcdWatchBackend,
  type EtcdWatchServiceOptions,
  etcdWatchService,
  registerEtcdWatch,
} from "./watch-service.js";
