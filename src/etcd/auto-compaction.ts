/**
 * Auto-compaction as etcd 3.4/3.5 offers it (`--auto-compaction-mode`,
 * `--auto-compaction-retention`; off by default): a policy that, polled with the time and
 * the store's revision, says when to compact and to which revision. It reads no clock and
 * does no I/O: the server polls it (on the leader only: elsewhere `paused`) and sends the
 * compaction through the log like a client's.
 *
 * - periodic, retention T: samples the revision every T/10 (at most every 6 minutes);
 *   once T has passed since it began (then every min(T, 1 h) after the last success) it
 *   compacts to the oldest sample kept, the revision of about T ago.
 * - revision, retention N: every 5 minutes, compacts to (revision - N) when positive and
 *   not the last one compacted.
 */
import { isKvError, KvError } from "../errors.js";

export type AutoCompactionMode = "periodic" | "revision";

export interface AutoCompactionPolicy {
  readonly mode: AutoCompactionMode;
  /** periodic: milliseconds; revision: revisions. */
  readonly retention: number;
}

const HOUR_MS = 3_600_000;
const REVISION_INTERVAL_MS = 5 * 60_000;
const RETRY_DIVISOR = 10;

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: HOUR_MS,
};

/**
 * Parses the flags as etcd does: periodic retention is a duration ("1h", "30m", "1h30m",
 * "5s", "500ms") or a bare number of hours ("1", "0.5"); revision retention a whole
 * number of revisions. A retention of 0 turns auto-compaction off (undefined). Throws
 * KvError INVALID_ARGUMENT for anything else.
 */
export function parseAutoCompaction(
  mode: string,
  retention: string,
): AutoCompactionPolicy | undefined {
  const bad = (why: string) =>
    new KvError(
      "INVALID_ARGUMENT",
      `--auto-compaction-retention ${JSON.stringify(retention)}: ${why}`,
    );
  if (mode !== "periodic" && mode !== "revision") {
    throw new KvError(
      "INVALID_ARGUMENT",
      `--auto-compaction-mode ${JSON.stringify(mode)}: expected "periodic" or "revision"`,
    );
  }
  const text = retention.trim();
  if (mode === "revision") {
    if (!/^\d+$/.test(text)) throw bad("expected a whole number of revisions");
    const n = Number(text);
    if (!Number.isSafeInteger(n)) throw bad("too large");
    return n === 0 ? undefined : { mode, retention: n };
  }
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) ms = Number(text) * HOUR_MS;
  else {
    const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
    if (parts.length === 0 || parts.map((p) => p[0]).join("") !== text) {
      throw bad('expected a duration such as "1h", "30m" or "1h30m", or a number of hours');
    }
    ms = parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0);
  }
  ms = Math.round(ms);
  return ms === 0 ? undefined : { mode, retention: ms };
}

/** Polled by the server: when to compact, and to which revision. */
export class AutoCompactor {
  private started: number | undefined;
  /** periodic: the revisions sampled, oldest first. */
  private readonly samples: number[] = [];
  private nextSample = 0;
  private lastSuccess = 0;
  /** periodic: how long after the last success the next compaction comes. */
  private interval: number;
  /** revision: when the next check is due, and the last revision compacted. */
  private nextCheck = 0;
  private lastCompacted = 0;
  /** A compaction handed out and not yet reported. */
  private inFlight: number | undefined;

  constructor(readonly policy: AutoCompactionPolicy) {
    this.interval = policy.retention;
  }

  private get sampleEvery(): number {
    return Math.min(this.policy.retention, HOUR_MS) / RETRY_DIVISOR;
  }

  /** How often to poll: periodic mode samples every retention/10 (at most 6 min). */
  get pollEveryMs(): number {
    return this.policy.mode === "periodic" ? Math.max(1, this.sampleEvery) : 1000;
  }

  private get kept(): number {
    return Math.floor(this.policy.retention / this.sampleEvery) + 1;
  }

  /**
   * At time `nowMs` (any monotonic clock, milliseconds) with the store at `revision`:
   * the revision to compact to now, or undefined. `paused` (this member does not lead):
   * periodic keeps sampling, nothing is compacted. Nothing more is handed out until
   * `finished` reports the last one.
   */
  poll(nowMs: number, revision: number, paused: boolean): number | undefined {
    if (this.started === undefined) {
      this.started = nowMs;
      this.lastSuccess = nowMs;
      this.nextSample = nowMs;
      this.nextCheck = nowMs + REVISION_INTERVAL_MS;
    }
    if (this.inFlight !== undefined) return undefined;
    if (this.policy.mode === "revision") {
      if (nowMs < this.nextCheck) return undefined;
      this.nextCheck = nowMs + REVISION_INTERVAL_MS;
      if (paused) return undefined;
      const target = revision - this.policy.retention;
      if (target <= 0 || target === this.lastCompacted) return undefined;
      this.inFlight = target;
      return target;
    }
    if (nowMs < this.nextSample) return undefined;
    this.nextSample = nowMs + this.sampleEvery;
    this.samples.push(revision);
    if (this.samples.length > this.kept) this.samples.shift();
    if (paused || nowMs - this.lastSuccess < this.interval) return undefined;
    this.interval = Math.min(this.policy.retention, HOUR_MS);
    this.inFlight = this.samples[0]!;
    return this.inFlight;
  }

  /**
   * Reports the compaction `poll` handed out: `ok` when it succeeded or the revision was
   * compacted already (etcd counts both as success); else it is retried at the next turn.
   */
  finished(ok: boolean, nowMs: number): void {
    if (this.inFlight === undefined) return;
    if (ok) {
      this.lastSuccess = nowMs;
      this.lastCompacted = this.inFlight;
    }
    this.inFlight = undefined;
  }
}

/** What an AutoCompactionRunner drives. */
export interface AutoCompactionTarget {
  /** The store's revision now. */
  revision(): number;
  /** False while this member does not lead (a single node always leads). */
  leads(): boolean;
  /** Compacts to `revision` (through the log on a cluster); rejects when it failed. */
  compact(revision: number): Promise<void>;
  /** Told of each compaction's outcome (for the log). */
  onCompaction?(revision: number, error: unknown): void;
}

/**
 * Polls an AutoCompactor on the monotonic clock, as often as it samples (periodic mode:
 * retention/10, at most every `everyMs`, default 1 s).
 */
export class AutoCompactionRunner {
  private readonly compactor: AutoCompactor;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    policy: AutoCompactionPolicy,
    private readonly target: AutoCompactionTarget,
    everyMs = 1000,
  ) {
    this.compactor = new AutoCompactor(policy);
    this.timer = setInterval(() => this.poll(), Math.min(everyMs, this.compactor.pollEveryMs));
    this.timer.unref();
    this.poll();
  }

  private poll(): void {
    const now = performance.now();
    const revision = this.compactor.poll(now, this.target.revision(), !this.target.leads());
    if (revision === undefined) return;
    this.target.compact(revision).then(
      () => {
        this.compactor.finished(true, performance.now());
        this.target.onCompaction?.(revision, undefined);
      },
      (err: unknown) => {
        // etcd counts "already compacted" as success.
        this.compactor.finished(isKvError(err, "COMPACTED"), performance.now());
        this.target.onCompaction?.(revision, err);
      },
    );
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
