/** Public API of the KV Engine gRPC client (package entry "kv-engine/client"). */
export { status } from "@grpc/grpc-js";
export {
  type AdminCheckpoint,
  AdminClient,
  type AdminCompactProgress,
  type AdminLevelSizes,
} from "./admin-client.js";
export {
  type Bytes,
  type ClientTlsOptions,
  type KvCallOptions,
  KvClient,
  type KvClientOptions,
  type Mutation,
  type Row,
} from "./kv-client.js";
export { isKvClientError, KvClientError } from "./kv-client-error.js";
