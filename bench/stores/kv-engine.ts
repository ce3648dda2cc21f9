/** KV Engine, through its public embedded API. */
import { open } from "../../src/index.js";
import type { BenchStore, StoreAdapter } from "./store.js";

export const adapter: StoreAdapter = {
  async open(dir, options): Promise<BenchStore> {
    const db = await open(dir, { sync: options.sync });
    return {
      put: (key, value, opts) => db.put(key, value, { sync: opts.sync }),
      get: (key) => db.get(key),
      stats() {
        const { commit } = db.stats();
        return {
          batches: commit.batches,
          groups: commit.groups,
          syncs: commit.syncs,
          maxGroupSize: commit.maxGroupSize,
        };
      },
      close: () => db.close(),
    };
  },
};
