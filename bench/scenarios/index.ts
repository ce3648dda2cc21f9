/**
 * Scenario registry, in report order. To add a scenario, write `./<name>.ts` exporting a
 * `Scenario` and list it here.
 */
import { fillrandom, fillrandomBatch } from "./fill.js";
import { getMemtable, getMiss, getSstable } from "./get.js";
import { grpcGetMemtable, grpcPut, grpcPutConcurrent, grpcScan } from "./grpc.js";
import { limit } from "./limit.js";
import { put } from "./put.js";
import { putConcurrent } from "./put-concurrent.js";
import { mixed5050, overwrite, readrandom } from "./random.js";
import { scan } from "./scan.js";
import type { Scenario } from "./scenario.js";

export const SCENARIOS: readonly Scenario[] = [
  // Each gRPC scenario right after the in-process one it repeats through a server.
  put,
  grpcPut,
  putConcurrent,
  grpcPutConcurrent,
  limit,
  getMemtable,
  grpcGetMemtable,
  getSstable,
  getMiss,
  scan,
  grpcScan,
  fillrandomBatch,
  fillrandom,
  // One fixture; run in this order when selected together (readrandom on the settled load).
  readrandom,
  mixed5050,
  overwrite,
];

export function findScenario(name: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.name === name);
}
