/**
 * A load generator process of the cluster benchmarks (forked by ./load.ts, one of several):
 * a client of one member that keeps `inFlight` calls outstanding for a time window and
 * reports what completed inside it. The client (`spec.client`):
 * - "lean": ./lean-grpc-client.ts, HTTP/2 spoken over one node:net socket, the same for
 *   kv-engine and etcd, each with its own messages;
 * - "grpc-js": the standard Node client, @grpc/grpc-js: kv.v1 through KvClient
 *   (src/client), etcd's API (either system) through ./etcd-client.ts (the same library,
 *   one channel).
 * - "etcd-client", "etcd-client-grpc-js", "etcd3": whole etcd client libraries (the
 *   product's EtcdClient on each transport, the `etcd3` npm package), etcd's API only,
 *   put, get and txn (./etcd-client-ops.ts).
 * etcd's API workloads are ./etcd-ops.ts's, the same requests for every client.
 * Python grpcio is driven by ./grpcio-load.py, which speaks the same protocol over stdio.
 *
 * IPC protocol, in this order: the parent sends `{type: "spec", spec}`; the child connects
 * (one untimed call of the workload; a cold spec only connects) and answers
 * `{type: "ready"}`; the parent sends `{type: "go"}` to every child at once; each child runs
 * `warmupMs` then `durationMs` (a cold spec: exactly its first `coldCalls` calls; an open
 * loop: the calls due in that time, LoadSpec.ratePerSec) and
 * answers `{type: "result", result}` (calls completed inside the measured window: count,
 * rows, the latency of each in ns, errors, the child's CPU), then exits. A child whose
 * parent goes away exits.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KvClient } from "../../src/client/index.js";
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
import { EtcdClient } from "./etcd-client.js";
import {
  type EtcdLibraryKind,
  isEtcdLibrary,
  isEtcdLibraryOp,
  libraryOperations,
} from "./etcd-client-ops.js";
import { etcdOperations, type UnaryCall } from "./etcd-ops.js";
import { LeanGrpcClient } from "./lean-grpc-client.js";
import { isLeaseOp, type LeaseOp, leaseOperation } from "./lease-ops.js";

/**
 * kv.v1 knows put, get, scan and mixed; etcd's API also txn and list (./etcd-ops.ts) and
 * the lease and lock workloads (./lease-ops.ts).
 */
export type LoadOp = "put" | "get" | "scan" | "mixed" | "txn" | "list" | LeaseOp;

/** Which API the calls speak: kv.v1 (kv-engine only) or etcd's (both systems). */
export type LoadApi = "kv" | "etcd";

/** The gRPC client a load process drives (see the module comment). */
export type LoadClientKind = "lean" | "grpc-js" | "grpcio" | EtcdLibraryKind;

export interface LoadSpec {
  kind: ClusterKind;
  /** Default: "kv" for kv-engine, "etcd" for etcd. */
  api?: LoadApi;
  /** Default "lean". */
  client?: LoadClientKind;
  /**
   * A cold window: the first `coldCalls` calls after "go" (no untimed call before them,
   * warmupMs and durationMs ignored).
   */
  coldCalls?: number;
  /** Where the calls go (kv-engine: KvClient's endpoint list; etcd: the first). */
  endpoints: string[];
  op: LoadOp;
  inFlight: number;
  warmupMs: number;
  durationMs: number;
  /** Keys are drawn from key_0 .. key_(keySpace-1). */
  keySpace: number;
  /** Rows per scan (a range of that many consecutive keys); a list's page size. */
  scanRows: number;
  valueSize: number;
  seed: number;
  /** Deadline of each call. */
  timeoutMs: number;
  /** keepalive: the leases this process grants before its window and keeps alive. */
  leases?: number;
  /**
   * Open loop: this process's calls per second. Call i is due `i / ratePerSec` s after
   * "go" (warm-up included) and starts then, or, while `inFlight` calls are outstanding,
   * when one ends; its latency counts from when it was due, so that a server's stall shows
   * in every call it delayed (as wrk2 measures). The window holds the calls due inside it,
   * each waited for (up to its deadline) however late it ends; the window's length runs
   * to the last of them (at least `durationMs`), so a system that falls behind the rate
   * shows fewer calls per second than offered.
   */
  ratePerSec?: number;
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
  /** The window's length (a cold window: from "go" to its last call's end). */
  windowSeconds: number;
  /** CPU (user + system) this process used during the window, seconds. */
  clientCpuSeconds?: number;
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
  const draw = { pick, scanStart, key, value };
  if ((spec.api ?? (spec.kind === "etcd" ? "etcd" : "kv")) === "etcd") {
    return etcdApiOperations(spec, draw);
  }
  const op = spec.op;
  if (spec.kind !== "kv-engine" || !isKvOp(op)) {
    throw new Error(`kv.v1 load: ${spec.kind} ${op} is not a kv.v1 workload`);
  }
  if (spec.client === "grpc-js") return grpcJsOperations(spec, draw);
  const c = new LeanGrpcClient(spec.endpoints[0]!, spec.timeoutMs);
  const put: Call = async () => {
    const req = create(PutRequestSchema, { key: key(pick()), value: value(n++) });
    await c.call(`${KV}Put`, toBinary(PutRequestSchema, req));
    return 0;
  };
  const get: Call = async () => {
    const req = create(GetRequestSchema, { key: key(pick()) });
    const [res] = await c.call(`${KV}Get`, toBinary(GetRequestSchema, req));
    fromBinary(GetResponseSchema, res ?? EMPTY);
    return 0;
  };
  const scan: Call = async () => {
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
  const mixed: Call = () => (random() < 0.5 ? put() : get());
  return { call: { put, get, scan, mixed }[op], close: () => c.close() };
}

type KvOp = "put" | "get" | "scan" | "mixed";

function isKvOp(op: LoadOp): op is KvOp {
  return op === "put" || op === "get" || op === "scan" || op === "mixed";
}

/** etcd's API, either system: the same requests through the lean client or grpc-js. */
function etcdApiOperations(spec: LoadSpec, d: Draw): { call: Call; close: () => void } {
  if (isEtcdLibrary(spec.client)) {
    if (!isEtcdLibraryOp(spec.op)) throw new Error(`${spec.client} load: no ${spec.op} workload`);
    return libraryOperations(spec.client, spec.endpoints[0]!, spec.timeoutMs, spec.op, d);
  }
  let unary: UnaryCall;
  let close: () => void;
  let grpcJs: EtcdClient | undefined;
  if (spec.client === "grpc-js") {
    const c = new EtcdClient(spec.endpoints[0]!, spec.timeoutMs);
    grpcJs = c;
    unary = (path, request) =>
      c.unary(path, Buffer.from(request.buffer, request.byteOffset, request.byteLength));
    close = () => c.close();
  } else {
    const c = new LeanGrpcClient(spec.endpoints[0]!, spec.timeoutMs);
    unary = async (path, request) => single(await c.call(path, request));
    close = () => c.close();
  }
  if (isLeaseOp(spec.op)) {
    const c = grpcJs;
    const draw = { ...d, seed: spec.seed };
    const lease = leaseOperation(spec.op, unary, draw, spec.leases ?? 0, c && ((p) => c.bidi(p)));
    return {
      call: lease.call,
      close: () => {
        lease.close();
        close();
      },
    };
  }
  const ops = etcdOperations(unary, d, spec.scanRows);
  const random = rng(spec.seed + 1);
  const mixed: Call = () => (random() < 0.5 ? ops.put() : ops.get());
  return { call: spec.op === "mixed" ? mixed : ops[spec.op], close };
}

/** The workload's key and value choices, shared by the clients. */
interface Draw {
  pick: () => number;
  scanStart: () => number;
  key: (i: number) => Uint8Array;
  value: (n: number) => Uint8Array;
}

/** What the load needs of a grpc-js client of either system. */
interface GrpcJsClient {
  put(key: Uint8Array, value: Uint8Array): Promise<unknown>;
  get(key: Uint8Array): Promise<unknown>;
  /** The rows of [start, end), at most `limit`. */
  rows(start: Uint8Array, end: Uint8Array, limit: number): Promise<number>;
  close(): void;
}

function grpcJsClient(spec: LoadSpec): GrpcJsClient {
  // The standard-client row: KvClient on grpc-js (its default transport is our own HTTP/2).
  const c = new KvClient(spec.endpoints, { timeoutMs: spec.timeoutMs, transport: "grpc-js" });
  return {
    put: (key, value) => c.put(key, value),
    get: (key) => c.get(key),
    rows: async (start, end, limit) => (await c.scanAll(start, end, limit)).length,
    close: () => c.close(),
  };
}

/** kv.v1 through @grpc/grpc-js: KvClient. */
function grpcJsOperations(spec: LoadSpec, d: Draw): { call: Call; close: () => void } {
  const c = grpcJsClient(spec);
  let n = 0;
  const put: Call = async () => {
    await c.put(d.key(d.pick()), d.value(n++));
    return 0;
  };
  const get: Call = async () => {
    await c.get(d.key(d.pick()));
    return 0;
  };
  const scan: Call = () => {
    const s = d.scanStart();
    return c.rows(d.key(s), d.key(s + spec.scanRows), spec.scanRows);
  };
  const random = rng(spec.seed + 1);
  const mixed: Call = () => (random() < 0.5 ? put() : get());
  const op = spec.op;
  if (!isKvOp(op)) throw new Error(`kv.v1 has no ${op}`);
  return { call: { put, get, scan, mixed }[op], close: () => c.close() };
}

const EMPTY = new Uint8Array(0);

function single(messages: Buffer[]): Buffer {
  if (messages.length !== 1) throw new Error(`${messages.length} messages for a unary call`);
  return messages[0]!;
}

/** CPU seconds (user + system) between two process.cpuUsage() samples. */
const cpuSecondsBetween = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) =>
  (b.user - a.user + b.system - a.system) / 1e6;

/** The open loop of LoadSpec.ratePerSec. */
async function runOpenLoop(spec: LoadSpec, call: Call, ratePerSec: number): Promise<LoadResult> {
  const go = nowNs();
  const start = go + spec.warmupMs * 1e6;
  const end = start + spec.durationMs * 1e6;
  const intervalNs = 1e9 / ratePerSec;
  const out: LoadResult = { ops: 0, rows: 0, errors: 0, latenciesNs: [], windowSeconds: 0 };
  let cpu0: NodeJS.CpuUsage | undefined;
  let lastEnd = end;
  let outstanding = 0;
  /** Resolved when a call ends (a slot is free, or the last call ended). */
  let ended: (() => void) | undefined;
  const one = async (due: number) => {
    const inWindow = due >= start;
    try {
      const rows = await call();
      if (inWindow) {
        const t = nowNs();
        out.ops++;
        out.rows += rows;
        out.latenciesNs.push(t - due);
        lastEnd = Math.max(lastEnd, t);
      }
    } catch (err) {
      if (inWindow) out.errors++;
      out.firstError ??= err instanceof Error ? err.message : String(err);
    } finally {
      outstanding--;
      const wake = ended;
      ended = undefined;
      wake?.();
    }
  };
  const callEnded = () => new Promise<void>((resolve) => (ended = resolve));
  for (let i = 0; ; i++) {
    const due = go + i * intervalNs;
    if (due >= end) break;
    if (cpu0 === undefined && due >= start) cpu0 = process.cpuUsage();
    const ahead = due - nowNs();
    // Timers fire at millisecond granularity: calls due within 1 ms start now.
    if (ahead > 1e6) await new Promise((r) => setTimeout(r, Math.floor(ahead / 1e6)));
    while (outstanding >= spec.inFlight) await callEnded();
    outstanding++;
    void one(due);
  }
  const cpu1 = process.cpuUsage();
  while (outstanding > 0) await callEnded();
  out.clientCpuSeconds = cpuSecondsBetween(cpu0 ?? cpu1, cpu1);
  out.windowSeconds = (lastEnd - start) / 1e9;
  return out;
}

async function run(spec: LoadSpec, call: Call): Promise<LoadResult> {
  if (spec.ratePerSec !== undefined) return runOpenLoop(spec, call, spec.ratePerSec);
  const cold = spec.coldCalls !== undefined;
  const limit = spec.coldCalls ?? Infinity;
  const go = nowNs();
  const start = cold ? go : go + spec.warmupMs * 1e6;
  const end = cold ? Infinity : start + spec.durationMs * 1e6;
  const out: LoadResult = { ops: 0, rows: 0, errors: 0, latenciesNs: [], windowSeconds: 0 };
  let cpu0 = cold ? process.cpuUsage() : undefined;
  let cpu1: NodeJS.CpuUsage | undefined;
  const windowTimers = cold
    ? []
    : [
        setTimeout(() => {
          cpu0 = process.cpuUsage();
        }, spec.warmupMs),
        setTimeout(() => {
          cpu1 = process.cpuUsage();
        }, spec.warmupMs + spec.durationMs),
      ];
  let started = 0;
  const slot = async () => {
    for (;;) {
      const t0 = nowNs();
      if (t0 >= end || started >= limit) return;
      started++;
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
  for (const t of windowTimers) clearTimeout(t);
  cpu1 ??= process.cpuUsage();
  if (cpu0 !== undefined) out.clientCpuSeconds = cpuSecondsBetween(cpu0, cpu1);
  out.windowSeconds = cold ? (nowNs() - go) / 1e9 : spec.durationMs / 1000;
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
    // Connect: one untimed call of the workload (a cold window starts with the first call).
    (spec.coldCalls === undefined ? ops.call() : Promise.resolve(0)).then(
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
