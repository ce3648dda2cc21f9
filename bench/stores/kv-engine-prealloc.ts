/**
 * KV Engine with log preallocation on (`walPreallocateBytes: 1 MiB`; off by default, see
 * docs/design.md "Log preallocation"): durable appends overwrite preallocated blocks, so
 * fdatasync commits no metadata. Not a default peer: `--peers classic-level,kv-engine-prealloc`.
 */
import { kvOpenOptions, openKvBenchStore } from "./kv-engine.js";
import type { StoreAdapter } from "./store.js";

const PREALLOCATE_BYTES = 1 << 20;

export const adapter: StoreAdapter = {
  open: (dir, options) =>
    openKvBenchStore(dir, { ...kvOpenOptions(options), walPreallocateBytes: PREALLOCATE_BYTES }),
};
