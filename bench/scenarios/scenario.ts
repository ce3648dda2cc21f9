/**
 * Scenario interface. A scenario is either run against a store (`kind: "store"`: the
 * worker opens the store in a fresh directory, calls `run`, closes it) or on its own
 * (`kind: "limit"`: raw machine probes). Register new scenarios in ./index.ts.
 */

import type { Measurement } from "../lib/types.js";
import type { BenchStore } from "../stores/store.js";

export interface ScenarioContext {
  /** Fresh, empty directory of this run (the store's directory for store scenarios). */
  dir: string;
  /** Operations to run. */
  n: number;
  /** Value size in bytes. */
  valueSize: number;
  /** Seed of the key order and value bytes (the same for every store). */
  seed: number;
}

export interface ScenarioOutput {
  /** One row per measurement. Store scenarios return exactly one. */
  rows: Measurement[];
  extra?: Record<string, number>;
}

interface ScenarioBase {
  name: string;
  /** One line for the report heading. */
  title: string;
  /** Default operation count (`--n` overrides it). */
  defaultN(quick: boolean): number;
}

export interface StoreScenario extends ScenarioBase {
  kind: "store";
  /** Durability the store is opened with. */
  sync: boolean;
  run(store: BenchStore, ctx: ScenarioContext): Promise<ScenarioOutput>;
}

export interface LimitScenario extends ScenarioBase {
  kind: "limit";
  run(ctx: ScenarioContext): Promise<ScenarioOutput>;
}

export type Scenario = StoreScenario | LimitScenario;
