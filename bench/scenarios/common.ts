/** Helpers shared by store scenarios. */

import { dirBytes, processWriteBytes, tableAndManifestFiles } from "../lib/io.js";
import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import { bytesEqual, keyAt } from "../lib/workload.js";
import type { BenchStore, PutOptions } from "../stores/store.js";

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

/**
 * Times writes of the keys `keyAt(table, order[j])`, j = 0.., each awaited before the next:
 * puts of `value(i)` for key i, or, with `value` undefined, deletes; `batch` keys per
 * atomic batch (`putBatch`/`deleteBatch`), or with `batch` 1 and puts, one `put` each.
 * One clock read per write: a latency sample is one batch (one put), from the end of the
 * previous one, building its arrays included.
 */
export async function timeWrites(
  store: BenchStore,
  table: Uint8Array,
  order: Uint32Array,
  value: ((i: number) => Uint8Array) | undefined,
  batch: number,
  options: PutOptions,
): Promise<Measurement> {
  const n = order.length;
  const writes = Math.ceil(n / batch);
  const latencies = new Float64Array(writes);
  const start = nowNs();
  let prev = start;
  for (let w = 0; w < writes; w++) {
    if (batch === 1 && value !== undefined) {
      const i = order[w]!;
      await store.put(keyAt(table, i), value(i), options);
    } else {
      const keys: Uint8Array[] = [];
      const values: Uint8Array[] = [];
      for (let j = w * batch; j < Math.min(n, (w + 1) * batch); j++) {
        keys.push(keyAt(table, order[j]!));
        if (value !== undefined) values.push(value(order[j]!));
      }
      await (value === undefined
        ? store.deleteBatch(keys, options)
        : store.putBatch(keys, values, options));
    }
    const t = nowNs();
    latencies[w] = t - prev;
    prev = t;
  }
  const seconds = (prev - start) / 1e9;
  return { label: "", ops: n, seconds, opsPerSec: n / seconds, latency: summarize(latencies) };
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

/**
 * CPU seconds (user + system, every thread of the process: a store's background threads
 * and KV Engine's compaction worker included) since `start` (a `process.cpuUsage()`). Beside
 * a phase's wall time it tells the store's cost from time the process spent descheduled on
 * a shared machine.
 */
export function cpuSecondsSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1e6;
}

/** How long a scenario waits, untimed, for a store's compactions to finish (small loads). */
export const SETTLE_MAX_MS = 60_000;
/** A larger load may settle for 1 s per this many bytes of keys and values written. */
export const SETTLE_BYTES_PER_SECOND = 4 * 1024 * 1024;

/**
 * The settle wait after writing `userBytes` of keys and values: SETTLE_MAX_MS, or 1 s per
 * SETTLE_BYTES_PER_SECOND when longer (a 16M-key load of 100-byte values: ~440 s), so that
 * a large load's compaction debt is paid before the amplification is measured.
 */
export function settleLimitMs(userBytes: number): number {
  return Math.max(SETTLE_MAX_MS, Math.ceil(userBytes / SETTLE_BYTES_PER_SECOND) * 1000);
}

/** Counters at the start of a measured write phase (see `writeMeter`). */
export interface WriteMeterStart {
  ioWriteBytes: number | undefined;
  flushBytes: number | undefined;
  compactionBytesWritten: number | undefined;
}

/** Bytes written by whichever process does the store's I/O (this one, or its server). */
function storeWriteBytes(store: BenchStore): number | undefined {
  return store.ioWriteBytes === undefined ? processWriteBytes() : store.ioWriteBytes();
}

export function writeMeter(store: BenchStore): WriteMeterStart {
  const s = store.stats?.();
  return {
    ioWriteBytes: storeWriteBytes(store),
    flushBytes: s?.["flushBytes"],
    compactionBytesWritten: s?.["compactionBytesWritten"],
  };
}

/**
 * After a write phase (untimed): waits for the store's background work (`waitIdle`, at
 * most `settleLimitMs(userBytes)`), then measures, uniformly for every store, the bytes the process
 * wrote since `start` (/proc/self/io; a server's for a store served by one) against `userBytes` (keys + values written), the
 * data directory's size (du) against `logicalBytes` (keys + values of the live data),
 * and, for stores that count them (KV Engine), table bytes written ÷ bytes flushed.
 */
export async function settleAndMeasure(
  store: BenchStore,
  dir: string,
  start: WriteMeterStart,
  userBytes: number,
  logicalBytes: number,
): Promise<Record<string, number>> {
  const t0 = nowNs();
  const idle =
    store.waitIdle === undefined ? undefined : await store.waitIdle(settleLimitMs(userBytes));
  const out: Record<string, number> = {
    settleSeconds: (nowNs() - t0) / 1e9,
    userBytes,
    logicalBytes,
    dataDirBytes: dirBytes(dir),
  };
  const files = tableAndManifestFiles(dir);
  out["tableFilesOnDisk"] = files.tableFiles;
  out["manifestBytes"] = files.manifestBytes;
  if (idle !== undefined) out["settled"] = idle ? 1 : 0;
  const io = storeWriteBytes(store);
  if (io !== undefined && start.ioWriteBytes !== undefined) {
    out["writtenBytes"] = io - start.ioWriteBytes;
  }
  const s = store.stats?.();
  const flush = s?.["flushBytes"];
  const comp = s?.["compactionBytesWritten"];
  if (
    flush !== undefined &&
    comp !== undefined &&
    start.flushBytes !== undefined &&
    start.compactionBytesWritten !== undefined &&
    flush > start.flushBytes
  ) {
    const flushed = flush - start.flushBytes;
    out["tableWriteAmp"] = (flushed + comp - start.compactionBytesWritten) / flushed;
  }
  return out;
}
