/**
 * Scenario registry, in report order. To add a scenario, write `./<name>.ts` exporting a
 * `Scenario` and list it here.
 */
import { getMemtable, getMiss, getSstable } from "./get.js";
import { limit } from "./limit.js";
import { put } from "./put.js";
import { putConcurrent } from "./put-concurrent.js";
import { scan } from "./scan.js";
import type { Scenario } from "./scenario.js";

export const SCENARIOS: readonly Scenario[] = [
  put,
  putConcurrent,
  limit,
  getMemtable,
  getSstable,
  getMiss,
  scan,
];

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
