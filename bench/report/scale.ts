/**
 * `--scale` figures: for each scenario run at several sizes (a summary with `base`), each
 * store's numbers at each size, as the Scale table, the chart's scale curves and the scale
 * targets use them.
 */
import { sizeName } from "../scenarios/index.js";
import { KV_ENGINE } from "../stores/index.js";
import type { ScenarioSummary, Target } from "./results.js";

const CLASSIC = "classic-level";

/**
 * Space amplifications closer than this count as equal in the write-amplification target
 * (1.004 against 1.003 is the same space: a few tables' worth of rounding, not a trade).
 */
export const SPACE_AMP_TOLERANCE = 0.01;

/** One store at one size of one scenario (its median run). */
export interface ScalePoint {
  /** The registered scenario (`fillrandom`), not the sized copy (`fillrandom@4M`). */
  base: string;
  n: number;
  /** The store's row name (no variants: a store's main API only). */
  store: string;
  unit: string;
  opsPerSec: number;
  p99Ns?: number;
  /** CPU time of the process (all threads) during the timed phase ÷ its operations, µs. */
  cpuUsPerOp?: number;
  peakRssBytes?: number;
  /** (peak RSS − RSS before the store was opened) ÷ n. */
  rssPerKey?: number;
  /**
   * (peak RSS − the same store's peak RSS at the next smaller size) ÷ the keys added: the
   * memory a key costs once fixed costs (caches, the runtime) are paid. Absent at the
   * smallest size.
   */
  rssPerAddedKey?: number;
  /** Bytes the process wrote (load and settle) ÷ the keys and values written. */
  writeAmp?: number;
  /** The data directory's size after settling ÷ the live keys and values. */
  spaceAmp?: number;
  /** The store reported its compactions idle before the settle wait ran out. */
  settled?: boolean;
  settleSeconds?: number;
}

/** A ratio, or undefined when either side is missing or the divisor is 0. */
function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

/**
 * The points of every sized scenario in `summaries` (rows that ran "ok"), ordered by base
 * scenario (first appearance), then n, then the summary's row order.
 */
export function scalePoints(summaries: readonly ScenarioSummary[]): ScalePoint[] {
  const sized = summaries.filter((s) => s.base !== undefined);
  const bases = [...new Set(sized.map((s) => s.base!))];
  const points: ScalePoint[] = [];
  for (const base of bases) {
    const runs = sized.filter((s) => s.base === base).sort((a, b) => a.n - b.n);
    const previous = new Map<string, { n: number; rss: number | undefined }>();
    for (const s of runs) {
      for (const r of s.rows) {
        const m = r.median;
        if (r.variant !== undefined || r.status !== "ok" || m === undefined) continue;
        const e = r.extra ?? {};
        const p: ScalePoint = { base, n: s.n, store: r.name, unit: s.unit, opsPerSec: m.opsPerSec };
        if (m.latency !== undefined) p.p99Ns = m.latency.p99Ns;
        const cpu = e["timedCpuSeconds"];
        if (cpu !== undefined && m.ops > 0) p.cpuUsPerOp = (cpu * 1e6) / m.ops;
        const rss = r.peakRssBytes;
        if (rss !== undefined) {
          p.peakRssBytes = rss;
          const start = e["rssAtOpenBytes"];
          if (start !== undefined) p.rssPerKey = (rss - start) / s.n;
          const prev = previous.get(r.name);
          if (prev?.rss !== undefined && s.n > prev.n) {
            p.rssPerAddedKey = (rss - prev.rss) / (s.n - prev.n);
          }
        }
        previous.set(r.name, { n: s.n, rss });
        const writeAmp = ratio(e["writtenBytes"], e["userBytes"]);
        if (writeAmp !== undefined) p.writeAmp = writeAmp;
        const spaceAmp = ratio(e["dataDirBytes"], e["logicalBytes"]);
        if (spaceAmp !== undefined) p.spaceAmp = spaceAmp;
        if (e["settled"] !== undefined) p.settled = e["settled"] === 1;
        if (e["settleSeconds"] !== undefined) p.settleSeconds = e["settleSeconds"];
        points.push(p);
      }
    }
  }
  return points;
}

/**
 * The issue's growth targets, per base scenario run at two sizes or more (KV Engine ≥ the
 * best peer at each size is `evaluateTargets`' best-peer target of every sized scenario):
 * - KV Engine's throughput at the largest size ≥ half of its throughput at the smallest;
 * - at the largest size, KV Engine's write amplification ≤ classic-level's, met only when its
 *   space amplification is not above classic-level's either (within SPACE_AMP_TOLERANCE)
 *   and both stores settled;
 * - (information) KV Engine's RSS per added key between the two largest sizes, in bytes.
 */
export function scaleTargets(points: readonly ScalePoint[]): Target[] {
  const targets: Target[] = [];
  for (const base of [...new Set(points.map((p) => p.base))]) {
    const of = points.filter((p) => p.base === base);
    const sizes = [...new Set(of.map((p) => p.n))].sort((a, b) => a - b);
    if (sizes.length < 2) continue;
    const small = sizes[0]!;
    const large = sizes[sizes.length - 1]!;
    const at = (n: number, store: string) => of.find((p) => p.n === n && p.store === store);
    const kvLarge = at(large, KV_ENGINE);
    const kvSmall = at(small, KV_ENGINE);
    const tag = `${base}@${sizeName(large)}`;

    const growth = `${base}: KV Engine ${of[0]!.unit}/s at ${sizeName(large)} ÷ at ${sizeName(small)}`;
    const kept = ratio(kvLarge?.opsPerSec, kvSmall?.opsPerSec);
    targets.push(
      kept === undefined
        ? { name: growth, goal: 0.5, status: "n/a", note: "not measured at both sizes" }
        : { name: growth, measured: kept, goal: 0.5, status: kept >= 0.5 ? "met" : "not met" },
    );

    const classic = at(large, CLASSIC);
    const amp = `${tag}: KV Engine write amp ÷ ${CLASSIC}'s (at space amp ≤ ${CLASSIC}'s, settled)`;
    const ampRatio = ratio(kvLarge?.writeAmp, classic?.writeAmp);
    if (ampRatio === undefined || kvLarge === undefined || classic === undefined) {
      targets.push({ name: amp, goal: 1, atMost: true, status: "n/a", note: "not measured" });
    } else {
      const notes: string[] = [];
      if (kvLarge.settled === false || classic.settled === false) notes.push("not settled");
      const spaceOk =
        kvLarge.spaceAmp !== undefined &&
        classic.spaceAmp !== undefined &&
        kvLarge.spaceAmp <= classic.spaceAmp + SPACE_AMP_TOLERANCE;
      if (!spaceOk) notes.push("space amp above classic-level's");
      const met = ampRatio <= 1 && notes.length === 0;
      targets.push({
        name: amp,
        measured: ampRatio,
        goal: 1,
        atMost: true,
        status: met ? "met" : "not met",
        ...(notes.length > 0 ? { note: notes.join(", ") } : {}),
      });
    }

    const perKey = kvLarge?.rssPerAddedKey;
    if (perKey !== undefined) {
      const second = sizes[sizes.length - 2]!;
      targets.push({
        name: `${base}: KV Engine peak RSS bytes per key added from ${sizeName(second)} to ${sizeName(large)}`,
        measured: perKey,
        unit: "count",
        status: "info",
      });
    }
  }
  return targets;
}
