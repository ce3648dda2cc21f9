/**
 * Load from several client processes (./load-client.ts): `procs` children forked from the
 * benchmark's worker, the calls in flight split among them as evenly as possible, all
 * started together once every one is connected, measured over the same window. The
 * figure is the sum of their calls (or scanned rows) over the window; the latency
 * percentiles are over every call of every process.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { summarize } from "../lib/stats.js";
import type { Measurement } from "../lib/types.js";
import type { FromChild, LoadOp, LoadResult, LoadSpec, ToChild } from "./load-client.js";

const LOAD_CLIENT = fileURLToPath(new URL("./load-client.js", import.meta.url));
/** Time a child gets to connect, and to report after its window ended. */
const CHILD_SLACK_MS = 30_000;

/** The parts of a LoadSpec shared by every process of a phase. */
export type LoadCommon = Omit<LoadSpec, "op" | "inFlight" | "seed">;

export interface LoadPhase {
  /** The row's label ("" for a scenario's first row). */
  label: string;
  op: LoadOp;
  procs: number;
  /** Calls in flight in all, split among the processes. */
  inFlight: number;
}

/** Counts of a LoadPhase's Measurement.values. */
export const LOAD_PROCS = "procs";
export const LOAD_IN_FLIGHT = "inFlight";
export const LOAD_ERRORS = "errors";
/** Server CPU (all members, user + system) per call in the window, µs (with `cpuSeconds`). */
export const LOAD_SERVER_CPU_US = "serverCpuUsPerCall";

function startChild(spec: LoadSpec): {
  child: ChildProcess;
  next: (withinMs: number) => Promise<FromChild>;
} {
  const child = fork(LOAD_CLIENT, [], {
    execArgv: process.execArgv,
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const queue: FromChild[] = [];
  const waiting: ((m: FromChild) => void)[] = [];
  const deliver = (m: FromChild) => {
    const w = waiting.shift();
    if (w === undefined) queue.push(m);
    else w(m);
  };
  child.on("message", (m: FromChild) => deliver(m));
  // "close", not "exit": it comes once the IPC channel is closed too, so a result the child
  // sent just before it exited (megabytes of latencies) has been delivered first.
  child.once("close", (code, signal) =>
    deliver({ type: "failed", error: `load client ended (${signal ?? code})` }),
  );
  child.send({ type: "spec", spec } satisfies ToChild);
  const next = (withinMs: number) =>
    new Promise<FromChild>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`load client: no answer within ${withinMs} ms`)),
        withinMs,
      );
      const got = (m: FromChild) => {
        clearTimeout(timer);
        resolve(m);
      };
      const m = queue.shift();
      if (m === undefined) waiting.push(got);
      else got(m);
    });
  return { child, next };
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
  const children = Array.from({ length: phase.procs }, (_, i) => {
    const inFlight =
      Math.floor(phase.inFlight / phase.procs) + (i < phase.inFlight % phase.procs ? 1 : 0);
    return startChild({ ...common, op: phase.op, inFlight, seed: seed * 1000 + i + 1 });
  });
  try {
    const expect = async (
      c: (typeof children)[number],
      type: FromChild["type"],
      withinMs: number,
    ) => {
      const m = await c.next(withinMs);
      if (m.type === "failed") throw new Error(m.error);
      if (m.type !== type) throw new Error(`load client: expected ${type}, got ${m.type}`);
      return m;
    };
    await Promise.all(children.map((c) => expect(c, "ready", CHILD_SLACK_MS)));
    for (const c of children) c.child.send({ type: "go" } satisfies ToChild);
    let cpu0: number | undefined;
    let cpu1: number | undefined;
    const timers =
      cpuSeconds === undefined
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
    try {
      for (const c of children) {
        const m = await expect(c, "result", common.warmupMs + common.durationMs + CHILD_SLACK_MS);
        if (m.type === "result") results.push(m.result);
      }
    } finally {
      for (const t of timers) clearTimeout(t);
    }
    const ops = results.reduce((a, r) => a + r.ops, 0);
    const rows = results.reduce((a, r) => a + r.rows, 0);
    const errors = results.reduce((a, r) => a + r.errors, 0);
    const seconds = common.durationMs / 1000;
    const latencies = new Float64Array(ops);
    let at = 0;
    for (const r of results) for (const l of r.latenciesNs) latencies[at++] = l;
    const count = phase.op === "scan" ? rows : ops;
    const firstError = results.find((r) => r.firstError !== undefined)?.firstError;
    const cpuUs =
      cpu0 === undefined || cpu1 === undefined || ops === 0
        ? undefined
        : ((cpu1 - cpu0) * 1e6) / ops;
    return {
      label: phase.label,
      ops: count,
      seconds,
      opsPerSec: count / seconds,
      latency: summarize(latencies),
      description:
        `${phase.procs} client process${phase.procs === 1 ? "" : "es"}, ` +
        `${phase.inFlight} in flight` +
        (cpuUs === undefined ? "" : `, server CPU ${cpuUs.toFixed(0)} µs per call (all members)`) +
        (errors === 0 ? "" : `, ${errors} failed calls (first: ${firstError})`),
      values: {
        [LOAD_PROCS]: phase.procs,
        [LOAD_IN_FLIGHT]: phase.inFlight,
        [LOAD_ERRORS]: errors,
        ...(cpuUs === undefined ? {} : { [LOAD_SERVER_CPU_US]: cpuUs }),
      },
    };
  } finally {
    for (const c of children) if (c.child.exitCode === null) c.child.kill("SIGKILL");
  }
}
