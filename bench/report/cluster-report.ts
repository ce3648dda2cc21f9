/**
 * The report sections of the cluster scenarios (bench/scenarios/cluster.ts): latencies in
 * milliseconds, each row's description (client processes, calls in flight, failed calls),
 * and the ratio KV Engine cluster ÷ the row (the row of the same variant of the baseline).
 */

import { fmtInt, fmtRatio, table } from "../lib/format.js";
import {
  FAILOVER_MAX_MS,
  FAILOVER_MEDIAN_MS,
  failover,
  LEADER_CHANGES,
  TERM_CHANGES,
} from "../scenarios/cluster.js";
import { storeLabel } from "../stores/index.js";
import type { RowSummary, ScenarioSummary } from "./results.js";

function ms(ns: number | undefined): string {
  return ns === undefined || Number.isNaN(ns) ? "—" : (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1);
}

function runs(r: RowSummary): string {
  return r.okRuns === r.attempted ? String(r.okRuns) : `${r.okRuns} of ${r.attempted}`;
}

function failed(r: RowSummary, columns: number): string[] {
  const what = r.error === undefined ? r.status : `${r.status}: ${r.error}`;
  const cells = [r.label, what.replaceAll("|", "\\|")];
  while (cells.length < columns) cells.push("");
  return cells;
}

function medianOf(repeat: number): string {
  return repeat === 1 ? "1 run" : `median of ${repeat} runs`;
}

function failures(s: ScenarioSummary): string[] {
  return s.rows.flatMap((r) =>
    (r.failures ?? []).map(
      (f) => `A failed run of ${r.label}: ${f.split("\n")[0]!.replaceAll("|", "\\|")}`,
    ),
  );
}

/** cluster_put, cluster_get, cluster_scan, catch_up, cluster_steady. */
function throughputSection(s: ScenarioSummary, repeat: number): string {
  const baseline = s.baseline ?? s.rows[0]?.name ?? "";
  const opsOf = (name: string) => {
    const row = s.rows.find((r) => r.name === name);
    return row?.status === "ok" ? row.median?.opsPerSec : undefined;
  };
  const steady = s.rows.some((r) => r.median?.values?.[LEADER_CHANGES] !== undefined);
  const cols = [
    "row",
    `${s.unit}/s`,
    "p50 ms",
    "p99 ms",
    "max ms",
    `${storeLabel(baseline)} ÷ row`,
    ...(steady ? ["leader changes", "term changes"] : []),
    "runs",
    "what",
  ];
  const rows = s.rows.map((r) => {
    const m = r.median;
    if (r.status !== "ok" || m === undefined) return failed(r, cols.length);
    const twin = r.variant === undefined ? baseline : `${baseline} (${r.variant})`;
    const ref = opsOf(twin);
    const ratio =
      r.name === twin ? "baseline" : ref === undefined ? "—" : fmtRatio(ref / m.opsPerSec);
    const v = m.values ?? {};
    return [
      r.label,
      s.unit === "MB" ? m.opsPerSec.toFixed(2) : fmtInt(m.opsPerSec),
      ms(m.latency?.p50Ns),
      ms(m.latency?.p99Ns),
      ms(m.latency?.maxNs),
      ratio,
      ...(steady ? [String(v[LEADER_CHANGES] ?? "—"), String(v[TERM_CHANGES] ?? "—")] : []),
      runs(r),
      m.description ?? "",
    ];
  });
  return [
    `## ${s.name}: ${s.title}`,
    `${s.sizeLine ?? ""} Each row: ${medianOf(repeat)}.`,
    table(cols, rows, [0, cols.length - 1]),
    ...failures(s),
  ].join("\n\n");
}

function failoverSection(s: ScenarioSummary, repeat: number): string {
  const cols = ["store", "median ms", "max ms", "÷ KV Engine cluster median", "runs", "rounds"];
  const kv = s.rows.find((r) => r.name === s.baseline)?.median?.values?.[FAILOVER_MEDIAN_MS];
  const rows = s.rows.map((r) => {
    const m = r.median;
    if (r.status !== "ok" || m === undefined) return failed(r, cols.length);
    const median = m.values?.[FAILOVER_MEDIAN_MS];
    return [
      r.label,
      median?.toFixed(0) ?? "—",
      m.values?.[FAILOVER_MAX_MS]?.toFixed(0) ?? "—",
      r.name === s.baseline
        ? "baseline"
        : kv === undefined || median === undefined
          ? "—"
          : fmtRatio(median / kv),
      runs(r),
      m.description ?? "",
    ];
  });
  return [
    `## ${s.name}: ${s.title}`,
    `${s.sizeLine ?? ""} Each row: the run with the ${medianOf(repeat)} by median failover.`,
    table(cols, rows, [0, cols.length - 1]),
    ...failures(s),
  ].join("\n\n");
}

/** The section of a cluster scenario. */
export function clusterSection(s: ScenarioSummary, repeat: number): string {
  return s.name === failover.name ? failoverSection(s, repeat) : throughputSection(s, repeat);
}
