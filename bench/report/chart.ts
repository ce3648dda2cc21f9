/**
 * `--chart FILE.svg`: the run as a hand-written SVG.
 *
 * - Bars: per store scenario (not `grpc_*`, whose rows are transports), one bar per peer:
 *   KV Engine's best row (any API) ÷ that peer's best row, on a log₂ axis centred on 1×
 *   (right of the line: KV Engine faster).
 * - Scale curves (`--scale`): for each scenario run at several sizes, throughput, p99,
 *   peak RSS, write and space amplification against n, one line per store.
 */

import { fmtInt, fmtRatio, fmtUs } from "../lib/format.js";
import { KV_ENGINE, storeLabel } from "../stores/index.js";
import { bestRow, isKvRow, isPeerRow, type RowSummary, type ScenarioSummary } from "./results.js";
import { type ScalePoint, scalePoints } from "./scale.js";

const WIDTH = 960;
const LABEL_W = 250;
const PLOT_X = LABEL_W + 20;
const PLOT_W = WIDTH - PLOT_X - 70;
const BAR_H = 11;
const GROUP_GAP = 10;
/** The ratio axis spans at most 2^-AXIS_MAX_LOG2 .. 2^AXIS_MAX_LOG2. */
const AXIS_MAX_LOG2 = 7;
/** Colour of the i-th store of the chart (KV Engine first). */
const COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#9c755f"];

function esc(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** The store a row belongs to (`classic-level (getSync)` → `classic-level`). */
function storeOf(row: RowSummary): string {
  const i = row.name.indexOf(" (");
  return i < 0 ? row.name : row.name.slice(0, i);
}

/** The colour of `store`: COLORS[i] for the i-th of `stores` (KV Engine first). */
function colorOf(stores: readonly string[], store: string): string {
  const i = stores.indexOf(store);
  return i < 0 ? "#000" : (COLORS[i % COLORS.length] ?? "#000");
}

function text(x: number, y: number, s: string, attrs = ""): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`;
}

interface Bar {
  peer: string;
  ratio: number;
}

function ratioBars(summaries: readonly ScenarioSummary[]): { name: string; bars: Bar[] }[] {
  const groups: { name: string; bars: Bar[] }[] = [];
  for (const s of summaries) {
    if (s.kind !== "store" || s.name.startsWith("grpc_") || s.base !== undefined) continue;
    const kv = bestRow(s, isKvRow);
    if (kv === undefined) continue;
    const peers = [...new Set(s.rows.filter(isPeerRow).map(storeOf))];
    const bars = peers.flatMap((peer) => {
      const best = bestRow(s, (r) => isPeerRow(r) && storeOf(r) === peer);
      return best === undefined
        ? []
        : [{ peer, ratio: kv.median.opsPerSec / best.median.opsPerSec }];
    });
    if (bars.length > 0) groups.push({ name: s.name, bars });
  }
  return groups;
}

/** Width of one legend entry (swatch and label). */
const LEGEND_W = 220;

/** The bar chart, from y = top; returns its SVG and height. */
function barChart(groups: { name: string; bars: Bar[] }[], stores: string[], top: number) {
  const peers = stores.filter((p) => p !== KV_ENGINE);
  const ratios = groups.flatMap((g) => g.bars.map((b) => b.ratio));
  const lo = Math.max(-AXIS_MAX_LOG2, Math.floor(Math.log2(Math.min(0.5, ...ratios))));
  const hi = Math.min(AXIS_MAX_LOG2, Math.ceil(Math.log2(Math.max(2, ...ratios))));
  // Bars beyond the axis stop at its end (their label says the value).
  const x = (r: number) =>
    PLOT_X + ((Math.min(hi, Math.max(lo, Math.log2(r))) - lo) / (hi - lo)) * PLOT_W;
  const out: string[] = [
    text(
      10,
      top + 16,
      "KV Engine ÷ peer (best API of each), per scenario; log scale",
      'font-weight="bold"',
    ),
  ];
  // The legend wraps: as many 220-pixel entries per line as fit after PLOT_X.
  const perLine = Math.max(1, Math.floor(PLOT_W / LEGEND_W));
  peers.forEach((p, i) => {
    const lx = PLOT_X + (i % perLine) * LEGEND_W;
    const ly = top + 26 + Math.floor(i / perLine) * 16;
    out.push(`<rect x="${lx}" y="${ly}" width="10" height="10" fill="${colorOf(stores, p)}"/>`);
    out.push(text(lx + 14, ly + 9, storeLabel(p)));
  });
  let y = top + 50 + (Math.ceil(peers.length / perLine) - 1) * 16;
  const axisTop = y;
  for (const g of groups) {
    out.push(text(LABEL_W, y + (g.bars.length * BAR_H) / 2 + 4, g.name, 'text-anchor="end"'));
    for (const b of g.bars) {
      const color = colorOf(stores, b.peer);
      const x0 = Math.min(x(1), x(b.ratio));
      const w = Math.max(1, Math.abs(x(b.ratio) - x(1)));
      out.push(
        `<rect x="${x0.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H - 2}" fill="${color}"/>`,
      );
      const right = b.ratio >= 1;
      out.push(
        text(
          right ? x0 + w + 3 : x0 - 3,
          y + BAR_H - 3,
          fmtRatio(b.ratio),
          `font-size="9" ${right ? "" : 'text-anchor="end"'}`,
        ),
      );
      y += BAR_H;
    }
    y += GROUP_GAP;
  }
  for (let e = lo; e <= hi; e++) {
    const gx = x(2 ** e).toFixed(1);
    const stroke = e === 0 ? 'stroke="#000"' : 'stroke="#ccc" stroke-dasharray="2,3"';
    out.push(`<line x1="${gx}" y1="${axisTop - 4}" x2="${gx}" y2="${y}" ${stroke}/>`);
    out.push(
      text(
        Number(gx),
        y + 12,
        e >= 0 ? `${2 ** e}×` : `1/${2 ** -e}×`,
        'font-size="9" text-anchor="middle"',
      ),
    );
  }
  return { svg: out.join("\n"), height: y + 20 - top };
}

/** A figure of the scale curves: its panel title and how to read it from a point. */
interface ScaleMetric {
  title: (unit: string) => string;
  value: (p: ScalePoint) => number | undefined;
  format: (v: number) => string;
}

const SCALE_METRICS: readonly ScaleMetric[] = [
  { title: (unit) => `${unit}/s`, value: (p) => p.opsPerSec, format: fmtInt },
  { title: () => "p99 latency, µs", value: (p) => p.p99Ns, format: (v) => fmtUs(v) },
  {
    title: () => "peak RSS, MiB",
    value: (p) => p.peakRssBytes,
    format: (v) => (v / (1024 * 1024)).toFixed(0),
  },
  { title: () => "write amplification (settled)", value: (p) => p.writeAmp, format: fmtRatio },
  { title: () => "space amplification (settled)", value: (p) => p.spaceAmp, format: fmtRatio },
];

const SCALE_PANEL_H = 150;

/**
 * Scale curves: for each base scenario run at several n (a column) and each of
 * SCALE_METRICS (a row), the metric against n (log axis), one line per store.
 */
function scaleCharts(summaries: readonly ScenarioSummary[], stores: string[], top: number) {
  const points = scalePoints(summaries);
  const bases = [...new Set(points.map((p) => p.base))];
  if (bases.length === 0) return { svg: "", height: 0 };
  const w = (WIDTH - 60) / bases.length - 40;
  const h = SCALE_PANEL_H;
  const rowH = h + 70;
  const out: string[] = [];
  SCALE_METRICS.forEach((metric, mi) => {
    const panelTop = top + mi * rowH;
    bases.forEach((base, bi) => {
      const of = points.filter((p) => p.base === base);
      const left = 60 + bi * (w + 40);
      const ns = [...new Set(of.map((p) => p.n))];
      const lines = new Map<string, [number, number][]>();
      for (const p of of) {
        const v = metric.value(p);
        if (v !== undefined) lines.set(p.store, [...(lines.get(p.store) ?? []), [p.n, v]]);
      }
      const max = Math.max(Number.MIN_VALUE, ...[...lines.values()].flat().map((q) => q[1]));
      const [n0, n1] = [Math.min(...ns), Math.max(...ns)];
      const px = (n: number) =>
        left +
        (n1 === n0 ? w / 2 : ((Math.log(n) - Math.log(n0)) / (Math.log(n1) - Math.log(n0))) * w);
      const py = (v: number) => panelTop + 30 + h - (v / max) * h;
      const bottom = panelTop + 30 + h;
      out.push(
        text(
          left,
          panelTop + 16,
          `${base}: ${metric.title(of[0]?.unit ?? "ops")} against n`,
          'font-weight="bold"',
        ),
        `<line x1="${left}" y1="${bottom}" x2="${left + w}" y2="${bottom}" stroke="#000"/>`,
        `<line x1="${left}" y1="${panelTop + 30}" x2="${left}" y2="${bottom}" stroke="#000"/>`,
        text(left - 4, panelTop + 34, metric.format(max), 'font-size="9" text-anchor="end"'),
        text(left - 4, bottom, "0", 'font-size="9" text-anchor="end"'),
      );
      for (const n of ns)
        out.push(text(px(n), bottom + 14, fmtInt(n), 'font-size="9" text-anchor="middle"'));
      [...lines.entries()].forEach(([store, pts], i) => {
        const color = colorOf(stores, store);
        const d = pts.map(([n, v]) => `${px(n).toFixed(1)},${py(v).toFixed(1)}`).join(" ");
        out.push(`<polyline points="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
        for (const [n, v] of pts) {
          out.push(
            `<circle cx="${px(n).toFixed(1)}" cy="${py(v).toFixed(1)}" r="2.5" fill="${color}"/>`,
          );
        }
        const last = pts[pts.length - 1];
        if (last !== undefined) {
          out.push(
            text(
              px(last[0]) + 4,
              py(last[1]) + 3,
              metric.format(last[1]),
              `font-size="9" fill="${color}"`,
            ),
          );
        }
        out.push(
          text(
            left + 8,
            panelTop + 40 + i * 12,
            storeLabel(store),
            `font-size="9" fill="${color}"`,
          ),
        );
      });
    });
  });
  return { svg: out.join("\n"), height: SCALE_METRICS.length * rowH };
}

/** The SVG document for `summaries`. */
export function renderChart(summaries: readonly ScenarioSummary[], title: string): string {
  const peers = [...new Set(summaries.flatMap((s) => s.rows.filter(isPeerRow).map(storeOf)))];
  const stores = [KV_ENGINE, ...peers];
  // A --scale run has no unsized scenario: no bars then, only the scale curves.
  const groups = ratioBars(summaries);
  const bars = groups.length === 0 ? { svg: "", height: 0 } : barChart(groups, stores, 30);
  const scale = scaleCharts(summaries, stores, 30 + bars.height);
  const height = 40 + bars.height + scale.height;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${esc(title)}</title>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    text(10, 18, title, 'font-size="13" font-weight="bold"'),
    bars.svg,
    scale.svg,
    "</svg>",
    "",
  ].join("\n");
}
