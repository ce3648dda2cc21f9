/** Latency percentiles and medians. */
import type { LatencySummary } from "./types.js";

/** Nearest-rank percentile of an ascending-sorted array (q in [0, 1]). */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sorted.length);
  const i = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[i] ?? Number.NaN;
}

/** Summarizes per-operation latencies (ns). Sorts a copy; the input is left alone. */
export function summarize(latenciesNs: Float64Array): LatencySummary {
  const sorted = Float64Array.from(latenciesNs).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    samples: sorted.length,
    meanNs: sorted.length > 0 ? sum / sorted.length : Number.NaN,
    p50Ns: percentile(sorted, 0.5),
    p90Ns: percentile(sorted, 0.9),
    p99Ns: percentile(sorted, 0.99),
    p999Ns: percentile(sorted, 0.999),
    maxNs: sorted.length > 0 ? (sorted[sorted.length - 1] ?? Number.NaN) : Number.NaN,
  };
}

/**
 * The median element of `items` by `score` (the lower median for an even count, so that
 * the result is always a real run, never an average of two).
 */
export function medianBy<T>(items: readonly T[], score: (item: T) => number): T | undefined {
  if (items.length === 0) return undefined;
  const sorted = [...items].sort((a, b) => score(a) - score(b));
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

const ORIGIN = process.hrtime.bigint();

/** Monotonic nanoseconds since this module loaded, as a number (exact for 104 days). */
export function nowNs(): number {
  return Number(process.hrtime.bigint() - ORIGIN);
}
