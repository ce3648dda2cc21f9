/**
 * Benchmark child process: runs ONE store (or the raw probes) under one scenario — or
 * under several store scenarios that share a fixture, on one populated store — and prints
 * one result line per scenario, `BENCH_RESULT {json}` (a WorkerResult), on stdout.
 * Progress and errors go to stderr.
 *
 *   node dist/bench/worker.js '{"scenarios":["put"],"store":"kv-engine","dir":"/tmp/x",
 *     "n":1000,"valueSize":100,"seed":42}'
 *   node dist/bench/worker.js '{"scenarios":["get_sstable","get_miss","scan"],
 *     "store":"kv-engine","dir":"/tmp/y","n":100000,"valueSize":100,"seed":42}'
 *
 * Run by bench/main.ts; can be run by hand (e.g. under `node --cpu-prof`).
 */

import { RESULT_PREFIX, type WorkerRequest, type WorkerResult } from "./lib/types.js";
import { findScenario } from "./scenarios/index.js";
import type { Scenario, ScenarioContext, StoreScenario } from "./scenarios/scenario.js";
import { KV_ENGINE, STORES } from "./stores/index.js";
import type { BenchStore, StoreAdapter } from "./stores/store.js";

function parseRequest(arg: string | undefined): WorkerRequest {
  if (arg === undefined) throw new Error("usage: worker.js '<WorkerRequest JSON>'");
  const r = JSON.parse(arg) as Partial<WorkerRequest> & { scenario?: unknown };
  // `scenario: "name"` is accepted too, for runs by hand.
  const scenarios = typeof r.scenario === "string" ? [r.scenario] : r.scenarios;
  if (
    !Array.isArray(scenarios) ||
    scenarios.length === 0 ||
    !scenarios.every((s) => typeof s === "string") ||
    typeof r.store !== "string" ||
    typeof r.dir !== "string" ||
    typeof r.n !== "number" ||
    typeof r.valueSize !== "number" ||
    typeof r.seed !== "number" ||
    (r.rate !== undefined && typeof r.rate !== "number")
  ) {
    throw new Error(`bad worker request: ${arg}`);
  }
  return {
    scenarios,
    store: r.store,
    dir: r.dir,
    n: r.n,
    valueSize: r.valueSize,
    seed: r.seed,
    ...(r.rate === undefined ? {} : { rate: r.rate }),
  };
}

function message(err: unknown): string {
  if (err instanceof Error) return err.stack ?? err.message;
  return String(err);
}

function firstLine(s: string): string {
  return s.split("\n")[0] ?? s;
}

function peakRssBytes(): number {
  return process.resourceUsage().maxRSS * 1024; // maxRSS is in KiB
}

/** A failed result for each of `names`. */
function failedAll(
  names: readonly string[],
  store: string,
  status: WorkerResult["status"],
  error: string,
): WorkerResult[] {
  return names.map((scenario) => ({
    scenario,
    store,
    status,
    error,
    rows: [],
    extra: {},
    peakRssBytes: peakRssBytes(),
  }));
}

/** The store scenarios of a request; throws unless they can share one child. */
function storeScenarios(list: readonly Scenario[]): StoreScenario[] {
  const stores = list.filter((s): s is StoreScenario => s.kind === "store");
  if (stores.length !== list.length) throw new Error("limit scenarios run alone");
  const first = stores[0]!;
  if (
    stores.length > 1 &&
    (first.fixture === undefined || stores.some((s) => s.fixture !== first.fixture))
  ) {
    throw new Error("only scenarios with the same fixture share a child");
  }
  return stores;
}

async function run(req: WorkerRequest): Promise<WorkerResult[]> {
  const list: Scenario[] = [];
  for (const name of req.scenarios) {
    const s = findScenario(name);
    if (s === undefined)
      return failedAll(req.scenarios, req.store, "error", `unknown scenario ${name}`);
    list.push(s);
  }
  const ctx: ScenarioContext = {
    dir: req.dir,
    n: req.n,
    valueSize: req.valueSize,
    seed: req.seed,
    ...(req.rate === undefined ? {} : { rate: req.rate }),
  };
  const first = list[0]!;
  if (first.kind === "limit" && list.length === 1) {
    const out = await first.run(ctx);
    return [
      {
        scenario: first.name,
        store: req.store,
        status: "ok",
        rows: out.rows,
        extra: out.extra ?? {},
        peakRssBytes: peakRssBytes(),
      },
    ];
  }
  const scenarios = storeScenarios(list);
  const entry = STORES[req.store];
  if (entry === undefined) {
    return failedAll(req.scenarios, req.store, "error", `unknown store ${req.store}`);
  }
  let adapter: StoreAdapter;
  try {
    adapter = await entry.load();
  } catch (err) {
    // A peer that cannot be loaded is "missing"; the store under test must load.
    const status = req.store === KV_ENGINE ? "error" : "missing";
    return failedAll(req.scenarios, req.store, status, firstLine(message(err)));
  }
  const fixture = scenarios[0]!.fixture;
  const options = { sync: scenarios[0]!.sync, ...fixture?.storeOptions };
  // The process's RSS before the store exists (Node, the harness's modules): the report's
  // RSS per key is the peak above this.
  const rssAtOpenBytes = process.memoryUsage.rss();
  const store: BenchStore = await adapter.open(req.dir, options);
  ctx.openAt = (dir) => adapter.open(dir, options);
  let closed = false;
  try {
    let fixtureExtra: Record<string, number> = {};
    if (fixture !== undefined) {
      try {
        fixtureExtra = await fixture.populate(store, ctx);
      } catch (err) {
        process.stderr.write(`worker: ${message(err)}\n`);
        const why = `fixture ${fixture.name}: ${firstLine(message(err))}`;
        return failedAll(req.scenarios, req.store, "error", why);
      }
    }
    const results: WorkerResult[] = [];
    for (const s of scenarios) {
      const base = { scenario: s.name, store: req.store };
      try {
        const out = await s.run(store, ctx);
        const extra = {
          ...(store.stats?.() ?? {}),
          ...fixtureExtra,
          ...(out.extra ?? {}),
          rssAtOpenBytes,
        };
        const rows = out.rows.map((row) => ({
          ...row,
          label: row.label === "" ? req.store : `${req.store} (${row.label})`,
        }));
        results.push({ ...base, status: "ok", rows, extra, peakRssBytes: peakRssBytes() });
      } catch (err) {
        process.stderr.write(`worker: ${s.name}: ${message(err)}\n`);
        results.push({
          ...base,
          status: "error",
          error: firstLine(message(err)),
          rows: [],
          extra: {},
          peakRssBytes: peakRssBytes(),
        });
      }
    }
    closed = true;
    await store.close();
    return results;
  } finally {
    if (!closed) await store.close().catch(() => {});
  }
}

async function main(): Promise<void> {
  let results: WorkerResult[];
  let req: WorkerRequest | undefined;
  try {
    req = parseRequest(process.argv[2]);
    results = await run(req);
  } catch (err) {
    process.stderr.write(`worker: ${message(err)}\n`);
    results = failedAll(
      req?.scenarios ?? ["?"],
      req?.store ?? "?",
      "error",
      firstLine(message(err)),
    );
  }
  const lines = results.map((r) => `${RESULT_PREFIX}${JSON.stringify(r)}\n`).join("");
  // Exit explicitly: a store that leaves a handle open must not hang the harness.
  process.stdout.write(lines, () => process.exit(0));
}

await main();
