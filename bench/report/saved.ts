/**
 * Results saved by `--json`: reading them back (`--compare`, `--render`) and merging the
 * summaries of several runs into one report (`--render a.json,b.json`, e.g. a `--scale`
 * run's smaller sizes and its largest, run separately, or KV Engine's run and a
 * `--peers-only` one).
 */
import * as fs from "node:fs";
import type { MachineInfo } from "../lib/machine.js";
import type { ReportOptions } from "./report.js";
import type { ScenarioSummary } from "./results.js";

/** The parts of a `--json` file that are read back. */
export interface BenchDoc {
  machine?: Partial<MachineInfo>;
  options?: Partial<ReportOptions>;
  scenarios: ScenarioSummary[];
}

/** Reads a `--json` file; throws (naming the file) when it holds no scenarios. */
export function readDoc(file: string): BenchDoc {
  const doc = JSON.parse(fs.readFileSync(file, "utf8")) as Partial<BenchDoc>;
  if (!Array.isArray(doc.scenarios)) throw new Error(`${file}: not a --json result (no scenarios)`);
  return doc as BenchDoc;
}

/**
 * The scenarios of `runs` as one list. A scenario present in several runs keeps the first
 * run's description and gathers the rows of all of them, a row (store) present in several
 * being the last run's (so a `--peers-only` run adds its peers to a run with KV Engine's
 * rows). Scenarios run at several sizes (`base`) come after the others, grouped by base
 * scenario (in order of first appearance) and ordered by n within each group.
 */
export function mergeSummaries(runs: readonly (readonly ScenarioSummary[])[]): ScenarioSummary[] {
  const byName = new Map<string, ScenarioSummary>();
  for (const run of runs) {
    for (const s of run) {
      const seen = byName.get(s.name);
      if (seen === undefined) {
        byName.set(s.name, { ...s, rows: [...s.rows] });
        continue;
      }
      for (const row of s.rows) {
        const i = seen.rows.findIndex((r) => r.name === row.name);
        if (i < 0) seen.rows.push(row);
        else seen.rows[i] = row;
      }
    }
  }
  const all = [...byName.values()];
  const bases = [...new Set(all.flatMap((s) => (s.base === undefined ? [] : [s.base])))];
  const sized = all
    .filter((s) => s.base !== undefined)
    .sort((a, b) => bases.indexOf(a.base!) - bases.indexOf(b.base!) || a.n - b.n);
  return [...all.filter((s) => s.base === undefined), ...sized];
}
