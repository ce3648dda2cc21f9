/**
 * `--compare FILE.json`: this run against an earlier `--json` file, per scenario and row:
 * the median throughput before and now, and the change. A KV Engine row that lost more
 * than REGRESSION of its throughput is flagged, and so is a scenario where KV Engine's
 * best row ÷ the best peer row (the ratio that does not move with the machine's mood)
 * lost more than REGRESSION.
 */
import { fmtInt, table } from "../lib/format.js";
import { bestRow, isKvRow, isPeerRow, type RowSummary, type ScenarioSummary } from "./results.js";
import { readDoc } from "./saved.js";

/** A loss beyond this fraction is flagged. */
export const REGRESSION = 0.1;

const opsOf = (r: RowSummary | undefined) => (r?.status === "ok" ? r.median?.opsPerSec : undefined);

/** KV Engine's best row ÷ the best peer row (any API), or undefined. */
function kvOverBestPeer(s: ScenarioSummary): number | undefined {
  const kv = bestRow(s, isKvRow);
  const peer = bestRow(s, isPeerRow);
  return kv && peer && kv.median.opsPerSec / peer.median.opsPerSec;
}

function pct(change: number): string {
  return `${change >= 0 ? "+" : ""}${(100 * change).toFixed(1)}%`;
}

/** The Markdown section comparing `now` with the run saved in `file`. */
export function compareSection(file: string, now: readonly ScenarioSummary[]): string {
  const before = readDoc(file);
  const rows: string[][] = [];
  let flagged = 0;
  for (const s of now) {
    const old = before.scenarios.find((x) => x.name === s.name);
    if (old === undefined) {
      rows.push([s.name, "", "", "", "", "not in the earlier run"]);
      continue;
    }
    const note = old.n === s.n ? "" : `n was ${fmtInt(old.n)}, now ${fmtInt(s.n)}`;
    for (const r of s.rows) {
      const a = opsOf(old.rows.find((x) => x.name === r.name));
      const b = opsOf(r);
      if (a === undefined || b === undefined) continue;
      const change = b / a - 1;
      const bad = isKvRow(r) && change < -REGRESSION;
      if (bad) flagged++;
      rows.push([
        s.name,
        r.label,
        fmtInt(a),
        fmtInt(b),
        pct(change),
        [bad ? "**regression**" : "", note].filter((x) => x !== "").join("; "),
      ]);
    }
    const ra = kvOverBestPeer(old);
    const rb = kvOverBestPeer(s);
    if (ra !== undefined && rb !== undefined && s.kind === "store") {
      const change = rb / ra - 1;
      const bad = change < -REGRESSION;
      if (bad) flagged++;
      rows.push([
        s.name,
        "*KV Engine ÷ best peer*",
        `${ra.toFixed(2)}×`,
        `${rb.toFixed(2)}×`,
        pct(change),
        bad ? "**ratio regression**" : "",
      ]);
    }
  }
  const which = [before.machine?.gitCommit, before.machine?.date].filter((x) => x !== undefined);
  const head =
    `## Compared with ${file}${which.length > 0 ? ` (${which.join(", ")})` : ""}\n\n` +
    `Median throughput per row, before and now; flagged: a KV Engine row, or KV Engine's ` +
    `best row ÷ the best peer's, down by more than ${100 * REGRESSION}% ` +
    `(${flagged === 0 ? "none" : `${flagged} flagged`}). Absolute rates move with the ` +
    "machine's load: a flag on a KV Engine row with an unflagged ratio row is the machine.";
  const header = ["scenario", "row", "before", "now", "change", "flag"];
  return [head, table(header, rows, [0, 1, 5])].join("\n\n");
}
