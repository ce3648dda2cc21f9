/** Public API of the KV Engine gRPC server (package entry "kv-engine/server"). */
export {
  DEFAULT_HOST,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  hostPort,
  KvServer,
  type KvServerOptions,
  type ServerStats,
  type ServerTransportName,
  type TlsOptions,
  TRANSPORTS,
} from "./kv-server.js";
export { DEFAULT_LIMITS, type ServerLimits } from "./limits.js";
export { STATUS_OF_KV_ERROR } from "./rpc-status.js";
export type { ScanCounters } from "./scan-stream.js";
