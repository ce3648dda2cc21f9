/**
 * Results saved by `--json`: reading them back (`--compare`, `--render`) and merging the
 * summaries of several runs into one report (`--render a.json,b.json`, e.g. a `--scale`
 * run's smaller sizes and its largest, run separately).
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
 * The scenarios of `runs` as one list: a scenario present in several runs is taken from the
 * last of them; scenarios run at several sizes (`base`) come after the others, grouped by
 * base scenario (in order of first appearance) and ordered by n within each group.
 */
export function mergeSummaries(runs: readonly (readonly ScenarioSummary[])[]): ScenarioSummary[] {
  const byName = new Map<string, ScenarioSummary>();
  for (const run of runs) for (const s of run) byName.set(s.name, s);
  const all = [...byName.values()];
  const bases = [...new Set(all.flatMap((s) => (s.base === undefined ? [] : [s.base])))];
  const sized = all
    .filter((s) => s.base !== undefined)
    .sort((a, b) => bases.indexOf(a.base!) - bases.indexOf(b.base!) || a.n - b.n);
  return [...all.filter((s) => s.base === undefined), ...sized];
}
