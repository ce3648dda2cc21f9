/**
 * `grpc_transport`: the server's two transports on the same service, in the same run:
 * `kv-engine serve --transport lean` (the default) against `--transport grpc-js`, each a
 * child process, called from this process over loopback through each of three clients:
 * KvClient on its default transport (lean: our own HTTP/2 client path,
 * src/grpc/grpc-client.ts), KvClient on grpc-js (`transport: "grpc-js"`, kept for one
 * release), and the bare client of the cluster benchmarks (../cluster/lean-grpc-client.ts:
 * the same HTTP/2 client path without KvClient's retries and sessions, protobuf-es
 * messages). A server's CPU per call depends on its client: grpc-js's client sends a call
 * as several writes and more flow-control frames, each a read and a wake-up for the
 * server, so the bare client's rows show the server's own cost and KvClient's show it under
 * our client. The two KvClient rows give the client's own CPU per call on each transport
 * (KvClient on grpc-js: Get, Put and Write only, no durable Put, no Scan).
 *
 * Rows, for each transport: Get of a memtable key, Put unsynced (`--no-sync` server), Put
 * durable, and Write of a 10-put batch (unsynced), each at 1 and 64 calls in flight; then
 * full Scans of n rows (per-row cost). Each row carries the server's CPU per call (or per
 * row): the time its threads ran (/proc/<pid>/task/<tid>/schedstat, nanoseconds) over
 * the measured calls and until it is idle again (the flushes and compactions they caused),
 * divided by the calls; and the client's, this process's
 * (process.cpuUsage(), all threads: KvClient and grpc-js's channel are all it runs), the
 * same way. Transports alternate within each measurement (lean, grpc-js, lean, grpc-js)
 * and the better of the two runs of each is kept, so that drift on a shared machine hits
 * both alike.
 *
 * Targets (bench/report/results.ts, docs/server.md, docs/client.md): lean server CPU per
 * unary call <= 0.5x grpc-js's; serial latency (p50 at 1 in flight) lower; Scan per-row
 * CPU no worse; KvClient's own CPU per call on lean <= 0.3x on grpc-js (Get, Put, Write at
 * 1 and 64 in flight, against the lean server), and its serial latency lower.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { KvClient } from "../../src/client/index.js";
import {
  GetRequestSchema,
  GetResponseSchema,
  PutRequestSchema,
  ScanRequestSchema,
  WriteRequestSchema,
} from "../../src/proto/gen/kv/v1/kv_pb.js";
import { decodeScanResponse } from "../../src/proto/scan-codec.js";
import { LeanGrpcClient } from "../cluster/lean-grpc-client.js";
import { nowNs, summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import type { LimitScenario } from "./scenario.js";

const CLI = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));
const TRANSPORTS = ["lean", "grpc-js"] as const;
type Transport = (typeof TRANSPORTS)[number];
const WARM_UP_CALLS = 2_000;
/** Row value: server CPU per call (per row for Scan), µs. */
export const SERVER_CPU_US = "serverCpuUs";
/** Row value: client CPU per call (per row for Scan), µs. */
export const CLIENT_CPU_US = "clientCpuUs";
/** The unary operations of the rows, in order (`<transport>, <op>, <k> in flight`). */
export const TRANSPORT_OPS = ["get", "put", "put durable", "write 10"] as const;
export const TRANSPORT_SCAN = "scan (per row)";
/**
 * The load's clients; rows of the bare one carry BARE_CLIENT at the end of their label,
 * those of KvClient on grpc-js GRPC_JS_CLIENT.
 */
export const TRANSPORT_CLIENTS = ["KvClient", "KvClient grpc-js", "bare"] as const;
export type TransportClient = (typeof TRANSPORT_CLIENTS)[number];
export const BARE_CLIENT = "bare client";
export const GRPC_JS_CLIENT = "KvClient on grpc-js";
/** The operations measured through KvClient on grpc-js. */
export const GRPC_JS_CLIENT_OPS = ["get", "put", "write 10"] as const;
export const transportRow = (
  transport: string,
  op: string,
  inFlight?: number,
  client: TransportClient = "KvClient",
): string =>
  (inFlight === undefined ? `${transport}, ${op}` : `${transport}, ${op}, ${inFlight} in flight`) +
  (client === "bare"
    ? `, ${BARE_CLIENT}`
    : client === "KvClient grpc-js"
      ? `, ${GRPC_JS_CLIENT}`
      : "");

/** The calls of the rows, through one of the clients. */
interface Load {
  get(key: string): Promise<unknown>;
  put(key: string, value: Uint8Array): Promise<unknown>;
  write(puts: { key: string; value: Uint8Array }[]): Promise<unknown>;
  /** A full scan of [start, end); resolves with the rows it returned. */
  scan(start: string, end: string): Promise<number>;
  close(): void;
}

function kvClientLoad(c: KvClient): Load {
  return {
    get: (key) => c.get(key),
    put: (key, value) => c.put(key, value),
    write: (puts) => c.write(puts.map((p) => ({ type: "put" as const, ...p }))),
    scan: async (start, end) => (await c.scanAll(start, end)).length,
    close: () => c.close(),
  };
}

const KV = "/kv.v1.KvService/";
const utf8 = (s: string) => Buffer.from(s, "utf8");

/** The bare client: requests encoded and responses decoded with protobuf-es, as KvClient. */
function bareLoad(address: string): Load {
  const c = new LeanGrpcClient(address, 60_000);
  const one = (m: Buffer[]): Buffer => {
    if (m.length !== 1) throw new Error(`${m.length} response messages`);
    return m[0]!;
  };
  return {
    get: async (key) =>
      fromBinary(
        GetResponseSchema,
        one(
          await c.call(
            `${KV}Get`,
            toBinary(GetRequestSchema, create(GetRequestSchema, { key: utf8(key) })),
          ),
        ),
      ),
    put: async (key, value) =>
      c.call(
        `${KV}Put`,
        toBinary(PutRequestSchema, create(PutRequestSchema, { key: utf8(key), value })),
      ),
    write: async (puts) =>
      c.call(
        `${KV}Write`,
        toBinary(
          WriteRequestSchema,
          create(WriteRequestSchema, {
            mutations: puts.map((p) => ({
              op: { case: "put" as const, value: { key: utf8(p.key), value: p.value } },
            })),
          }),
        ),
      ),
    scan: async (start, end) => {
      const req = create(ScanRequestSchema, { startKey: utf8(start), endKey: utf8(end) });
      let rows = 0;
      for (const m of await c.call(`${KV}Scan`, toBinary(ScanRequestSchema, req)))
        rows += decodeScanResponse(m).entries.length;
      return rows;
    },
    close: () => c.close(),
  };
}

interface Served {
  child: ChildProcess;
  address: string;
  client: KvClient;
  /** KvClient on grpc-js (its connection opened on first use). */
  grpcJsClient: KvClient;
  /** The bare client's load (its connection opened on first use). */
  bare: Load;
}

async function serve(dir: string, transport: Transport, sync: boolean): Promise<Served> {
  fs.mkdirSync(dir, { recursive: true });
  const args = [CLI, "serve", "--data-dir", dir, "--port", "0", "--transport", transport];
  if (!sync) args.push("--no-sync");
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "ignore"] });
  const address = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /listening on (\S+)\n/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
  const client = new KvClient(address, { timeoutMs: 60_000 });
  await client.get("connect");
  const grpcJsClient = new KvClient(address, { timeoutMs: 60_000, transport: "grpc-js" });
  return { child, address, client, grpcJsClient, bare: bareLoad(address) };
}

async function stop(s: Served): Promise<void> {
  s.client.close();
  s.grpcJsClient.close();
  s.bare.close();
  const exited = new Promise((r) => s.child.once("exit", r));
  s.child.kill("SIGTERM");
  await exited;
}

/**
 * Seconds of CPU the process's threads have run, from each thread's schedstat (nanoseconds,
 * where /proc/<pid>/stat counts 10 ms ticks: a serial row of a second or less would be
 * measured to ~5%). The server's threads live as long as it does, so none is missed.
 */
function cpuSeconds(pid: number): number {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return ns / 1e9;
}

/**
 * Resolves once the server is idle: less than 1 ms of CPU in a 100 ms window (an idle
 * server uses ~0.15), i.e. its background flushes and compactions are done; at most 20 s.
 */
async function settled(pid: number): Promise<void> {
  const until = Date.now() + 20_000;
  let last = cpuSeconds(pid);
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    const now = cpuSeconds(pid);
    if (now - last < 0.001) return;
    last = now;
  }
}

interface Run {
  row: Measurement;
  cpuUsPerCall: number;
  clientCpuUsPerCall: number;
}

const clientCpuSeconds = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function measure(
  s: Served,
  label: string,
  calls: number,
  inFlight: number,
  call: (i: number) => Promise<unknown>,
): Promise<Run> {
  // Warm-up: each row's own calls first, so that its code is optimised on both transports.
  for (let i = 0; i < Math.min(WARM_UP_CALLS, calls); i++) await call(i);
  const lat = new Float64Array(calls);
  let next = 0;
  const pid = s.child.pid ?? 0;
  await settled(pid);
  const cpu0 = cpuSeconds(pid);
  const client0 = clientCpuSeconds();
  const t0 = nowNs();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < calls; i = next++) {
        const t = nowNs();
        await call(i);
        lat[i] = nowNs() - t;
      }
    }),
  );
  const seconds = (nowNs() - t0) / 1e9;
  const clientCpuUsPerCall = ((clientCpuSeconds() - client0) * 1e6) / calls;
  // The flushes and compactions the calls caused are part of their cost.
  await settled(pid);
  const cpuUsPerCall = ((cpuSeconds(pid) - cpu0) * 1e6) / calls;
  return {
    cpuUsPerCall,
    clientCpuUsPerCall,
    row: {
      label,
      ops: calls,
      seconds,
      opsPerSec: calls / seconds,
      latency: summarize(lat),
      description: `CPU per call: server ${cpuUsPerCall.toFixed(1)} µs, client ${clientCpuUsPerCall.toFixed(1)} µs`,
    },
  };
}

export const grpcTransport: LimitScenario = {
  kind: "limit",
  name: "grpc_transport",
  title: "gRPC transports: the lean path vs grpc-js's server, same service, same run",
  defaultN: (quick) => (quick ? 1_000 : 5_000),
  sizeLine: (n) =>
    "Each row through KvClient (lean), KvClient on grpc-js (Get, Put, Write) and the bare client; " +
    `${n.toLocaleString("en-US")} calls per row at 64 in flight, half of that at 1 ` +
    `(a fifth for durable Puts), after ${WARM_UP_CALLS} unmeasured calls of the same kind; ` +
    `Scan: 20 full scans (after 20 unmeasured) of ${n.toLocaleString("en-US")} rows of 100 bytes; two alternated ` +
    "runs per row, the one with less server CPU kept. Server CPU from the schedstat of each " +
    "of its threads (/proc/<pid>/task/<tid>/schedstat, ns), client CPU from " +
    "process.cpuUsage(), over the measured calls and until the server is idle again (the " +
    "flushes and compactions they caused)",
  async run(ctx) {
    const { dir, n } = ctx;
    const value = Buffer.alloc(100, 0x61);
    const rows: Measurement[] = [];
    const extra: Record<string, number> = {};
    const best = new Map<string, Run>();
    const keep = (r: Run) => {
      const prev = best.get(r.row.label);
      if (prev === undefined || r.cpuUsPerCall < prev.cpuUsPerCall) best.set(r.row.label, r);
    };
    const key = (i: number) => `key_${String(i % 10_000).padStart(12, "0")}`;
    const ops: [
      (typeof TRANSPORT_OPS)[number],
      boolean,
      (c: Load, i: number) => Promise<unknown>,
    ][] = [
      ["get", false, (c) => c.get("key_000000000042")],
      ["put", false, (c, i) => c.put(key(i), value)],
      ["put durable", true, (c, i) => c.put(key(i), value)],
      [
        "write 10",
        false,
        (c, i) => c.write(Array.from({ length: 10 }, (_, j) => ({ key: key(i * 10 + j), value }))),
      ],
    ];
    for (const sync of [false, true]) {
      for (let round = 0; round < 2; round++) {
        for (const transport of TRANSPORTS) {
          const s = await serve(join(dir, `${transport}-${sync}-${round}`), transport, sync);
          try {
            await s.client.put("key_000000000042", value);
            if (!sync) {
              const batch = Array.from({ length: n }, (_, i) => ({
                type: "put" as const,
                key: `scan_${String(i).padStart(11, "0")}`,
                value,
              }));
              for (let i = 0; i < batch.length; i += 1000)
                await s.client.write(batch.slice(i, i + 1000));
            }
            for (const clientKind of TRANSPORT_CLIENTS) {
              const onGrpcJs = clientKind === "KvClient grpc-js";
              const load =
                clientKind === "bare" ? s.bare : kvClientLoad(onGrpcJs ? s.grpcJsClient : s.client);
              for (const [name, durable, op] of ops) {
                if (durable !== sync) continue;
                if (onGrpcJs && !(GRPC_JS_CLIENT_OPS as readonly string[]).includes(name)) continue;
                for (const inFlight of [1, 64]) {
                  const serial = Math.max(100, Math.floor(n / (durable ? 5 : 2)));
                  const calls = inFlight === 1 ? serial : n;
                  keep(
                    await measure(
                      s,
                      transportRow(transport, name, inFlight, clientKind),
                      calls,
                      inFlight,
                      (i) => op(load, i),
                    ),
                  );
                }
              }
              if (sync || onGrpcJs) continue;
              const scans = 20;
              const r = await measure(
                s,
                transportRow(transport, TRANSPORT_SCAN, undefined, clientKind),
                scans,
                1,
                async () => {
                  const rows = await load.scan("scan_", "scan`");
                  if (rows !== n) throw new Error(`a scan returned ${rows} rows, not ${n}`);
                },
              );
              const perRow = r.cpuUsPerCall / n;
              const clientPerRow = r.clientCpuUsPerCall / n;
              r.row = {
                ...r.row,
                ops: scans * n,
                opsPerSec: (scans * n) / r.row.seconds,
                description: `CPU per row: server ${perRow.toFixed(3)} µs, client ${clientPerRow.toFixed(3)} µs`,
              };
              r.cpuUsPerCall = perRow;
              r.clientCpuUsPerCall = clientPerRow;
              keep(r);
            }
          } finally {
            await stop(s);
          }
        }
      }
    }
    for (const r of best.values()) {
      rows.push({
        ...r.row,
        values: { [SERVER_CPU_US]: r.cpuUsPerCall, [CLIENT_CPU_US]: r.clientCpuUsPerCall },
      });
      extra[`cpuUs ${r.row.label}`] = r.cpuUsPerCall;
    }
    rows.sort((a, b) => a.label.localeCompare(b.label));
    return { rows, extra };
  },
};
