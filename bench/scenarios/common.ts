/** Helpers shared by store scenarios. */

import { bytesEqual } from "../lib/workload.js";
import type { BenchStore } from "../stores/store.js";

/**
 * Reads back up to `sample` of the written keys (untimed) and throws if any value is
 * wrong, so that a store that is fast because it drops writes cannot post a result.
 */
export async function verifySample(
  store: BenchStore,
  keys: readonly Uint8Array[],
  value: (i: number) => Uint8Array,
  sample = 200,
): Promise<void> {
  const step = Math.max(1, Math.floor(keys.length / sample));
  for (let i = 0; i < keys.length; i += step) {
    const got = await store.get(keys[i]!);
    if (got === undefined || !bytesEqual(got, value(i))) {
      const key = new TextDecoder().decode(keys[i]);
      throw new Error(`verification failed: wrong value for ${key} after the run`);
    }
  }
}
