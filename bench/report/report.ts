/** Renders the Markdown report. */
import { fmtInt, fmtRatio, fmtUs, table } from "../lib/format.js";
import type { MachineInfo } from "../lib/machine.js";
import type { Measurement } from "../lib/types.js";
import { CLUSTER_STORES, STEADY_STORES } from "../scenarios/cluster.js";
import {
  RAFT_CORE_US,
  RAFT_ENTRIES_PER_READY,
  RAFT_FSYNCS_PER_READY,
  raftPropose,
} from "../scenarios/raft-propose.js";
import { CLIENT_CPU_US, grpcTransport, SERVER_CPU_US } from "../scenarios/transport.js";
import { KV_ENGINE, storeLabel } from "../stores/index.js";
import { clusterSection } from "./cluster-report.js";
import type { RowSummary, ScenarioSummary, Target } from "./results.js";
import { scalePoints } from "./scale.js";

export interface ReportOptions {
  repeat: number;
  quick: boolean;
  seed: number;
  timeoutSeconds: number;
}

const GiB = 1024 * 1024 * 1024;
const MiB = 1024 * 1024;

function medianOf(repeat: number): string {
  return repeat === 1 ? "1 run" : `median of ${repeat} runs`;
}

/** The ops/s, p50, p99 and p99.9 cells of a row's median. */
function rateCells(m: Measurement): string[] {
  return [
    fmtInt(m.opsPerSec),
    fmtUs(m.latency?.p50Ns),
    fmtUs(m.latency?.p99Ns),
    fmtUs(m.latency?.p999Ns),
  ];
}

function notOk(row: RowSummary, columns: number): string[] {
  const what = row.error === undefined ? row.status : `${row.status}: ${row.error}`;
  const cells = [row.label, what.replaceAll("|", "\\|")];
  while (cells.length < columns) cells.push("");
  return cells;
}

function header(m: MachineInfo, opts: ReportOptions): string {
  const fs = m.fsSource === undefined ? m.fsType : `${m.fsType} on ${m.fsSource}`;
  const rows = [
    ["date", m.date],
    ["git commit", m.gitCommit ?? "unknown"],
    ["CPU", `${m.cpuModel}, ${m.cores} cores`],
    ["memory", `${(m.memoryBytes / GiB).toFixed(1)} GiB`],
    ["load average", m.loadAverage?.map((v) => v.toFixed(2)).join(", ") ?? "unknown"],
    ["OS", m.os],
    ["Node", m.node],
    ["data dir", `${m.dataDir} (${fs})`],
    [
      "runs",
      `${opts.repeat} per store, median by throughput (open-loop rows: by p99)${opts.quick ? ", --quick" : ""}` +
        `, seed ${opts.seed}, timeout ${opts.timeoutSeconds} s per run`,
    ],
  ];
  const warn =
    m.fsType === "tmpfs" || m.fsType === "ramfs"
      ? "\n\n**Warning:** the data directory is on a RAM file system; fdatasync costs nothing there.\n"
      : "";
  return `# KV Engine benchmarks\n\n${table(["", ""], rows, [0, 1])}${warn}`;
}

function plural(count: number, noun: string): string {
  return `${fmtInt(count)} ${noun}${count === 1 ? "" : "s"}`;
}

/** Fill time and table files of each store's median run, for fixture scenarios. */
function fixtureLine(s: ScenarioSummary): string | undefined {
  const parts: string[] = [];
  for (const r of s.rows) {
    const e = r.extra;
    if (r.variant !== undefined || r.status !== "ok" || e?.["fillSeconds"] === undefined) continue;
    let p = `${r.label} ${e["fillSeconds"].toFixed(1)} s`;
    if (e["tableFiles"] !== undefined) {
      p += `, ${plural(e["tableFiles"], "table file")}`;
      if (e["level0Files"] !== undefined) p += ` (${fmtInt(e["level0Files"])} in level 0)`;
    }
    parts.push(p);
  }
  return parts.length === 0 ? undefined : `Fill (untimed, median run): ${parts.join("; ")}.`;
}

/** crash_recovery: each store's files left by the crash and its open time per MiB of them. */
function crashLine(s: ScenarioSummary): string | undefined {
  const parts: string[] = [];
  for (const r of s.rows) {
    const bytes = r.extra?.["crashBytes"];
    const seconds = r.extra?.["recoverySeconds"];
    if (r.variant !== undefined || r.status !== "ok" || bytes === undefined || !seconds) continue;
    const perMiB = bytes > 0 ? `${((1000 * seconds) / (bytes / MiB)).toFixed(1)} ms per MiB` : "—";
    parts.push(
      `${r.label} ${(bytes / MiB).toFixed(1)} MiB, open ${(1000 * seconds).toFixed(0)} ms, ${perMiB}`,
    );
  }
  return parts.length === 0
    ? undefined
    : `Files left by the crash and open time (median run): ${parts.join("; ")}.`;
}

/**
 * Write and space amplification of each store's median run, for scenarios that measure
 * them (`settleAndMeasure` in bench/scenarios/common.ts).
 */
function amplificationTable(s: ScenarioSummary): string | undefined {
  const rows: string[][] = [];
  for (const r of s.rows) {
    const e = r.extra;
    if (r.variant !== undefined || r.status !== "ok" || e?.["dataDirBytes"] === undefined) continue;
    const written = e["writtenBytes"];
    const user = e["userBytes"];
    const logical = e["logicalBytes"];
    const dataDir = e["dataDirBytes"];
    const tableAmp = e["tableWriteAmp"];
    rows.push([
      r.label,
      written === undefined ? "—" : (written / MiB).toFixed(0),
      written === undefined || !user ? "—" : fmtRatio(written / user),
      tableAmp === undefined ? "—" : fmtRatio(tableAmp),
      (dataDir / MiB).toFixed(0),
      logical ? fmtRatio(dataDir / logical) : "—",
      e["settled"] === undefined
        ? "not waited"
        : `${e["settled"] === 1 ? "" : "not idle after "}${(e["settleSeconds"] ?? 0).toFixed(1)} s`,
    ]);
  }
  if (rows.length === 0) return undefined;
  const cols = [
    "store (median run)",
    "written MiB",
    "write amp (written ÷ user bytes)",
    "table write amp (KV stats)",
    "data dir MiB",
    "space amp",
    "settle wait",
  ];
  return table(cols, rows);
}

function storeSection(s: ScenarioSummary, repeat: number): string {
  const kv = s.rows.find((r) => r.name === KV_ENGINE);
  const baseline = s.baseline ?? KV_ENGINE;
  const opsOfRow = (name: string) => {
    const row = s.rows.find((r) => r.name === name);
    return row?.status === "ok" ? row.median?.opsPerSec : undefined;
  };
  const cols = [
    "store",
    `${s.unit}/s`,
    "p50 µs",
    "p99 µs",
    "p99.9 µs",
    `${storeLabel(baseline)} ÷ store (${s.unit}/s)`,
    "runs",
    "peak RSS MiB",
  ];
  const rows = s.rows.map((r) => {
    const m = r.median;
    if (r.status !== "ok" || m === undefined) return notOk(r, cols.length);
    // A variant row is compared with the baseline's row of the same variant, if any.
    const twin = `${baseline} (${r.variant})`;
    const ref = r.variant !== undefined && opsOfRow(twin) !== undefined ? twin : baseline;
    const refOps = opsOfRow(ref);
    const ratio =
      r.name === ref ? "baseline" : refOps === undefined ? "—" : fmtRatio(refOps / m.opsPerSec);
    return [
      r.label,
      ...rateCells(m),
      ratio,
      r.okRuns === r.attempted ? String(r.okRuns) : `${r.okRuns} of ${r.attempted}`,
      r.peakRssBytes === undefined ? "—" : (r.peakRssBytes / MiB).toFixed(0),
    ];
  });
  const size =
    s.sizeLine === undefined
      ? `n = ${fmtInt(s.n)} puts, ${s.valueSize}-byte values, 16-byte keys; ${medianOf(repeat)}.`
      : `${s.sizeLine} Each row: ${medianOf(repeat)}.`;
  const parts = [`## ${s.name}: ${s.title}`, size, table(cols, rows)];
  for (const r of s.rows) {
    for (const f of r.failures ?? []) {
      parts.push(`A failed run of ${r.label}: ${f.split("\n")[0]!.replaceAll("|", "\\|")}`);
    }
  }
  const e = kv?.extra;
  for (const extraPart of [amplificationTable(s), crashLine(s)]) {
    if (extraPart !== undefined) parts.push(extraPart);
  }
  if (s.fixture !== undefined) {
    const fill = fixtureLine(s);
    if (fill !== undefined) parts.push(fill);
    const hits = e?.["cacheHits"];
    const misses = e?.["cacheMisses"];
    if (hits !== undefined && misses !== undefined && hits + misses > 0) {
      parts.push(
        `KV Engine block cache during the timed part (median run): ` +
          `${((100 * hits) / (hits + misses)).toFixed(1)}% hits ` +
          `(${fmtInt(hits)} hits, ${fmtInt(misses)} misses).`,
      );
    }
  } else if (e !== undefined && e["batches"] !== undefined && e["syncs"] !== undefined) {
    const batches = e["batches"];
    const syncs = e["syncs"];
    const perWrite = batches > 0 ? (syncs / batches).toFixed(3) : "—";
    parts.push(
      `KV Engine commit (median run): **${perWrite} syncs per write** ` +
        `(${fmtInt(syncs)} syncs / ${fmtInt(batches)} batches, ` +
        `${fmtInt(e["groups"] ?? 0)} groups, max group ${fmtInt(e["maxGroupSize"] ?? 0)}).`,
    );
  }
  return parts.join("\n\n");
}

function limitSection(s: ScenarioSummary, repeat: number): string {
  const cols = ["limit", "ops/s", "p50 µs", "p99 µs", "p99.9 µs", "bandwidth", "what"];
  const rows = s.rows.map((r) => {
    const m = r.median;
    if (r.status !== "ok" || m === undefined) return notOk(r, cols.length);
    const bw = m.bytesPerSec === undefined ? "—" : `${(m.bytesPerSec / 1e9).toFixed(2)} GB/s`;
    return [r.label, ...rateCells(m), bw, m.description ?? ""];
  });
  return [
    "## Machine limits",
    `No store: raw writes of 4 KiB, one fdatasync each, n = ${fmtInt(s.n)} per probe, ` +
      `in the same kind of directory; ${medianOf(repeat)} per row.`,
    table(cols, rows, [0, 6]),
  ].join("\n\n");
}

/** grpc_transport: one row per (transport, operation, calls in flight), with both sides' CPU. */
function transportSection(s: ScenarioSummary, repeat: number): string {
  const cols = ["row", "calls/s", "p50 µs", "p99 µs", "server CPU µs", "client CPU µs"];
  const rows = s.rows.map((r) => {
    const m = r.median;
    if (r.status !== "ok" || m === undefined) return notOk(r, cols.length);
    const v = m.values ?? {};
    const digits = r.label.includes("per row") ? 3 : 1;
    const fixed = (key: string) => v[key]?.toFixed(digits) ?? "—";
    return [
      r.label,
      fmtInt(m.opsPerSec),
      fmtUs(m.latency?.p50Ns),
      fmtUs(m.latency?.p99Ns),
      fixed(SERVER_CPU_US),
      fixed(CLIENT_CPU_US),
    ];
  });
  return [
    `## ${s.name}`,
    `${s.title}. ${s.sizeLine ?? ""}; CPU per call (per row for Scan; calls/s there are ` +
      `rows/s, latency per scan); ${medianOf(repeat)} per row. Targets below.`,
    table(cols, rows, [0]),
  ].join("\n\n");
}

/** raft_propose: one row per mode (proposals in flight), with the core's own figures. */
function raftSection(s: ScenarioSummary, repeat: number): string {
  const cols = [
    "mode",
    "commits/s",
    "p50 µs",
    "p99 µs",
    "leader core µs/entry",
    "fdatasyncs/node/Ready (max)",
    "entries/leader Ready",
  ];
  const rows = s.rows.map((r) => {
    const m = r.median;
    if (r.status !== "ok" || m === undefined) return notOk(r, cols.length);
    const v = m.values ?? {};
    const fixed = (key: string, digits: number) => v[key]?.toFixed(digits) ?? "—";
    return [
      r.label,
      fmtInt(m.opsPerSec),
      fmtUs(m.latency?.p50Ns),
      fmtUs(m.latency?.p99Ns),
      fixed(RAFT_CORE_US, 2),
      fixed(RAFT_FSYNCS_PER_READY, 2),
      fixed(RAFT_ENTRIES_PER_READY, 1),
    ];
  });
  return [
    `## ${s.name}`,
    `${s.title}. ${s.sizeLine ?? ""}; latency from propose to the leader applying the entry; ` +
      "core time: wall time inside the leader's RawNode calls (storage, fsync and transport " +
      `excluded); ${medianOf(repeat)} per row.`,
    table(cols, rows, [0]),
  ].join("\n\n");
}

/**
 * `--scale`: per scenario run at several n, each store's throughput, p99, peak RSS (and
 * per key), write and space amplification after settling (median runs; `scalePoints`).
 */
function scaleSection(summaries: readonly ScenarioSummary[]): string | undefined {
  const points = scalePoints(summaries);
  if (points.length === 0) return undefined;
  const opt = (v: number | undefined, f: (v: number) => string) => (v === undefined ? "—" : f(v));
  const rows = points.map((p) => [
    p.base,
    fmtInt(p.n),
    p.store,
    `${fmtInt(p.opsPerSec)} ${p.unit}/s`,
    opt(p.p99Ns, fmtUs),
    opt(p.cpuUsPerOp, (v) => v.toFixed(1)),
    opt(p.peakRssBytes, (v) => (v / MiB).toFixed(0)),
    opt(p.rssPerKey, (v) => v.toFixed(0)),
    opt(p.rssPerAddedKey, (v) => v.toFixed(0)),
    opt(p.writeAmp, fmtRatio),
    opt(p.spaceAmp, fmtRatio),
    p.settleSeconds === undefined
      ? "—"
      : `${p.settled === false ? "not idle after " : ""}${p.settleSeconds.toFixed(1)} s`,
  ]);
  const cols = [
    "scenario",
    "n",
    "store",
    "throughput",
    "p99 µs",
    "CPU µs/op",
    "peak RSS MiB",
    "RSS B/key",
    "RSS B/added key",
    "write amp",
    "space amp",
    "settle wait",
  ];
  return [
    "## Scale",
    "Each store at each size (median run; the sections above have the details). " +
      "CPU µs/op: the process's CPU time (all threads: background compaction included) " +
      "during the timed phase ÷ its operations; beside the throughput it separates the " +
      "store's cost from time spent descheduled on a shared machine. " +
      "RSS B/key: (peak RSS − the process's RSS before the store opened) ÷ n; RSS B/added " +
      "key: (peak RSS − the same store's peak RSS at the previous size) ÷ the keys added, " +
      "the cost of a key once fixed costs (caches, runtime) are paid. Both include the " +
      "harness's own arrays, the same for every store: fillrandom 28 B/key (key table 16, " +
      "key order 4, one latency sample 8), readrandom up to 40 (its load's table and order, " +
      "then its own). Write amp: bytes the process wrote during the load and its settle ÷ " +
      "keys and values written; space amp: the data directory's du after settling ÷ the " +
      "live keys and values; readrandom's are those of its load (batches of 1,000). " +
      "Settle wait: until the store reported its compactions idle.",
    table(cols, rows, [0, 2]),
  ].join("\n\n");
}

function targetsSection(targets: readonly Target[]): string {
  const fmt = (t: Target, v: number) =>
    t.unit === "µs"
      ? `${v.toFixed(2)} µs`
      : t.unit === "ms"
        ? `${v.toFixed(0)} ms`
        : t.unit === "count"
          ? v.toFixed(2)
          : fmtRatio(v);
  const rows = targets.map((t) => [
    t.name,
    t.measured === undefined ? "—" : fmt(t, t.measured),
    t.goal === undefined ? "(information)" : `${t.atMost ? "≤" : "≥"} ${fmt(t, t.goal)}`,
    t.status === "met"
      ? "**met**"
      : t.status === "not met"
        ? "**not met**"
        : t.note === undefined
          ? t.status
          : `${t.status} (${t.note})`,
  ]);
  return ["## Targets", table(["target", "measured", "goal", "status"], rows, [0, 3])].join("\n\n");
}

export function renderReport(
  machine: MachineInfo,
  opts: ReportOptions,
  summaries: readonly ScenarioSummary[],
  targets: readonly Target[],
): string {
  const sections = [header(machine, opts)];
  for (const s of summaries) {
    const cluster = s.rows.some(
      (r) => CLUSTER_STORES.includes(r.name.split(" ")[0]!) || STEADY_STORES.includes(r.name),
    );
    sections.push(
      s.name === raftPropose.name
        ? raftSection(s, opts.repeat)
        : cluster
          ? clusterSection(s, opts.repeat)
          : s.name === grpcTransport.name
            ? transportSection(s, opts.repeat)
            : s.kind === "limit"
              ? limitSection(s, opts.repeat)
              : storeSection(s, opts.repeat),
    );
  }
  const scale = scaleSection(summaries);
  if (scale !== undefined) sections.push(scale);
  sections.push(targetsSection(targets));
  return `${sections.join("\n\n")}\n`;
}
