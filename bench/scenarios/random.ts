/**
 * Scenarios on the `random` fixture (n keys loaded in random order, store reopened and
 * settled; see ./fixtures.ts). Selected together they share one child per store and run,
 * in this order:
 *
 * - `readrandom`: min(n, READRANDOM_MAX_GETS) gets of distinct existing keys in a seeded
 *   random order, each awaited.
 * - `readseq`: READSEQ_PASSES range reads of all n keys from the first (rows/s).
 * - `mixed_50_50`: n operations, one at a time, each awaited: even-numbered ones get,
 *   odd-numbered ones put (unsynced), each on a key drawn from a seeded generator over
 *   0..n-1 (the same sequence for every store); every get must find its key.
 * - `ycsb_a`: n operations, one at a time, each awaited: a get or an unsynced put (each
 *   with probability 1/2, seeded) of a key drawn from a scrambled Zipfian distribution
 *   over 0..n-1 (the same sequence for every store); every get must find its key.
 * - `overwrite`: every one of the n keys rewritten once with a new value, in a seeded
 *   random order, in unsynced batches of FILL_BATCH; latency columns per batch.
 * - `deleterandom`: every one of the n keys deleted once, in a seeded random order, in
 *   unsynced batches of FILL_BATCH deletes; latency columns per batch.
 *
 * The write phases end (untimed) with `settleAndMeasure`: the store is left to settle, then
 * the bytes written, the data directory's size and KV Engine's table write amplification
 * are measured. readrandom's amplification columns are the fixture's (the fill's).
 */
import { fmtInt } from "../lib/format.js";
import { nowNs, summarize } from "../lib/stats.js";
import {
  KEY_BYTES,
  keyAt,
  keyTable,
  rng,
  shuffledIndices,
  valueSource,
  ZIPF_THETA,
  zipfianIndices,
} from "../lib/workload.js";
import type { BenchStore } from "../stores/store.js";
import {
  cacheCounters,
  cacheDelta,
  cpuSecondsSince,
  settleAndMeasure,
  timeGets,
  timeWrites,
  verifyTableSample,
  writeMeter,
} from "./common.js";
import { AMPLIFICATION_NOTE, RANDOM_PEERS, writeHeavyN } from "./fill.js";
import { FILL_BATCH, randomFixture, TABLE_CACHE_BYTES } from "./fixtures.js";
import { measureScans } from "./scan.js";
import type { ScenarioContext, ScenarioOutput, StoreScenario } from "./scenario.js";

const MiB = 1024 * 1024;

/** The data set of the `random` fixture, for the report's size lines. */
export const randomLine = (n: number, valueSize: number): string =>
  `${fmtInt(n)} keys (16 bytes, ${valueSize}-byte values) written in random order in ` +
  `unsynced batches of ${fmtInt(FILL_BATCH)}, store reopened and left until its ` +
  `compactions were idle (at most 60 s, or 1 s per 4 MiB written when longer; block cache ${TABLE_CACHE_BYTES / MiB} MiB for every store)`;

/**
 * Most gets of a readrandom run (db_bench's `--reads` beside `--num`): at 16M keys, n
 * awaited gets would take as long as the load (an hour for a peer whose get is a thread-pool
 * round trip) without telling more; a uniform sample of this many keys does.
 */
export const READRANDOM_MAX_GETS = 500_000;

export const readrandom: StoreScenario = {
  kind: "store",
  name: "readrandom",
  title: "random gets of existing keys, one at a time, after a random-order load",
  sync: false,
  unit: "gets",
  fixture: randomFixture,
  extraPeers: RANDOM_PEERS,
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then ${fmtInt(Math.min(n, READRANDOM_MAX_GETS))} gets of ` +
    `distinct keys among them in random order, each awaited. Amplification columns: those ` +
    `of the load. ${AMPLIFICATION_NOTE}`,
  async run(store, { n, valueSize, seed }) {
    const table = keyTable(0, n);
    const before = cacheCounters(store);
    const order = shuffledIndices(n, seed + 1).subarray(0, READRANDOM_MAX_GETS);
    const cpu = process.cpuUsage();
    const row = await timeGets(store, table, order, "hit");
    const extra = { ...cacheDelta(store, before), timedCpuSeconds: cpuSecondsSince(cpu) };
    await verifyTableSample(store, table, n, valueSource(valueSize, seed));
    return { rows: [row], extra };
  },
};

/**
 * Times `keys.length` operations, each awaited before the next: a get of key `keys[i]`
 * where `isGet(i)`, else an unsynced put of `value(i)`; every get must find its key. Then
 * (untimed) settles and measures the writes (`settleAndMeasure`).
 */
async function timeGetsAndPuts(
  store: BenchStore,
  { dir, n, valueSize, seed }: ScenarioContext,
  keys: Uint32Array,
  isGet: (i: number) => boolean,
  what: string,
): Promise<ScenarioOutput> {
  const table = keyTable(0, n);
  const value = valueSource(valueSize, seed + 6);
  const count = keys.length;
  const latencies = new Float64Array(count);
  const opts = { sync: false };
  let missing = 0;
  let puts = 0;
  const meter = writeMeter(store);
  const start = nowNs();
  let prev = start;
  for (let i = 0; i < count; i++) {
    const key = keyAt(table, keys[i]!);
    if (isGet(i)) {
      if ((await store.get(key)) === undefined) missing++;
    } else {
      await store.put(key, value(i), opts);
      puts++;
    }
    const t = nowNs();
    latencies[i] = t - prev;
    prev = t;
  }
  const seconds = (prev - start) / 1e9;
  if (missing > 0) throw new Error(`${what}: ${missing} gets found no value`);
  const entry = KEY_BYTES + valueSize;
  const extra = await settleAndMeasure(store, dir, meter, puts * entry, n * entry);
  return {
    rows: [
      { label: "", ops: count, seconds, opsPerSec: count / seconds, latency: summarize(latencies) },
    ],
    extra: { ...extra, gets: count - puts, puts },
  };
}

/** Full scans per readseq run. */
export const READSEQ_PASSES = 2;

export const readseq: StoreScenario = {
  kind: "store",
  name: "readseq",
  title: "full forward scans of a random-order load",
  sync: false,
  unit: "rows",
  fixture: randomFixture,
  extraPeers: RANDOM_PEERS,
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then ${READSEQ_PASSES} range reads of every key from the ` +
    "first, each through the store's range read into an array (and through its other range " +
    "APIs, as rows of their own); rows/s, latency columns per full scan.",
  run: (store, { n, seed }) => measureScans(store, n, n, seed + 10, READSEQ_PASSES),
};

export const mixed5050: StoreScenario = {
  kind: "store",
  name: "mixed_50_50",
  title: "50% gets, 50% unsynced puts, one at a time, on a random-order load",
  sync: false,
  fixture: randomFixture,
  extraPeers: RANDOM_PEERS,
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then ${fmtInt(n)} operations, each awaited, alternating ` +
    "get and unsynced put, on keys drawn by a seeded generator (the same for every store). " +
    `${AMPLIFICATION_NOTE}`,
  run(store, ctx) {
    const random = rng(ctx.seed + 6);
    const keys = Uint32Array.from({ length: ctx.n }, () => Math.floor(random() * ctx.n));
    return timeGetsAndPuts(store, ctx, keys, (i) => (i & 1) === 0, "mixed_50_50");
  },
};

export const ycsbA: StoreScenario = {
  kind: "store",
  name: "ycsb_a",
  title: "YCSB workload A: 50% reads, 50% updates, Zipfian keys, one at a time",
  sync: false,
  fixture: randomFixture,
  extraPeers: RANDOM_PEERS,
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then ${fmtInt(n)} operations, each awaited: a get or an ` +
    "unsynced put of a new value (each with probability 1/2), on a key drawn from a " +
    `Zipfian distribution over the ${fmtInt(n)} keys (θ = ${ZIPF_THETA}, ranks scattered ` +
    "by a hash, as YCSB's scrambled Zipfian); seeded, the same sequence for every store. " +
    AMPLIFICATION_NOTE,
  run(store, ctx) {
    const keys = zipfianIndices(ctx.n, ctx.n, ctx.seed + 8);
    const random = rng(ctx.seed + 9);
    const gets = Uint8Array.from({ length: ctx.n }, () => (random() < 0.5 ? 1 : 0));
    return timeGetsAndPuts(store, ctx, keys, (i) => gets[i] === 1, "ycsb_a");
  },
};

export const overwrite: StoreScenario = {
  kind: "store",
  name: "overwrite",
  title: `every key rewritten once, random order, in batches of ${fmtInt(FILL_BATCH)}, unsynced`,
  sync: false,
  fixture: randomFixture,
  extraPeers: RANDOM_PEERS,
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)}; then each of the ${fmtInt(n)} keys rewritten once with a ` +
    `new value, in random order, in unsynced batches of ${fmtInt(FILL_BATCH)}, each ` +
    `awaited; latency columns per batch. ${AMPLIFICATION_NOTE}`,
  async run(store, { dir, n, valueSize, seed }) {
    const table = keyTable(0, n);
    const fresh = valueSource(valueSize, seed + 5);
    const meter = writeMeter(store);
    const order = shuffledIndices(n, seed + 5);
    const row = await timeWrites(store, table, order, fresh, FILL_BATCH, { sync: false });
    const bytes = n * (KEY_BYTES + valueSize);
    const extra = await settleAndMeasure(store, dir, meter, bytes, bytes);
    await verifyTableSample(store, table, n, fresh);
    return { rows: [row], extra };
  },
};

export const deleterandom: StoreScenario = {
  kind: "store",
  name: "deleterandom",
  title: `every key deleted, random order, in batches of ${fmtInt(FILL_BATCH)}, unsynced`,
  sync: false,
  fixture: randomFixture,
  extraPeers: RANDOM_PEERS,
  defaultN: writeHeavyN,
  sizeLine: (n, valueSize) =>
    `${randomLine(n, valueSize)} (then, when selected, the scenarios above); then each of ` +
    `the ${fmtInt(n)} keys deleted once, in random order, in unsynced batches of ` +
    `${fmtInt(FILL_BATCH)} deletes, each awaited; latency columns per batch. Written ÷ the ` +
    "keys deleted (n × 16 bytes); no space amplification (nothing is live). Afterwards " +
    "(untimed) a sample of the keys must be absent and a scan from the first key empty.",
  async run(store, { dir, n, seed }) {
    const table = keyTable(0, n);
    const meter = writeMeter(store);
    const order = shuffledIndices(n, seed + 7);
    const row = await timeWrites(store, table, order, undefined, FILL_BATCH, { sync: false });
    const extra = await settleAndMeasure(store, dir, meter, n * KEY_BYTES, 0);
    const step = Math.max(1, Math.floor(n / 200));
    for (let i = 0; i < n; i += step) {
      if ((await store.get(keyAt(table, i))) !== undefined) {
        throw new Error(`deleterandom: key ${i} still has a value`);
      }
    }
    const left = await store.scan(keyAt(table, 0), 1);
    if (left.length > 0) throw new Error("deleterandom: a scan still finds a row");
    return { rows: [row], extra };
  },
};
