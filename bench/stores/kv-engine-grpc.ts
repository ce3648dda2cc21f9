/**
 * KV Engine over gRPC: the real CLI, `kv-engine serve --data-dir DIR --port 0` (plus
 * `--no-sync` for unsynced scenarios), in its own process, with the CLI's defaults (store
 * options included: the harness's writeBufferSize and blockCacheSize do not reach it),
 * called through KvClient over loopback. See ./grpc.ts.
 */
import { fileURLToPath } from "node:url";
import { openServedBenchStore } from "./grpc.js";
import type { StoreAdapter } from "./store.js";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

export const adapter: StoreAdapter = {
  open: (dir, options) =>
    openServedBenchStore(
      {
        args: [
          CLI,
          "serve",
          "--data-dir",
          dir,
          "--port",
          "0",
          ...(options.sync ? [] : ["--no-sync"]),
        ],
        dataDir: dir,
      },
      options,
    ),
};
