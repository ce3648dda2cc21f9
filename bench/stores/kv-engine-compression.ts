/**
 * KV Engine with each block compression (`compression` none, lz4, deflate) and a 4 MiB
 * block cache, smaller than the compression scenarios' data, so that most of their reads
 * decompress a block: the stores of bench/scenarios/compression.ts.
 */
import type { OpenOptions } from "../../src/index.js";
import { kvOpenOptions, openKvBenchStore } from "./kv-engine.js";
import type { StoreAdapter } from "./store.js";

/** Block cache of these stores. */
export const COMPRESSION_CACHE_BYTES = 4 << 20;

function adapter(compression: NonNullable<OpenOptions["compression"]>): StoreAdapter {
  return {
    open: (dir, options) =>
      openKvBenchStore(dir, {
        ...kvOpenOptions(options),
        blockCacheSize: COMPRESSION_CACHE_BYTES,
        compression,
      }),
  };
}

export const none = adapter("none");
export const lz4 = adapter("lz4");
export const deflate = adapter("deflate");
