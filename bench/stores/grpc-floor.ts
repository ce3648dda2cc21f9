/**
 * The gRPC transport floor: the same service over an in-memory Map, no engine
 * (bench/grpc-floor-server.ts), in its own process, called through KvClient over loopback.
 * Nothing is stored on disk, so `sync` changes nothing there. See ./grpc.ts.
 */
import { fileURLToPath } from "node:url";
import { openServedBenchStore } from "./grpc.js";
import type { StoreAdapter } from "./store.js";

const SERVER = fileURLToPath(new URL("../grpc-floor-server.js", import.meta.url));

export const adapter: StoreAdapter = {
  open: (_dir, options) => openServedBenchStore({ args: [SERVER] }, options),
};
