/**
 * Benchmark child process: runs ONE (scenario, store) pair and prints one result line,
 * `BENCH_RESULT {json}` (a WorkerResult), on stdout. Progress and errors go to stderr.
 *
 *   node dist/bench/worker.js '{"scenario":"put","store":"kv-engine","dir":"/tmp/x",
 *     "n":1000,"valueSize":100,"seed":42}'
 *
 * Run by bench/main.ts; can be run by hand (e.g. under `node --cpu-prof`).
 */

import { RESULT_PREFIX, type WorkerRequest, type WorkerResult } from "./lib/types.js";
import { findScenario } from "./scenarios/index.js";
import { KV_ENGINE, STORES } from "./stores/index.js";
import type { BenchStore, StoreAdapter } from "./stores/store.js";

function parseRequest(arg: string | undefined): WorkerRequest {
  if (arg === undefined) throw new Error("usage: worker.js '<WorkerRequest JSON>'");
  const r = JSON.parse(arg) as Partial<WorkerRequest>;
  if (
    typeof r.scenario !== "string" ||
    typeof r.store !== "string" ||
    typeof r.dir !== "string" ||
    typeof r.n !== "number" ||
    typeof r.valueSize !== "number" ||
    typeof r.seed !== "number"
  ) {
    throw new Error(`bad worker request: ${arg}`);
  }
  return {
    scenario: r.scenario,
    store: r.store,
    dir: r.dir,
    n: r.n,
    valueSize: r.valueSize,
    seed: r.seed,
  };
}

function message(err: unknown): string {
  if (err instanceof Error) return err.stack ?? err.message;
  return String(err);
}

function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024; // maxRSS is in KiB
}

async function run(req: WorkerRequest): Promise<WorkerResult> {
  const base = { scenario: req.scenario, store: req.store, rows: [], extra: {} };
  const scenario = findScenario(req.scenario);
  if (scenario === undefined) {
    return { ...base, status: "error", error: `unknown scenario ${req.scenario}`, peakRssBytes: 0 };
  }
  const ctx = { dir: req.dir, n: req.n, valueSize: req.valueSize, seed: req.seed };
  if (scenario.kind === "limit") {
    const out = await scenario.run(ctx);
    return { ...base, status: "ok", rows: out.rows, extra: out.extra ?? {}, peakRssBytes: 0 };
  }
  const entry = STORES[req.store];
  if (entry === undefined) {
    return { ...base, status: "error", error: `unknown store ${req.store}`, peakRssBytes: 0 };
  }
  let adapter: StoreAdapter;
  try {
    adapter = await entry.load();
  } catch (err) {
    // A peer that cannot be loaded is "missing"; the store under test must load.
    const status = req.store === KV_ENGINE ? "error" : "missing";
    return { ...base, status, error: firstLine(message(err)), peakRssBytes: 0 };
  }
  const store: BenchStore = await adapter.open(req.dir, { sync: scenario.sync });
  let closed = false;
  try {
    const out = await scenario.run(store, ctx);
    const extra = { ...(out.extra ?? {}), ...(store.stats?.() ?? {}) };
    closed = true;
    await store.close();
    const rows = out.rows.map((row) => ({ ...row, label: row.label || req.store }));
    return { ...base, status: "ok", rows, extra, peakRssBytes: 0 };
  } finally {
    if (!closed) await store.close().catch(() => {});
  }
}

function firstLine(s: string): string {
  return s.split("\n")[0] ?? s;
}

async function main(): Promise<void> {
  let result: WorkerResult;
  let req: WorkerRequest | undefined;
  try {
    req = parseRequest(process.argv[2]);
    result = await run(req);
  } catch (err) {
    process.stderr.write(`worker: ${message(err)}\n`);
    result = {
      scenario: req?.scenario ?? "?",
      store: req?.store ?? "?",
      status: "error",
      error: firstLine(message(err)),
      rows: [],
      extra: {},
      peakRssBytes: 0,
    };
  }
  result.peakRssBytes = peakRssBytes();
  // Exit explicitly: a store that leaves a handle open must not hang the harness.
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`, () => process.exit(0));
}

await main();
