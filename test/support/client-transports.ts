/**
 * The transports KvClient is tested under (src/client/transport.ts): client test files
 * run their cases once per transport, `describe(transport, ...)`, not as copies.
 */
import type { TransportName } from "../../src/client/transport.js";

export const CLIENT_TRANSPORTS: readonly TransportName[] = ["lean", "grpc-js"];
