/** Helpers shared by store scenarios. */

import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import { bytesEqual, keyAt } from "../lib/workload.js";
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

/** As `verifySample`, for `count` keys of a `keyTable` whose i-th key holds `value(i)`. */
export async function verifyTableSample(
  store: BenchStore,
  table: Uint8Array,
  count: number,
  value: (i: number) => Uint8Array,
  sample = 200,
): Promise<void> {
  const step = Math.max(1, Math.floor(count / sample));
  for (let i = 0; i < count; i += step) {
    const got = await store.get(keyAt(table, i));
    if (got === undefined || !bytesEqual(got, value(i))) {
      const key = new TextDecoder().decode(keyAt(table, i));
      throw new Error(`verification failed: wrong value for ${key}`);
    }
  }
}

/** Whether each timed get must find its key ("hit") or must not ("miss"). */
export type Expect = "hit" | "miss";

function checkFound(what: string, expect: Expect, wrong: number, count: number): void {
  if (wrong === 0) return;
  const how = expect === "hit" ? "found no value" : "found a value";
  throw new Error(`${what}: ${wrong} of ${count} gets ${how}`);
}

/**
 * Times `order.length` gets, each awaited before the next, of the keys
 * `keyAt(table, order[i])`. One clock read per get: a latency sample is the time from the
 * end of the previous get to the end of this one (the loop's own cost is a few ns).
 * Throws afterwards if any get's result contradicts `expect`.
 */
export async function timeGets(
  store: BenchStore,
  table: Uint8Array,
  order: Uint32Array,
  expect: Expect,
  label = "",
): Promise<Measurement> {
  const count = order.length;
  const latencies = new Float64Array(count);
  const wantFound = expect === "hit";
  let wrong = 0;
  const start = nowNs();
  let prev = start;
  for (let i = 0; i < count; i++) {
    const v = await store.get(keyAt(table, order[i]!));
    if ((v !== undefined) !== wantFound) wrong++;
    const t = nowNs();
    latencies[i] = t - prev;
    prev = t;
  }
  const seconds = (prev - start) / 1e9;
  checkFound(label || "get", expect, wrong, count);
  return { label, ops: count, seconds, opsPerSec: count / seconds, latency: summarize(latencies) };
}

/** As `timeGets`, with the store's synchronous get (not awaited). */
export function timeGetsSync(
  getSync: (key: Uint8Array) => Uint8Array | undefined,
  table: Uint8Array,
  order: Uint32Array,
  expect: Expect,
  label: string,
): Measurement {
  const count = order.length;
  const latencies = new Float64Array(count);
  const wantFound = expect === "hit";
  let wrong = 0;
  const start = nowNs();
  let prev = start;
  for (let i = 0; i < count; i++) {
    const v = getSync(keyAt(table, order[i]!));
    if ((v !== undefined) !== wantFound) wrong++;
    const t = nowNs();
    latencies[i] = t - prev;
    prev = t;
  }
  const seconds = (prev - start) / 1e9;
  checkFound(label, expect, wrong, count);
  return { label, ops: count, seconds, opsPerSec: count / seconds, latency: summarize(latencies) };
}

/** The store's block-cache counters, when it reports them (KV Engine does). */
export function cacheCounters(store: BenchStore): { hits: number; misses: number } | undefined {
  const s = store.stats?.();
  if (s === undefined || s["cacheHits"] === undefined || s["cacheMisses"] === undefined) {
    return undefined;
  }
  return { hits: s["cacheHits"], misses: s["cacheMisses"] };
}

/** Block-cache hits and misses since `before` (for the scenario's `extra`). */
export function cacheDelta(
  store: BenchStore,
  before: { hits: number; misses: number } | undefined,
): Record<string, number> {
  const after = cacheCounters(store);
  if (before === undefined || after === undefined) return {};
  return { cacheHits: after.hits - before.hits, cacheMisses: after.misses - before.misses };
}
