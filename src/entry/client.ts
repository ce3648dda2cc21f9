/**
 * Package entry "kv-engine/client" (its types are src/client/index.ts's): the client's
 * exports, loaded once its optional peer dependencies are known to be installed, so that
 * an install without them fails with one error saying what to install
 * (src/util/optional-peers.ts). Lists the same values as src/client/index.ts
 * (test/packaging/entries.test.ts checks).
 */
import { CLIENT_PEERS, requirePeers } from "../util/optional-peers.js";

requirePeers("kv-engine/client", CLIENT_PEERS);
const client = await import("../client/index.js");

export const {
  AdminClient,
  EtcdClient,
  isKvClientError,
  KvClient,
  KvClientError,
  Lease,
  op,
  parseEndpoints,
  status,
  TxnBuilder,
} = client;
