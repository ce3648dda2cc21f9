/**
 * Package entry "kv-engine/server" (its types are src/server/index.ts's): the server's
 * exports, loaded once its optional peer dependencies are known to be installed, so that
 * an install without them fails with one error saying what to install
 * (src/util/optional-peers.ts). Lists the same values as src/server/index.ts
 * (test/packaging/entries.test.ts checks).
 */
import { requirePeers, SERVER_PEERS } from "../util/optional-peers.js";

requirePeers("kv-engine/server", SERVER_PEERS);
const server = await import("../server/index.js");

export const {
  DEFAULT_HOST,
  DEFAULT_LIMITS,
  DEFAULT_PORT,
  DEFAULT_SHUTDOWN_GRACE_MS,
  hostPort,
  KvServer,
  STATUS_OF_KV_ERROR,
  TRANSPORTS,
} = server;
