/**
 * The gRPC scenarios: `put`, `put_concurrent`, `get_memtable` and `scan`, the same code on
 * the same loads, through KvClient to a server in another process on loopback (see
 * bench/stores/grpc.ts). Each runs three stores: KV Engine's server (`kv-engine serve`,
 * the ratio column's baseline), the transport floor (the same service over an in-memory
 * Map), and KV Engine in-process on the same load, so that one table shows what grpc-js
 * costs (floor vs in-process) and what the engine adds on top of it (server vs floor).
 */
import { fmtInt } from "../lib/format.js";
import { keyTable } from "../lib/workload.js";
import { GRPC_FLOOR, KV_ENGINE, KV_GRPC } from "../stores/index.js";
import { getMemtable } from "./get.js";
import { put } from "./put.js";
import { putConcurrent } from "./put-concurrent.js";
import { scan, timeScans } from "./scan.js";
import type { StoreScenario } from "./scenario.js";

export const GRPC_STORES: readonly string[] = [KV_GRPC, GRPC_FLOOR, KV_ENGINE];

const ROWS_NOTE =
  "Rows: KV Engine over gRPC (`kv-engine serve` in its own process, CLI defaults) and the " +
  "floor (the same service over an in-memory Map, in its own process), both called through " +
  "KvClient from the bench process over loopback; KV Engine: in-process, the same load.";

function overGrpc(
  base: StoreScenario,
  note: string,
  defaultN: (quick: boolean) => number = base.defaultN,
): StoreScenario {
  const size = (n: number, valueSize: number) =>
    base.sizeLine?.(n, valueSize) ?? `${fmtInt(n)} puts (16-byte keys, ${valueSize}-byte values).`;
  return {
    ...base,
    name: `grpc_${base.name}`,
    title: `${base.title}, through gRPC`,
    stores: GRPC_STORES,
    defaultN,
    sizeLine: (n, valueSize) => `${size(n, valueSize)} ${ROWS_NOTE}${note}`,
  };
}

export const grpcPut = overGrpc(put, " Durable: the server runs without `--no-sync`.", (quick) =>
  quick ? 500 : 2_000,
);

export const grpcPutConcurrent = overGrpc(
  putConcurrent,
  " Durable: the server runs without `--no-sync`; the 64 calls share one HTTP/2 connection.",
  (quick) => (quick ? 2_000 : 10_000),
);

export const grpcGetMemtable = overGrpc(
  getMemtable,
  " The server keeps its default 4 MiB write buffer, which n must fit in: the run fails if " +
    "it wrote a table file.",
  (quick) => (quick ? 2_000 : 5_000),
);

/** Variant name of grpc_scan's second row: scans of the whole data set. */
export const FULL_SCAN = "full scan";
/** Full scans per run (each of n rows). */
export const FULL_SCANS = 5;

const grpcScanBase = overGrpc(
  scan,
  " There is no flush call over gRPC: the server is restarted instead, so up to one write " +
    "buffer (4 MiB) of the newest keys is replayed into its memtable. Then, as rows " +
    `\`<store>, ${FULL_SCAN}\`: ${FULL_SCANS} scans of every key (each one call streaming ` +
    "many messages, whose fixed cost is spread over n rows). Per-row streaming overhead " +
    `(Targets): the per-row time of KV Engine over gRPC, ${FULL_SCAN}, minus that of KV ` +
    `Engine in-process, ${FULL_SCAN}.`,
  (quick) => (quick ? 20_000 : 50_000),
);

export const grpcScan: StoreScenario = {
  ...grpcScanBase,
  async run(store, ctx) {
    const out = await grpcScanBase.run(store, ctx);
    const { n, seed } = ctx;
    const full = await timeScans(store.scan, keyTable(0, n), n, n, seed + 5, FULL_SCAN, FULL_SCANS);
    return { ...out, rows: [...out.rows, full] };
  },
};
