/**
 * Load from several client processes: `procs` children of the benchmark's worker, the
 * calls in flight split among them as evenly as possible, all started together once every
 * one is connected, measured over the same window. The figure is the sum of their calls
 * (or scanned rows) over the window; the latency percentiles are over every call of every
 * process. The children are ./load-client.ts (forked; the lean client or grpc-js, IPC
 * messages) or ./grpcio-load.py (Python grpcio, the same messages as JSON lines on stdio).
 */
import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import type {
  FromChild,
  LoadClientKind,
  LoadOp,
  LoadResult,
  LoadSpec,
  ToChild,
} from "./load-client.js";

const LOAD_CLIENT = fileURLToPath(new URL("./load-client.js", import.meta.url));
/** The grpcio driver, beside the compiled files' sources (dist/bench/cluster -> bench/cluster). */
const GRPCIO_LOAD = fileURLToPath(
  new URL("../../../bench/cluster/grpcio-load.py", import.meta.url),
);
/** The Python that has python3-grpcio (Debian's package installs it for this one). */
export const PYTHON = "/usr/bin/python3";
/** Time a child gets to connect, and to report after its window ended. */
const CHILD_SLACK_MS = 30_000;

/** The parts of a LoadSpec shared by every process of a phase. */
export type LoadCommon = Omit<
  LoadSpec,
  "op" | "inFlight" | "seed" | "client" | "coldCalls" | "ratePerSec"
>;

export interface LoadPhase {
  /** The row's label ("" for a scenario's first row). */
  label: string;
  op: LoadOp;
  procs: number;
  /** Calls in flight in all, split among the processes. */
  inFlight: number;
  /** Default "lean". */
  client?: LoadClientKind;
  /** A cold window of this many calls (LoadSpec.coldCalls; split among the processes). */
  coldCalls?: number;
  /**
   * An open loop at this many calls per second in all (LoadSpec.ratePerSec, split evenly
   * among the processes); `inFlight` is then the most calls outstanding.
   */
  ratePerSec?: number;
}

/** Why grpcio rows cannot run here, or undefined when PYTHON imports grpc. */
export function grpcioMissing(): string | undefined {
  try {
    execFileSync(PYTHON, ["-c", "import grpc"], { stdio: "ignore" });
    return undefined;
  } catch {
    return `${PYTHON} has no grpc module (apt-get install python3-grpcio)`;
  }
}

/** Counts of a LoadPhase's Measurement.values. */
export const LOAD_PROCS = "procs";
export const LOAD_IN_FLIGHT = "inFlight";
/** An open loop's offered calls per second (LoadPhase.ratePerSec). */
export const LOAD_RATE = "ratePerSec";
export const LOAD_ERRORS = "errors";
/** Server CPU (all members, user + system) per call in the window, µs (with `cpuSeconds`). */
export const LOAD_SERVER_CPU_US = "serverCpuUsPerCall";
/** The client processes' CPU per call in the window, µs. */
export const LOAD_CLIENT_CPU_US = "clientCpuUsPerCall";

interface LoadChild {
  child: ChildProcess;
  send: (m: ToChild) => void;
  next: (withinMs: number) => Promise<FromChild>;
}

const failedWith = (error: string): FromChild => ({ type: "failed", error });

/** A Node load process (IPC), or the grpcio one (JSON lines on stdin and stdout). */
function startChild(spec: LoadSpec): LoadChild {
  if (spec.client === "grpcio") {
    const child = spawn(PYTHON, [GRPCIO_LOAD], { stdio: ["pipe", "pipe", "inherit"] });
    const lines = createInterface({ input: child.stdout! });
    const send = (m: ToChild) => {
      child.stdin!.write(`${JSON.stringify(m.type === "spec" ? m.spec : m)}\n`);
    };
    child.stdin!.on("error", () => {});
    const got = receiver<FromChild>(
      child,
      (deliver) =>
        lines.on("line", (line) => {
          try {
            deliver(JSON.parse(line) as FromChild);
          } catch {
            deliver({ type: "failed", error: `grpcio load client: ${line.slice(0, 200)}` });
          }
        }),
      failedWith,
    );
    send({ type: "spec", spec });
    return { child, send, next: got };
  }
  const child = fork(LOAD_CLIENT, [], {
    execArgv: process.execArgv,
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const next = receiver<FromChild>(
    child,
    (deliver) => child.on("message", (m: FromChild) => deliver(m)),
    failedWith,
  );
  const send = (m: ToChild) => child.send(m);
  send({ type: "spec", spec });
  return { child, send, next };
}

/**
 * The `next(withinMs)` of a child whose messages `listen` hands to its `deliver`; once the
 * child has closed, `next` answers `ended(why)`.
 */
export function receiver<M>(
  child: ChildProcess,
  listen: (deliver: (m: M) => void) => void,
  ended: (why: string) => M,
): (withinMs: number) => Promise<M> {
  const queue: M[] = [];
  const waiting: ((m: M) => void)[] = [];
  const deliver = (m: M) => {
    const w = waiting.shift();
    if (w === undefined) queue.push(m);
    else w(m);
  };
  listen(deliver);
  // "close", not "exit": it comes once the IPC channel (or stdout) is closed too, so a
  // result the child sent just before it exited (megabytes of latencies) has been
  // delivered first.
  child.once("close", (code, signal) => deliver(ended(`load client ended (${signal ?? code})`)));
  return (withinMs: number) =>
    new Promise<M>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`load client: no answer within ${withinMs} ms`)),
        withinMs,
      );
      const got = (m: M) => {
        clearTimeout(timer);
        resolve(m);
      };
      const m = queue.shift();
      if (m === undefined) waiting.push(got);
      else got(m);
    });
}

/**
 * Runs one phase; resolves with its row. Kills its children whatever happens. With
 * `cpuSeconds` (the servers' CPU so far), samples it when the window opens and closes (by
 * this process's timers) and reports the servers' CPU per call of the window.
 */
export async function runLoad(
  common: LoadCommon,
  phase: LoadPhase,
  seed: number,
  cpuSeconds?: () => number,
): Promise<Measurement> {
  const share = (total: number, i: number) =>
    Math.floor(total / phase.procs) + (i < total % phase.procs ? 1 : 0);
  const cold = phase.coldCalls !== undefined;
  const children = Array.from({ length: phase.procs }, (_, i) =>
    startChild({
      ...common,
      op: phase.op,
      inFlight: share(phase.inFlight, i),
      seed: seed * 1000 + i + 1,
      ...(phase.client === undefined ? {} : { client: phase.client }),
      ...(phase.coldCalls === undefined ? {} : { coldCalls: share(phase.coldCalls, i) }),
      ...(phase.ratePerSec === undefined ? {} : { ratePerSec: phase.ratePerSec / phase.procs }),
    }),
  );
  try {
    const expect = async (c: LoadChild, type: FromChild["type"], withinMs: number) => {
      const m = await c.next(withinMs);
      if (m.type === "failed") throw new Error(m.error);
      if (m.type !== type) throw new Error(`load client: expected ${type}, got ${m.type}`);
      return m;
    };
    await Promise.all(children.map((c) => expect(c, "ready", CHILD_SLACK_MS)));
    // A cold window's server CPU: from "go" to the last result.
    let cpu0 = cold ? cpuSeconds?.() : undefined;
    let cpu1: number | undefined;
    for (const c of children) c.send({ type: "go" });
    const timers =
      cpuSeconds === undefined || cold
        ? []
        : [
            setTimeout(() => {
              cpu0 = cpuSeconds();
            }, common.warmupMs),
            setTimeout(() => {
              cpu1 = cpuSeconds();
            }, common.warmupMs + common.durationMs),
          ];
    const results: LoadResult[] = [];
    const within = cold
      ? common.timeoutMs * (phase.coldCalls ?? 1) + CHILD_SLACK_MS
      : common.warmupMs + common.durationMs + CHILD_SLACK_MS;
    try {
      for (const c of children) {
        const m = await expect(c, "result", within);
        if (m.type === "result") results.push(m.result);
      }
    } finally {
      for (const t of timers) clearTimeout(t);
    }
    // A cold window ends with its last result; a timed one when its timer fired (or now,
    // when a busy event loop ran the timer late).
    if (cold || cpu1 === undefined) cpu1 = cpuSeconds?.();
    const ops = results.reduce((a, r) => a + r.ops, 0);
    const rows = results.reduce((a, r) => a + r.rows, 0);
    const errors = results.reduce((a, r) => a + r.errors, 0);
    // A cold window, and an open loop that fell behind, last until their last call ended.
    const seconds =
      cold || phase.ratePerSec !== undefined
        ? Math.max(...results.map((r) => r.windowSeconds))
        : common.durationMs / 1000;
    const latencies = new Float64Array(ops);
    let at = 0;
    for (const r of results) for (const l of r.latenciesNs) latencies[at++] = l;
    const count = phase.op === "scan" ? rows : ops;
    const firstError = results.find((r) => r.firstError !== undefined)?.firstError;
    const cpuUs =
      cpu0 === undefined || cpu1 === undefined || ops === 0
        ? undefined
        : ((cpu1 - cpu0) * 1e6) / ops;
    const clientCpu = results.map((r) => r.clientCpuSeconds);
    const clientUs =
      ops === 0 || clientCpu.some((x) => x === undefined)
        ? undefined
        : (clientCpu.reduce((a: number, b) => a + (b ?? 0), 0) * 1e6) / ops;
    return {
      label: phase.label,
      ops: count,
      seconds,
      opsPerSec: count / seconds,
      latency: summarize(latencies),
      description:
        `${phase.client ?? "lean"} client, ` +
        `${phase.procs} client process${phase.procs === 1 ? "" : "es"}, ` +
        (phase.ratePerSec === undefined
          ? `${phase.inFlight} in flight`
          : `open loop at ${phase.ratePerSec.toFixed(0)} calls/s (at most ${phase.inFlight} in flight)`) +
        (cold ? `, the first ${phase.coldCalls} calls` : "") +
        (cpuUs === undefined ? "" : `, server CPU ${cpuUs.toFixed(0)} µs per call (all members)`) +
        (clientUs === undefined ? "" : `, client CPU ${clientUs.toFixed(0)} µs per call`) +
        (errors === 0 ? "" : `, ${errors} failed calls (first: ${firstError})`),
      values: {
        [LOAD_PROCS]: phase.procs,
        [LOAD_IN_FLIGHT]: phase.inFlight,
        ...(phase.ratePerSec === undefined ? {} : { [LOAD_RATE]: phase.ratePerSec }),
        [LOAD_ERRORS]: errors,
        ...(cpuUs === undefined ? {} : { [LOAD_SERVER_CPU_US]: cpuUs }),
        ...(clientUs === undefined ? {} : { [LOAD_CLIENT_CPU_US]: clientUs }),
      },
    };
  } finally {
    for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
  }
}
