/**
 * Benchmark driver: `npm run bench` (or `node dist/bench/main.js [options]`).
 *
 * Every (scenario, store) run happens in its own child process (dist/bench/worker.js) on
 * a fresh data directory, which is deleted afterwards; selected scenarios that share a
 * fixture (a populated store, e.g. get_sstable, get_miss and scan) share one child per
 * store and round. A store served by a gRPC server (bench/stores/grpc.ts) starts that
 * server as a child of the run's child, in its process group; the harness kills the group
 * after every run, so no server outlives its run, even when the run fails. Runs go round
 * by round — in each round every scenario runs every store once (kv, peer, kv, peer, ...)
 * — so that drift in a noisy machine hits all stores alike. The report (Markdown) goes
 * to stdout, progress to stderr. Exits non-zero only when the harness itself fails; a
 * store that fails, is missing, or times out is reported as such.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { fmtInt } from "./lib/format.js";
import { type MachineInfo, machineInfo } from "./lib/machine.js";
import { Progress } from "./lib/progress.js";
import { RESULT_PREFIX, type WorkerRequest, type WorkerResult } from "./lib/types.js";
import { renderChart } from "./report/chart.js";
import { compareSection } from "./report/compare.js";
import { type ReportOptions, renderReport } from "./report/report.js";
import {
  evaluateTargets,
  type ScenarioSummary,
  summarizeLimit,
  summarizeStore,
  type Target,
} from "./report/results.js";
import { mergeSummaries, readDoc } from "./report/saved.js";
import { scalePoints, scaleTargets } from "./report/scale.js";
import { FAILOVER_MEDIAN_MS, OPEN_LOOP_RATE } from "./scenarios/cluster.js";
import {
  DEFAULT_SCENARIOS,
  findScenario,
  SCALE_SIZES,
  SCENARIOS,
  scaleScenarios,
} from "./scenarios/index.js";
import type { Scenario } from "./scenarios/scenario.js";
import { KV_ENGINE, STORES } from "./stores/index.js";

const USAGE = `usage: node dist/bench/main.js [options]

  --scenarios a,b     scenarios to run (default: all: ${DEFAULT_SCENARIOS.map((s) => s.name).join(",")};
                      only when named: ${SCENARIOS.filter((s) => s.optIn === true)
                        .map((s) => s.name)
                        .join(", ")})
  --peers a,b|none    peer stores next to kv-engine (default: classic-level; and rocksdb in
                      the loads and the readrandom group, lmdb in the loads and the
                      get/scan scenarios, kv-engine-cache128 in get_sstable, get_miss
                      and scan; known: ${Object.keys(STORES)
                        .filter((s) => s !== KV_ENGINE)
                        .join(", ")};
                      the grpc_* scenarios always run their own three stores)
  --n N               operations per run, for every scenario (default: per scenario;
                      for the read scenarios, the keys written, each read once)
  --duration S        n = S seconds (a window per row) for the time-based scenarios:
                      ${SCENARIOS.filter((s) => s.nIsMilliseconds)
                        .map((s) => s.name)
                        .join(", ")}
                      (e.g. --scenarios cluster_steady --duration 600)
  --value-size N      value size in bytes (default 100)
  --rate R            calls per second offered by the open-loop scenarios (cluster_open_loop,
                      cluster_steady; default ${OPEN_LOOP_RATE})
  --repeat R          runs per (scenario, store); the median by throughput is reported
                      (open-loop rows: by p99) (default 3)
  --quick             smaller default n (a smoke run)
  --json FILE         also write machine-readable results to FILE
  --timeout S         kill a run after S seconds (default 300; raised for a scenario
                      that needs longer at its n, e.g. cluster_steady)
  --seed N            seed of key order and values (default 42)
  --tmp-dir DIR       parent of the per-run data directories (default: <repo>/.bench-tmp)
  --cpu-prof          run children under node --cpu-prof; profiles go to <repo>/bench-profiles
  --profile SCENARIO  one run of SCENARIO, kv-engine only, under --cpu-prof; prints the
                      profile's path (open it in Chrome DevTools or speedscope)
  --scale             fillrandom and readrandom at ${SCALE_SIZES.map((n) => n.toLocaleString("en-US")).join(", ")} keys instead of the
                      scenarios (default --repeat 1, --timeout 3600)
  --scale-sizes a,b   the sizes of --scale (e.g. 100000,400000)
  --chart FILE.svg    also draw the results: KV Engine ÷ each peer per scenario, scale curves
  --compare FILE.json compare with an earlier --json run; flags > 10% regressions
  --peers-only        run the peers without KV Engine (a run to --render with one that has
                      KV Engine's rows, e.g. a peer at the largest --scale size)
  --render a.json,b   run nothing: the report (and --chart) of earlier --json runs, merged
                      (a scenario in several files: the last one's), e.g. --scale sizes
                      run separately
  -h, --help          this text
`;

class UsageError extends Error {}

interface Options {
  scenarios: Scenario[];
  peers: string[];
  /** --peers was given: run exactly those peers (no scenario's `extraPeers`). */
  peersGiven: boolean;
  n: number | undefined;
  /** --duration, in milliseconds. */
  durationMs: number | undefined;
  valueSize: number;
  /** --rate. */
  rate: number | undefined;
  repeat: number;
  quick: boolean;
  json: string | undefined;
  timeoutSeconds: number;
  seed: number;
  tmpDir: string | undefined;
  cpuProf: boolean;
  chart: string | undefined;
  compare: string | undefined;
  /** --peers-only: KV Engine is not run (its rows come from another run, via --render). */
  peersOnly: boolean;
  /** --render: the --json files to report on instead of running. */
  render: string[] | undefined;
}

const REPO_DIR = fileURLToPath(new URL("../../", import.meta.url));
const PROFILE_DIR = join(REPO_DIR, "bench-profiles");
const WORKER = fileURLToPath(new URL("./worker.js", import.meta.url));
/** Pause between runs, after the data directory is gone. */
const SETTLE_MS = 100;

function intOption(v: string | undefined, name: string, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min)
    throw new UsageError(`--${name} must be an integer >= ${min}`);
  return n;
}

function mapDefined<T, U>(v: T | undefined, f: (v: T) => U): U | undefined {
  return v === undefined ? undefined : f(v);
}

function listOption(v: string | undefined): string[] | undefined {
  return v
    ?.split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

function parseOptions(argv: string[]): Options | undefined {
  let values: ReturnType<typeof parse>["values"];
  function parse(args: string[]) {
    return parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        scenarios: { type: "string" },
        peers: { type: "string" },
        n: { type: "string" },
        duration: { type: "string" },
        "value-size": { type: "string" },
        rate: { type: "string" },
        repeat: { type: "string" },
        quick: { type: "boolean" },
        json: { type: "string" },
        timeout: { type: "string" },
        seed: { type: "string" },
        "tmp-dir": { type: "string" },
        "cpu-prof": { type: "boolean" },
        profile: { type: "string" },
        scale: { type: "boolean" },
        "scale-sizes": { type: "string" },
        chart: { type: "string" },
        compare: { type: "string" },
        render: { type: "string" },
        "peers-only": { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  }
  try {
    values = parse(argv).values;
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help) return undefined;
  const profile = values.profile;
  const sizes = listOption(values["scale-sizes"])?.map((v) => intOption(v, "scale-sizes", 1)!);
  const scale = values.scale === true || sizes !== undefined;
  if ([profile !== undefined, scale, values.scenarios !== undefined].filter(Boolean).length > 1) {
    throw new UsageError("--profile, --scale and --scenarios exclude each other");
  }
  const scenarioNames =
    listOption(profile ?? values.scenarios) ?? DEFAULT_SCENARIOS.map((s) => s.name);
  const scenarios = scale
    ? scaleScenarios(sizes ?? SCALE_SIZES)
    : scenarioNames.map((name) => {
        const s = findScenario(name);
        if (s === undefined) throw new UsageError(`unknown scenario "${name}"`);
        return s;
      });
  if (profile !== undefined && values.peers !== undefined) {
    throw new UsageError("--profile runs kv-engine alone: no --peers");
  }
  const peerList =
    profile !== undefined ? ["none"] : (listOption(values.peers) ?? ["classic-level"]);
  const peers = peerList.includes("none") ? [] : peerList;
  if (values["peers-only"] === true && (peers.length === 0 || values.peers === undefined)) {
    throw new UsageError("--peers-only needs --peers naming at least one peer");
  }
  for (const p of peers) {
    if (STORES[p] === undefined) throw new UsageError(`unknown peer "${p}"`);
    if (p === KV_ENGINE) throw new UsageError("kv-engine always runs; it is not a peer");
  }
  return {
    scenarios,
    peers: [...new Set(peers)],
    peersGiven: values.peers !== undefined || profile !== undefined,
    n: intOption(values.n, "n", 1),
    durationMs: mapDefined(intOption(values.duration, "duration", 1), (s) => s * 1000),
    valueSize: intOption(values["value-size"], "value-size", 0) ?? 100,
    rate: intOption(values.rate, "rate", 1),
    repeat: intOption(values.repeat, "repeat", 1) ?? (scale || profile !== undefined ? 1 : 3),
    quick: values.quick ?? false,
    json: values.json,
    timeoutSeconds: intOption(values.timeout, "timeout", 1) ?? (scale ? 3600 : 300),
    seed: intOption(values.seed, "seed", 0) ?? 42,
    tmpDir: values["tmp-dir"],
    cpuProf: values["cpu-prof"] === true || profile !== undefined,
    chart: values.chart,
    compare: values.compare,
    render: listOption(values.render),
    peersOnly: values["peers-only"] === true,
  };
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** The child process of the run in progress, so that SIGINT can end it. */
let current: { child: ChildProcess; dir: string } | undefined;

/** Kills a worker and whatever it started (gRPC servers): they share its process group. */
function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // Nobody left in the group.
  }
}

/**
 * Runs one worker; resolves to one result per requested scenario and never rejects
 * (failures become WorkerResults with a status).
 */
function runWorker(
  req: WorkerRequest,
  opts: Options,
  timeoutSeconds: number,
): Promise<WorkerResult[]> {
  const failed = (status: "error" | "timeout", error: string): WorkerResult[] =>
    req.scenarios.map((scenario) => ({
      scenario,
      store: req.store,
      status,
      error,
      rows: [],
      extra: {},
      peakRssBytes: 0,
    }));
  return new Promise((resolvePromise) => {
    const nodeArgs = opts.cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${PROFILE_DIR}`] : [];
    let child: ChildProcess;
    try {
      // A process group of its own (detached), so that killGroup reaches its servers.
      child = spawn(process.execPath, [...nodeArgs, WORKER, JSON.stringify(req)], {
        stdio: ["ignore", "pipe", "inherit"],
        detached: true,
      });
    } catch (err) {
      resolvePromise(failed("error", `cannot start worker: ${String(err)}`));
      return;
    }
    current = { child, dir: req.dir };
    let stdout = "";
    let timedOut = false;
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      stdout += chunk;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutSeconds * 1000);
    child.on("error", (err) => {
      clearTimeout(timer);
      current = undefined;
      resolvePromise(failed("error", `worker: ${err.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      current = undefined;
      killGroup(child);
      if (timedOut) {
        resolvePromise(failed("timeout", `killed after ${timeoutSeconds} s`));
        return;
      }
      const lines = stdout.split("\n").filter((l) => l.startsWith(RESULT_PREFIX));
      if (lines.length === 0) {
        const how = signal === null ? `exit code ${code}` : `signal ${signal}`;
        resolvePromise(failed("error", `worker ended (${how}) without a result`));
        return;
      }
      let results: WorkerResult[];
      try {
        results = lines.map((l) => JSON.parse(l.slice(RESULT_PREFIX.length)) as WorkerResult);
      } catch (err) {
        resolvePromise(failed("error", `unreadable worker result: ${String(err)}`));
        return;
      }
      // One result per requested scenario, in request order.
      const byName = new Map(results.map((r) => [r.scenario, r]));
      const none = failed("error", "worker printed no result for this scenario");
      resolvePromise(req.scenarios.map((name, i) => byName.get(name) ?? none[i]!));
    });
  });
}

/**
 * Between runs: fsync the parent directory, which makes ext4 commit its journal (the
 * deletion of the last run's files) now rather than in the middle of the next run, then
 * let the device idle briefly.
 */
async function settle(baseDir: string): Promise<void> {
  try {
    const fd = fs.openSync(baseDir, "r");
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Not every platform can fsync a directory; settling is best effort.
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
}

function storesOf(s: Scenario, opts: Options): string[] {
  if (s.kind === "limit") return ["-"];
  if (s.stores !== undefined) return [...s.stores];
  const extra = opts.peersGiven ? [] : (s.extraPeers ?? []);
  const peers = [...new Set([...opts.peers, ...extra])];
  return opts.peersOnly ? peers : [KV_ENGINE, ...peers];
}

/**
 * The selected scenarios as child-process units: scenarios with the same fixture, n and
 * `stores` form one unit (one child per store and round, one populated store), placed
 * where the first of them was selected, and run in registry order within it (so that the
 * state a scenario meets does not depend on the order of --scenarios); every other
 * scenario is a unit of its own.
 */
function unitsOf(scenarios: readonly Scenario[], nOf: (s: Scenario) => number): Scenario[][] {
  const units: Scenario[][] = [];
  for (const s of scenarios) {
    const fixture = s.kind === "store" ? s.fixture : undefined;
    const stores = s.kind === "store" ? s.stores : undefined;
    const unit =
      fixture === undefined
        ? undefined
        : units.find((u) => {
            const head = u[0]!;
            return (
              head.kind === "store" &&
              head.fixture === fixture &&
              head.stores === stores &&
              nOf(head) === nOf(s)
            );
          });
    if (unit === undefined) units.push([s]);
    else unit.push(s);
  }
  for (const u of units) u.sort((a, b) => SCENARIOS.indexOf(a) - SCENARIOS.indexOf(b));
  return units;
}

function progressLine(r: WorkerResult, unit: string): string {
  if (r.status !== "ok") return `${r.status}${r.error === undefined ? "" : `: ${r.error}`}`;
  return r.rows
    .map((row) => {
      const name = r.rows.length > 1 ? `${row.label} ` : "";
      const medianMs = row.values?.[FAILOVER_MEDIAN_MS];
      if (medianMs !== undefined) return `${name}median ${medianMs.toFixed(0)} ms`;
      const rate = row.opsPerSec < 10 ? row.opsPerSec.toFixed(2) : fmtInt(row.opsPerSec);
      return `${name}${rate} ${unit}/s`;
    })
    .join(", ");
}

/** Every target of `summaries`: the scenarios' and, for `--scale` runs, the growth ones. */
function allTargets(summaries: readonly ScenarioSummary[]): Target[] {
  return [...evaluateTargets(summaries), ...scaleTargets(scalePoints(summaries))];
}

/** `--render`: the report (and chart) of saved `--json` runs, merged; runs nothing. */
function renderSaved(files: readonly string[], o: Options): number {
  const docs = files.map(readDoc);
  const summaries = mergeSummaries(docs.map((d) => d.scenarios));
  const first = docs[0]!;
  const machine = first.machine as MachineInfo;
  const reportOpts: ReportOptions = {
    repeat: first.options?.repeat ?? 1,
    quick: first.options?.quick ?? false,
    seed: first.options?.seed ?? 42,
    timeoutSeconds: first.options?.timeoutSeconds ?? 0,
  };
  const runs = files.map((f, i) => {
    const m = docs[i]!.machine;
    return `- ${f}: ${m?.date ?? "?"}, commit ${m?.gitCommit ?? "?"}, load average at start ${m?.loadAverage?.map((v) => v.toFixed(2)).join(", ") ?? "?"}`;
  });
  const merged =
    "## Runs merged\n\nThe header describes the first run; the rows of a scenario come from " +
    `every file that has it (a store in several files: the last one's).\n\n${runs.join("\n")}\n`;
  writeReport(machine, reportOpts, summaries, o, merged);
  return 0;
}

/**
 * Prints the report of `summaries` (with `extra`, a Markdown section, after the targets,
 * and `--compare`'s section) and writes `--chart`'s SVG.
 */
function writeReport(
  machine: MachineInfo,
  reportOpts: ReportOptions,
  summaries: readonly ScenarioSummary[],
  o: Options,
  extra?: string,
): void {
  let report = renderReport(machine, reportOpts, summaries, allTargets(summaries));
  if (extra !== undefined) report += `\n${extra}`;
  if (o.compare !== undefined) report += `\n${compareSection(o.compare, summaries)}\n`;
  process.stdout.write(report);
  if (o.chart !== undefined) {
    const title = `KV Engine benchmarks, ${machine.gitCommit ?? "unknown commit"}, ${machine.date}`;
    fs.writeFileSync(o.chart, renderChart(summaries, title));
    log(`bench: wrote ${o.chart}`);
  }
}

async function main(): Promise<number> {
  let opts: Options | undefined;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`bench: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
  if (opts === undefined) {
    process.stdout.write(USAGE);
    return 0;
  }
  const o = opts;
  if (o.render !== undefined) return renderSaved(o.render, o);
  const baseDir = resolve(o.tmpDir ?? join(REPO_DIR, ".bench-tmp"));
  const createdBase = !fs.existsSync(baseDir);
  fs.mkdirSync(baseDir, { recursive: true });
  const machine = machineInfo(baseDir, REPO_DIR);
  if (machine.fsType === "tmpfs" || machine.fsType === "ramfs") {
    log(`bench: warning: ${baseDir} is on ${machine.fsType}; fdatasync is free there`);
  }

  process.on("SIGINT", () => {
    if (current !== undefined) {
      killGroup(current.child);
      fs.rmSync(current.dir, { recursive: true, force: true });
    }
    if (createdBase) fs.rmSync(baseDir, { recursive: true, force: true });
    log("bench: interrupted");
    process.exit(130);
  });

  const nOf = (s: Scenario) =>
    (s.nIsMilliseconds === true ? o.durationMs : undefined) ?? o.n ?? s.defaultN(o.quick);
  const timeoutOf = (unit: readonly Scenario[]) =>
    Math.max(o.timeoutSeconds, ...unit.map((s) => s.minTimeoutSeconds?.(nOf(s)) ?? 0));
  const units = unitsOf(o.scenarios, nOf);
  const runs = new Map<string, WorkerResult[]>();
  const missing = new Map<string, WorkerResult>();
  const record = (s: Scenario, store: string, r: WorkerResult) => {
    const key = `${s.name}\0${store}`;
    runs.set(key, [...(runs.get(key) ?? []), r]);
  };
  const total = o.repeat * units.reduce((acc, u) => acc + storesOf(u[0]!, o).length, 0);
  const progress = new Progress(total);
  const profileStart = Date.now();
  for (let round = 1; round <= o.repeat; round++) {
    for (const unit of units) {
      const head = unit[0]!;
      const name = unit.map((s) => s.name).join("+");
      for (const store of storesOf(head, o)) {
        const known = missing.get(store);
        if (known !== undefined) {
          // Not importable once, not importable now: record it without a child.
          for (const s of unit) record(s, store, { ...known, scenario: s.name });
          progress.skip(`${name} · ${store}`, "skipped (missing)");
          continue;
        }
        const dir = fs.mkdtempSync(join(baseDir, `${head.name}-${store === "-" ? "raw" : store}-`));
        const req: WorkerRequest = {
          scenarios: unit.map((s) => s.base ?? s.name),
          store,
          dir,
          n: nOf(head),
          valueSize: o.valueSize,
          seed: o.seed,
          ...(o.rate === undefined ? {} : { rate: o.rate }),
        };
        const what = `${name} · ${store === "-" ? "raw" : store} · run ${round}/${o.repeat}`;
        progress.start(what);
        const t0 = Date.now();
        let results: WorkerResult[];
        try {
          results = await runWorker(req, o, timeoutOf(unit));
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
        await settle(baseDir);
        const lines = results.map((r, i) => {
          const line = progressLine(r, unit[i]!.unit ?? "ops");
          return unit.length > 1 ? `${unit[i]!.name}: ${line}` : line;
        });
        progress.end(what, `${lines.join("; ")} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
        results.forEach((r, i) => {
          if (r.status === "missing") missing.set(store, r);
          record(unit[i]!, store, r);
        });
      }
    }
  }
  if (createdBase) fs.rmSync(baseDir, { recursive: true, force: true });

  const summaries: ScenarioSummary[] = o.scenarios.map((s) => {
    const base = {
      name: s.name,
      ...(s.base === undefined ? {} : { base: s.base }),
      title: s.title,
      kind: s.kind,
      n: nOf(s),
      valueSize: o.valueSize,
      unit: s.unit ?? "ops",
      ...(s.sizeLine === undefined ? {} : { sizeLine: s.sizeLine(nOf(s), o.valueSize) }),
      ...(s.kind === "store" && s.fixture !== undefined ? { fixture: s.fixture.name } : {}),
      ...(s.kind === "store" ? { baseline: o.peersOnly ? KV_ENGINE : storesOf(s, o)[0]! } : {}),
    };
    if (s.kind === "limit")
      return { ...base, rows: summarizeLimit(runs.get(`${s.name}\0-`) ?? []) };
    return {
      ...base,
      rows: storesOf(s, o).flatMap((store) =>
        summarizeStore(store, runs.get(`${s.name}\0${store}`) ?? []),
      ),
    };
  });
  const targets = allTargets(summaries);
  const reportOpts = {
    repeat: o.repeat,
    quick: o.quick,
    seed: o.seed,
    timeoutSeconds: o.timeoutSeconds,
  };
  writeReport(machine, reportOpts, summaries, o);
  if (o.cpuProf) {
    const made = fs.existsSync(PROFILE_DIR)
      ? fs
          .readdirSync(PROFILE_DIR)
          .map((f) => join(PROFILE_DIR, f))
          .filter((f) => f.endsWith(".cpuprofile") && fs.statSync(f).mtimeMs >= profileStart)
      : [];
    log(
      made.length === 0
        ? "bench: no CPU profile was written"
        : `bench: CPU profile(s), open in Chrome DevTools (Performance) or https://www.speedscope.app:\n${made.map((f) => `  ${f}`).join("\n")}`,
    );
  }

  if (o.json !== undefined) {
    const doc = {
      format: "kv-engine-bench/1",
      machine,
      options: { ...reportOpts, n: o.n ?? null, valueSize: o.valueSize, peers: o.peers },
      scenarios: summaries,
      targets,
      runs: Object.fromEntries(runs),
    };
    fs.writeFileSync(o.json, `${JSON.stringify(doc, null, 2)}\n`);
    log(`bench: wrote ${o.json}`);
  }
  return 0;
}

try {
  process.exitCode = await main();
} catch (err) {
  process.stderr.write(
    `bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exitCode = 1;
}
