/**
 * A load generator process of the cluster benchmarks (forked by ./load.ts, one of several):
 * a client of one member (./lean-grpc-client.ts: HTTP/2 spoken over one node:net socket,
 * the same for kv-engine and etcd, each with its own messages) that keeps `inFlight` calls
 * outstanding for a time window and reports what completed inside it.
 *
 * IPC protocol, in this order: the parent sends `{type: "spec", spec}`; the child connects
 * (one untimed call of the workload) and answers `{type: "ready"}`; the parent sends `{type: "go"}` to every
 * child at once; each child runs `warmupMs` then `durationMs` and answers
 * `{type: "result", result}` (calls completed inside the measured window: count, rows, the
 * latency of each in ns, errors), then exits. A child whose parent goes away exits.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  GetRequestSchema,
  GetResponseSchema,
  PutRequestSchema,
  ScanRequestSchema,
} from "../../src/proto/gen/kv/v1/kv_pb.js";
import { decodeScanResponse } from "../../src/proto/scan-codec.js";
import { nowNs } from "../lib/stats.js";
import { formatKey, rng, valueSource } from "../lib/workload.js";
import type { ClusterKind } from "./cluster.js";
import {
  decodeRange,
  decodeResponseHeader,
  ETCD_PUT,
  ETCD_RANGE,
  encodePut,
  encodeRange,
} from "./etcd-codec.js";
import { LeanGrpcClient } from "./lean-grpc-client.js";

export type LoadOp = "put" | "get" | "scan" | "mixed";

export interface LoadSpec {
  kind: ClusterKind;
  /** Where the calls go (kv-engine: KvClient's endpoint list; etcd: the first). */
  endpoints: string[];
  op: LoadOp;
  inFlight: number;
  warmupMs: number;
  durationMs: number;
  /** Keys are drawn from key_0 .. key_(keySpace-1). */
  keySpace: number;
  /** Rows per scan (a range of that many consecutive keys). */
  scanRows: number;
  valueSize: number;
  seed: number;
  /** Deadline of each call. */
  timeoutMs: number;
}

export interface LoadResult {
  /** Calls completed inside the window. */
  ops: number;
  /** Rows returned by the scans inside the window. */
  rows: number;
  errors: number;
  firstError?: string;
  /** Latency of each call completed inside the window, ns. */
  latenciesNs: number[];
  windowSeconds: number;
}

export type ToChild = { type: "spec"; spec: LoadSpec } | { type: "go" };
export type FromChild =
  | { type: "ready" }
  | { type: "result"; result: LoadResult }
  | { type: "failed"; error: string };

const encoder = new TextEncoder();

type Call = () => Promise<number>;

const KV = "/kv.v1.KvService/";

function operations(spec: LoadSpec): { call: Call; close: () => void } {
  const random = rng(spec.seed);
  const value = valueSource(spec.valueSize, spec.seed);
  let n = 0;
  const key = (i: number) => encoder.encode(formatKey(i));
  const pick = () => Math.floor(random() * spec.keySpace);
  const scanStart = () => Math.floor(random() * Math.max(1, spec.keySpace - spec.scanRows));
  const c = new LeanGrpcClient(spec.endpoints[0]!, spec.timeoutMs);
  let put: Call;
  let get: Call;
  let scan: Call;
  if (spec.kind === "kv-engine") {
    put = async () => {
      const req = create(PutRequestSchema, { key: key(pick()), value: value(n++) });
      await c.call(`${KV}Put`, toBinary(PutRequestSchema, req));
      return 0;
    };
    get = async () => {
      const req = create(GetRequestSchema, { key: key(pick()) });
      const [res] = await c.call(`${KV}Get`, toBinary(GetRequestSchema, req));
      fromBinary(GetResponseSchema, res ?? EMPTY);
      return 0;
    };
    scan = async () => {
      const s = scanStart();
      const req = create(ScanRequestSchema, {
        startKey: key(s),
        endKey: key(s + spec.scanRows),
        limit: BigInt(spec.scanRows),
      });
      let rows = 0;
      for (const m of await c.call(`${KV}Scan`, toBinary(ScanRequestSchema, req)))
        rows += decodeScanResponse(m).entries.length;
      return rows;
    };
  } else {
    put = async () => {
      decodeResponseHeader(single(await c.call(ETCD_PUT, encodePut(key(pick()), value(n++)))));
      return 0;
    };
    get = async () => {
      decodeRange(single(await c.call(ETCD_RANGE, encodeRange(key(pick()), undefined, 0, false))));
      return 0;
    };
    scan = async () => {
      const s = scanStart();
      const req = encodeRange(key(s), key(s + spec.scanRows), spec.scanRows, false);
      return decodeRange(single(await c.call(ETCD_RANGE, req))).kvs.length;
    };
  }
  const mixed: Call = () => (random() < 0.5 ? put() : get());
  return { call: { put, get, scan, mixed }[spec.op], close: () => c.close() };
}

const EMPTY = new Uint8Array(0);

function single(messages: Buffer[]): Buffer {
  if (messages.length !== 1) throw new Error(`${messages.length} messages for a unary call`);
  return messages[0]!;
}

async function run(spec: LoadSpec, call: Call): Promise<LoadResult> {
  const start = nowNs() + spec.warmupMs * 1e6;
  const end = start + spec.durationMs * 1e6;
  const out: LoadResult = { ops: 0, rows: 0, errors: 0, latenciesNs: [], windowSeconds: 0 };
  const slot = async () => {
    for (;;) {
      const t0 = nowNs();
      if (t0 >= end) return;
      try {
        const rows = await call();
        const t1 = nowNs();
        if (t1 >= start && t1 < end) {
          out.ops++;
          out.rows += rows;
          out.latenciesNs.push(t1 - t0);
        }
      } catch (err) {
        out.errors++;
        out.firstError ??= err instanceof Error ? err.message : String(err);
        // A failing cluster must not become a busy loop.
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  await Promise.all(Array.from({ length: spec.inFlight }, slot));
  out.windowSeconds = spec.durationMs / 1000;
  return out;
}

function send(m: FromChild): void {
  process.send?.(m);
}

let spec: LoadSpec | undefined;
let ops: ReturnType<typeof operations> | undefined;
process.on("disconnect", () => process.exit(0));
process.on("message", (m: ToChild) => {
  if (m.type === "spec") {
    spec = m.spec;
    ops = operations(spec);
    // Connect: one untimed call of the workload.
    ops.call().then(
      () => send({ type: "ready" }),
      (err: unknown) => send({ type: "failed", error: String(err) }),
    );
    return;
  }
  if (m.type === "go" && spec !== undefined && ops !== undefined) {
    const o = ops;
    run(spec, o.call).then(
      (result) => {
        o.close();
        // Disconnect only once the result is written: a long run's result is megabytes,
        // and a disconnect right after send() dropped it (the parent saw the child exit).
        process.send?.({ type: "result", result } satisfies FromChild, () =>
          process.disconnect?.(),
        );
      },
      (err: unknown) => send({ type: "failed", error: String(err) }),
    );
  }
});
