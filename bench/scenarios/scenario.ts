/**
 * Scenario interface. A scenario is either run against a store (`kind: "store"`: the
 * worker opens the store in a fresh directory, calls `run`, closes it) or on its own
 * (`kind: "limit"`: raw machine probes). Register new scenarios in ./index.ts.
 *
 * A store scenario may name a `fixture`: a store populated before the scenario runs.
 * Selected scenarios with the same fixture share one child process per store and run:
 * the worker populates the store once, then runs them one after the other (in registry
 * order) on the same store.
 */

import type { Measurement } from "../lib/types.js";
import type { BenchStore, StoreOpenOptions } from "../stores/store.js";

export interface ScenarioContext {
  /** Fresh, empty directory of this run (the store's directory for store scenarios). */
  dir: string;
  /**
   * Operations to run; for a scenario with a fixture, the number of keys the fixture
   * writes (the scenario derives its operation count from it).
   */
  n: number;
  /** Value size in bytes. */
  valueSize: number;
  /** Seed of the key order and value bytes (the same for every store). */
  seed: number;
  /**
   * Store scenarios: opens the same store (adapter and options) on another directory,
   * e.g. a copy of the store's (crash_recovery).
   */
  openAt?(dir: string): Promise<BenchStore>;
  /** `--rate`: the calls per second of the open-loop scenarios (cluster_open_loop, cluster_steady). */
  rate?: number;
}

export interface ScenarioOutput {
  /**
   * One row per measurement. Store scenarios return the store's row first (label "");
   * further rows measure another API of the same store (label = the variant's name, e.g.
   * "getSync"), reported as separate rows `<store> (<variant>)`.
   */
  rows: Measurement[];
  extra?: Record<string, number>;
}

/** Untimed set-up shared by the scenarios that name it. */
export interface Fixture {
  name: string;
  /** Store options beyond `sync` (e.g. a memtable large enough to hold every key). */
  storeOptions: Omit<StoreOpenOptions, "sync">;
  /** Writes the data set (n keys); returns counters for the report (e.g. fill seconds). */
  populate(store: BenchStore, ctx: ScenarioContext): Promise<Record<string, number>>;
}

interface ScenarioBase {
  name: string;
  /**
   * A copy of a registered scenario at another n (`--scale`): that scenario's name, which
   * the worker runs; `name` tells the copies apart in the report.
   */
  base?: string;
  /** One line for the report heading. */
  title: string;
  /** Default operation count (`--n` overrides it). */
  defaultN(quick: boolean): number;
  /** What the report's size line says about `n` (default: "n = <n> puts, ..."). */
  sizeLine?(n: number, valueSize: number): string;
  /** Unit of the throughput column (default "ops"; e.g. "rows" for scans). */
  unit?: string;
  /** n is a time in milliseconds (the cluster scenarios' windows): `--duration S` sets it. */
  nIsMilliseconds?: boolean;
  /** Run only when named in `--scenarios` (e.g. a 10-minute soak), not by default. */
  optIn?: boolean;
  /** A run may take this long at n (the harness's `--timeout` is raised to it). */
  minTimeoutSeconds?(n: number): number;
}

export interface StoreScenario extends ScenarioBase {
  kind: "store";
  /** Durability the store is opened with. */
  sync: boolean;
  fixture?: Fixture;
  /**
   * Peers run in this scenario in addition to the default ones when `--peers` is not
   * given (e.g. RocksDB in the write-heavy scenarios). Scenarios sharing a fixture must
   * list the same.
   */
  extraPeers?: readonly string[];
  /**
   * The exact stores this scenario runs, the first being the baseline of the report's
   * ratio column (default: KV Engine, then the peers). `--peers` and `extraPeers` do not
   * apply. Scenarios share a child only when they share this list (the same array).
   */
  stores?: readonly string[];
  run(store: BenchStore, ctx: ScenarioContext): Promise<ScenarioOutput>;
}

export interface LimitScenario extends ScenarioBase {
  kind: "limit";
  run(ctx: ScenarioContext): Promise<ScenarioOutput>;
}

export type Scenario = StoreScenario | LimitScenario;
