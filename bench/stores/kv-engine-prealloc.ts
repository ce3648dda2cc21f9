/**
 * KV Engine with log preallocation on (`walPreallocateBytes: 1 MiB`; off by default, see
 * docs/design.md "Log preallocation"): durable appends overwrite preallocated blocks, so
 * fdatasync commits no metadata. Not a default peer: `--peers classic-level,kv-engine-prealloc`.
 */
import { open } from "../../src/index.js";
import type { BenchStore, StoreAdapter } from "./store.js";

const PREALLOCATE_BYTES = 1 << 20;

export const adapter: StoreAdapter = {
  async open(dir, options): Promise<BenchStore> {
    const db = await open(dir, { sync: options.sync, walPreallocateBytes: PREALLOCATE_BYTES });
    return {
      put: (key, value, opts) => db.put(key, value, { sync: opts.sync }),
      get: (key) => db.get(key),
      stats() {
        const { commit } = db.stats();
        return { ...commit };
      },
      close: () => db.close(),
    };
  },
};
