/** Types shared by the benchmark driver (main.ts) and its child processes (worker.ts). */

/** Latency percentiles of one measurement, in nanoseconds (one sample per operation). */
export interface LatencySummary {
  samples: number;
  meanNs: number;
  p50Ns: number;
  p90Ns: number;
  p99Ns: number;
  p999Ns: number;
  maxNs: number;
}

/** One measured row: a store under a scenario, or one machine-limit probe. */
export interface Measurement {
  /**
   * Row name: the probe name for `limit`; for store scenarios "" from the scenario (the
   * worker fills in the store name) or a variant's name (e.g. "getSync"), which the worker
   * turns into `<store> (<variant>)`.
   */
  label: string;
  ops: number;
  seconds: number;
  opsPerSec: number;
  /** Absent when per-op latency is meaningless (e.g. the memory-copy probe). */
  latency?: LatencySummary;
  /** Bytes moved per second, for bandwidth probes. */
  bytesPerSec?: number;
  /** Human description of the row. */
  description?: string;
  /** Further figures of the row, by name (e.g. raft_propose's leader core µs per entry). */
  values?: Record<string, number>;
}

/** What the driver asks a child process to run. Passed as JSON in argv[2]. */
export interface WorkerRequest {
  /**
   * The scenarios to run, in order: one, or several store scenarios that share a fixture
   * (they run on one populated store; the worker prints one result line per scenario).
   */
  scenarios: string[];
  /** A registered store name, or "-" for scenarios that use no store (`limit`). */
  store: string;
  /** A fresh, empty directory owned by this run; the driver deletes it afterwards. */
  dir: string;
  n: number;
  valueSize: number;
  seed: number;
  /** `--rate` (ScenarioContext.rate), when given. */
  rate?: number;
}

export type WorkerStatus = "ok" | "missing" | "error" | "timeout";

/** The one JSON line a worker prints on stdout (after RESULT_PREFIX). */
export interface WorkerResult {
  scenario: string;
  store: string;
  status: WorkerStatus;
  /** Why the run is not "ok". */
  error?: string;
  rows: Measurement[];
  /** Scenario- or store-specific counters (e.g. KV Engine commit stats). */
  extra: Record<string, number>;
  /**
   * process.resourceUsage().maxRSS of the child, in bytes, when the scenario ended (for
   * scenarios sharing a child: the peak so far, the fixture's fill included).
   */
  peakRssBytes: number;
}

/** Prefix of the worker's result line, so stray stdout output cannot be mistaken for it. */
export const RESULT_PREFIX = "BENCH_RESULT ";
