/**
 * Loads of an empty store, unsynced (db_bench's fillseq and fillrandom):
 *
 * - `fillseq`: n keys in ascending order, in batches of FILL_BATCH puts (one atomic batch
 *   each), each batch awaited before the next; latency columns per batch.
 * - `fillrandom_batch`: the same in a seeded random key order.
 * - `fillrandom`: n keys in random order, one `put` at a time, each awaited before the next.
 *
 * After the timed loop (untimed): the store is left to settle (`waitIdle`, at most
 * `settleLimitMs`), then the bytes the process wrote, the data directory's size and KV
 * Engine's table write amplification are measured (`settleAndMeasure`), and a sample of
 * keys is read back.
 */
import { fmtInt } from "../lib/format.js";
import { KEY_BYTES, keyTable, shuffledIndices, valueSource } from "../lib/workload.js";
import { LMDB, ROCKSDB } from "../stores/index.js";
import {
  cpuSecondsSince,
  settleAndMeasure,
  timeWrites,
  verifyTableSample,
  writeMeter,
} from "./common.js";
import { FILL_BATCH } from "./fixtures.js";
import type { StoreScenario } from "./scenario.js";

/** Default n of the write-heavy scenarios (fill, overwrite, readrandom, mixed_50_50). */
export const WRITE_HEAVY_N = 150_000;
export const WRITE_HEAVY_QUICK_N = 50_000;

/** Peers of the loads beside the default ones. */
export const LOAD_PEERS: readonly string[] = [ROCKSDB, LMDB];
/**
 * Peers of the `random` fixture's scenarios beside the default ones: RocksDB. lmdb (one
 * transaction per awaited put: ~20k puts/s here) would add ~25 s per round to them, more
 * than the default run's 10 minutes can spare; `--peers classic-level,rocksdb,lmdb` adds it.
 */
export const RANDOM_PEERS: readonly string[] = [ROCKSDB];

export const writeHeavyN = (quick: boolean): number =>
  quick ? WRITE_HEAVY_QUICK_N : WRITE_HEAVY_N;

/** The sentence on write and space amplification shared by the write-heavy scenarios. */
export const AMPLIFICATION_NOTE =
  "Written: bytes the child process wrote (/proc/self/io `write_bytes`, all threads, the " +
  "same measure for every store) during the phase and until its compactions were idle " +
  "(untimed wait, at most 60 s, or 1 s per 4 MiB written when longer), ÷ the keys and values written; data dir: its du after " +
  "that ÷ the live keys and values (n × (16 + value size) bytes).";

/** Key order of a load: db_bench's fillrandom (seeded shuffle) or fillseq (ascending). */
type LoadOrder = "random" | "ascending";

function loadOrder(order: LoadOrder, n: number, seed: number): Uint32Array {
  if (order === "random") return shuffledIndices(n, seed);
  return Uint32Array.from({ length: n }, (_, i) => i);
}

/** A load of n keys into an empty store, unsynced, in `batch`es (1: one put at a time). */
function loadScenario(name: string, order: LoadOrder, batch: number): StoreScenario {
  const how = batch === 1 ? "one put at a time" : `in batches of ${fmtInt(batch)}`;
  const words = order === "random" ? "random key order" : "ascending key order";
  return {
    kind: "store",
    name,
    title: `${order === "random" ? "random-order" : "ascending"} load, ${how}, unsynced`,
    sync: false,
    defaultN: writeHeavyN,
    extraPeers: LOAD_PEERS,
    sizeLine: (n, valueSize) =>
      `${fmtInt(n)} puts (16-byte keys, ${valueSize}-byte values) in ${words}, into an empty ` +
      `store, unsynced, ${batch === 1 ? "each awaited before the next" : `${how}, each awaited; latency columns per batch`}. ` +
      AMPLIFICATION_NOTE,
    async run(store, { dir, n, valueSize, seed }) {
      const table = keyTable(0, n);
      const value = valueSource(valueSize, seed);
      const meter = writeMeter(store);
      const cpu = process.cpuUsage();
      const row = await timeWrites(store, table, loadOrder(order, n, seed), value, batch, {
        sync: false,
      });
      const timedCpuSeconds = cpuSecondsSince(cpu);
      const bytes = n * (KEY_BYTES + valueSize);
      const extra = await settleAndMeasure(store, dir, meter, bytes, bytes);
      await verifyTableSample(store, table, n, value);
      return { rows: [row], extra: { ...extra, timedCpuSeconds } };
    },
  };
}

export const fillseq = loadScenario("fillseq", "ascending", FILL_BATCH);
export const fillrandomBatch = loadScenario("fillrandom_batch", "random", FILL_BATCH);
export const fillrandom = loadScenario("fillrandom", "random", 1);
