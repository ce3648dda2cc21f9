/**
 * CompactionScheduler: decides when to compact, runs one compaction at a time (in the
 * worker thread, on the store's file system, or inline: compactionMode), installs its
 * result as one version edit, and retries failures with back-off.
 *
 * Install order (docs/design.md, "Compaction"): the job writes and fsyncs its outputs and
 * the directory; the scheduler records "delete inputs, add outputs" in the manifest
 * (fsynced) and installs the new version; the inputs are deleted by the obsolete-file
 * sweep once no referenced version lists them (open iterators and snapshots keep reading
 * them until they close). Outputs of a failed or abandoned job never reach the manifest;
 * inline jobs remove them, and the sweep at the next open removes a worker's leftovers.
 */
import {
  type CompactionResult,
  isCompactionAborted,
  runCompaction,
} from "../compaction/compaction-job.js";
import type { ResolvedCompactionOptions } from "../compaction/options.js";
import {
  type CompactionPlan,
  compactionEdit,
  compactionJob,
  isTrivialMove,
  outputNumbersNeeded,
  pickCompaction,
  planRange,
  trivialMoveEdit,
} from "../compaction/picker.js";
import { CompactionWorker } from "../compaction/worker-pool.js";
import type { FlushJob } from "../compaction/worker-protocol.js";
import { isKvError, isNoSpace, KvError } from "../errors.js";
import type { TableOptions } from "../sstable/table-options.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { VersionSet } from "../version/version-set.js";
import type { FileSystem } from "../vfs/file-system.js";
import type { StoreEvent } from "./events.js";

/** What the scheduler needs from the store. */
export interface CompactionHost {
  readonly fs: FileSystem;
  /** The worker thread's nice value (OpenOptions.compactionNice). */
  readonly nice: number;
  readonly dir: string;
  readonly versions: VersionSet;
  /** File numbers being written; the obsolete-file sweep leaves them alone. */
  readonly pendingOutputs: Set<number>;
  /** Sequence numbers of the live snapshots and iterators, any order. */
  liveSequences(): number[];
  /** A new version was installed: refresh the read view, sweep obsolete files. */
  installed(): void;
  /**
   * Repeated, manifest or no-space failure: the store must refuse writes with this error
   * (NO_SPACE: until it recovered; else until reopened).
   */
  fatal(err: KvError): void;
  /** True once the store is closing. */
  closing(): boolean;
  /** Reports a finished or failed compaction (for logs and metrics). */
  event(event: StoreEvent): void;
}

export interface CompactionStats {
  compactions: number;
  trivialMoves: number;
  bytesRead: number;
  bytesWritten: number;
  droppedVersions: number;
  droppedTombstones: number;
  failures: number;
  /** Failures since the last success; at MAX_CONSECUTIVE_FAILURES the store gives up. */
  consecutiveFailures: number;
  lastError: string | undefined;
  running: boolean;
  /**
   * Per output level (index = the level written): compactions into it (trivial moves
   * included), bytes read and written, and milliseconds spent.
   */
  perLevel: LevelCompactionStats[];
}

export interface LevelCompactionStats {
  compactions: number;
  bytesRead: number;
  bytesWritten: number;
  millis: number;
}

/** After this many failures in a row the store stops retrying and refuses writes. */
export const MAX_CONSECUTIVE_FAILURES = 5;
const BASE_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;

export class CompactionScheduler {
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private abandoned = false;
  /** A compactRange is in progress: background picks wait (LevelDB does the same). */
  private manual = 0;
  private worker: CompactionWorker | undefined;
  private readonly compactPointers: (Uint8Array | undefined)[] = [];
  private idleWaiters: Array<() => void> = [];
  readonly stats: CompactionStats = {
    compactions: 0,
    trivialMoves: 0,
    bytesRead: 0,
    bytesWritten: 0,
    droppedVersions: 0,
    droppedTombstones: 0,
    failures: 0,
    consecutiveFailures: 0,
    lastError: undefined,
    running: false,
    perLevel: [],
  };

  constructor(
    private readonly host: CompactionHost,
    private readonly options: ResolvedCompactionOptions,
    private readonly tableOptions: TableOptions,
    private readonly verifyChecksums: boolean,
    private readonly inWorker: boolean,
  ) {}

  /** True iff compactions (and flushes: flushInWorker) run on the worker thread. */
  get runsInWorker(): boolean {
    return this.inWorker && !this.abandoned;
  }

  /**
   * Writes a flush's level-0 table on the compaction worker thread, or returns undefined
   * when compactions run inline (the caller then writes it on this thread). The flush runs
   * beside any compaction on that thread (the two interleave).
   */
  flushInWorker(job: FlushJob): Promise<FileMetadata> | undefined {
    if (!this.inWorker || this.abandoned) return undefined;
    this.worker ??= new CompactionWorker({ fs: this.host.fs, nice: this.host.nice });
    return this.worker.flush(job);
  }

  /**
   * Starts the worker thread ahead of the first flush (when flushes and compactions run
   * there): starting it takes tens of milliseconds of module loading, which writers would
   * otherwise wait for when the first memtable fills.
   */
  prestartWorker(): void {
    if (!this.inWorker || this.abandoned) return;
    this.worker ??= new CompactionWorker({ fs: this.host.fs, nice: this.host.nice });
    this.worker.prestart();
  }

  /** Starts a compaction if one is due and none is running. Never throws. */
  maybeSchedule(): void {
    if (this.running !== undefined || this.retryTimer !== undefined || this.abandoned) return;
    if (this.manual > 0) return;
    if (this.host.closing() || this.stats.consecutiveFailures >= MAX_CONSECUTIVE_FAILURES) return;
    if (this.host.versions.failed) return;
    const plan = pickCompaction(this.host.versions.current, this.options, this.compactPointers);
    if (plan === undefined) return;
    this.start(this.runPlan(plan, false).catch(() => {}));
  }

  /** Resolves when no compaction is running (another may start right after). */
  whenIdle(): Promise<void> {
    if (this.running === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Compacts every file overlapping [start, end] (undefined: unbounded) down to the
   * deepest level that holds any file (level 1 at least), level by level, waiting for a
   * running compaction first. Below that level nothing can hold a key, so tombstones are
   * dropped there just as at the last level, without rewriting the data once per empty
   * level on the way down (LevelDB does the same). `settle` runs after the last step,
   * before background compactions may start again (the store deletes the obsolete files
   * there, so that the caller sees the range's levels as compactRange left them). Errors
   * are thrown.
   */
  async compactRange(
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
    settle?: () => Promise<void>,
  ): Promise<void> {
    this.manual++;
    try {
      await this.compactRangeSteps(start, end);
      await settle?.();
    } finally {
      this.manual--;
    }
    this.maybeSchedule();
  }

  private async compactRangeSteps(
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
  ): Promise<void> {
    while (this.running !== undefined) await this.whenIdle();
    const version = this.host.versions.current;
    let deepest = 1;
    for (let l = 2; l < version.numLevels; l++) if (version.numFiles(l) > 0) deepest = l;
    for (let level = 0; level < deepest; level++) {
      for (;;) {
        while (this.running !== undefined) await this.whenIdle();
        if (this.host.closing() || this.abandoned) {
          throw new KvError("CLOSED", "the store closed during compactRange");
        }
        const plan = planRange(this.host.versions.current, level, start, end, this.options);
        if (plan === undefined) break;
        const run = this.runPlan(plan, true);
        this.start(run.catch(() => {}));
        await run;
      }
    }
  }

  /** Abandons a running compaction (its outputs never reach the manifest) and stops. */
  async close(): Promise<void> {
    this.abandoned = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate().catch(() => {});
    await this.whenIdle();
  }

  private start(run: Promise<void>): void {
    this.stats.running = true;
    this.running = run.finally(() => {
      this.running = undefined;
      this.stats.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
      this.maybeSchedule();
    });
  }

  /** Runs and installs one plan. Throws on failure (after recording it). */
  private async runPlan(plan: CompactionPlan, manual: boolean): Promise<void> {
    const versions = this.host.versions;
    const outputNumbers: number[] = [];
    const started = performance.now();
    const report = (outputFiles: number, bytesRead: number, bytesWritten: number) => {
      const millis = performance.now() - started;
      const perLevel = this.stats.perLevel;
      while (perLevel.length <= plan.outputLevel) {
        perLevel.push({ compactions: 0, bytesRead: 0, bytesWritten: 0, millis: 0 });
      }
      const level = perLevel[plan.outputLevel]!;
      level.compactions++;
      level.bytesRead += bytesRead;
      level.bytesWritten += bytesWritten;
      level.millis += millis;
      this.host.event({
        type: "compaction",
        level: plan.level,
        outputLevel: plan.outputLevel,
        trivialMove: outputFiles < 0,
        manual,
        inputFiles: plan.inputs.length + plan.nextInputs.length,
        outputFiles: outputFiles < 0 ? 0 : outputFiles,
        bytesRead,
        bytesWritten,
        durationMs: millis,
      });
    };
    try {
      if (!manual && isTrivialMove(plan, this.options)) {
        await this.install(plan, () => trivialMoveEdit(plan));
        this.stats.trivialMoves++;
        report(-1, 0, 0);
        return;
      }
      const count = outputNumbersNeeded(plan, this.options, 3);
      for (let i = 0; i < count; i++) outputNumbers.push(versions.newFileNumber());
      for (const n of outputNumbers) this.host.pendingOutputs.add(n);
      const job = compactionJob(plan, {
        dir: this.host.dir,
        snapshots: this.host.liveSequences(),
        outputNumbers,
        tableOptions: this.tableOptions,
        verifyChecksums: this.verifyChecksums,
        options: this.options,
      });
      let result: CompactionResult;
      try {
        if (this.inWorker) {
          this.worker ??= new CompactionWorker({ fs: this.host.fs, nice: this.host.nice });
          result = await this.worker.run(job);
        } else {
          result = await runCompaction(this.host.fs, job, { aborted: () => this.abandoned });
        }
      } catch (err) {
        if (this.abandoned || isCompactionAborted(err)) return;
        throw err;
      }
      if (this.abandoned) return;
      await this.install(plan, () => compactionEdit(plan, result.outputs));
      this.stats.compactions++;
      this.stats.bytesRead += result.bytesRead;
      this.stats.bytesWritten += result.bytesWritten;
      this.stats.droppedVersions += result.droppedVersions;
      this.stats.droppedTombstones += result.droppedTombstones;
      report(result.outputs.length, result.bytesRead, result.bytesWritten);
    } catch (err) {
      this.failed(err, manual);
      throw isKvError(err)
        ? err
        : new KvError("IO_ERROR", `compaction failed: ${(err as Error).message}`, { cause: err });
    } finally {
      for (const n of outputNumbers) this.host.pendingOutputs.delete(n);
    }
  }

  private async install(
    plan: CompactionPlan,
    edit: () => ReturnType<typeof trivialMoveEdit>,
  ): Promise<void> {
    await this.host.versions.logAndApply(edit());
    this.compactPointers[plan.level] = plan.compactPointer;
    this.stats.consecutiveFailures = 0;
    this.host.installed();
  }

  /**
   * After the store recovered from a no-space failure: failures so far no longer count
   * and compactions are scheduled again.
   */
  resume(): void {
    this.stats.consecutiveFailures = 0;
    this.maybeSchedule();
  }

  /**
   * Records a failure and schedules a retry, or gives up and stops the store's writes. A
   * no-space failure stops writes at once (NO_SPACE, which the store recovers from:
   * no-space-recovery.ts; `resume` then schedules compactions again): retrying while the
   * disk is full would fail the same way, and writes would fill it further.
   */
  private failed(err: unknown, manual: boolean): void {
    this.stats.failures++;
    this.stats.consecutiveFailures++;
    this.stats.lastError = (err as Error).message;
    if (isNoSpace(err)) {
      this.host.event({
        type: "compaction-failed",
        message: (err as Error).message,
        consecutiveFailures: this.stats.consecutiveFailures,
        retryInMs: undefined,
      });
      this.host.fatal(
        new KvError(
          "NO_SPACE",
          `compaction failed, the disk is full: the store refuses writes until space is freed: ${(err as Error).message}`,
          { cause: err },
        ),
      );
      return;
    }
    const versions = this.host.versions;
    if (versions.failed) {
      // The manifest could not be written: the version set refuses further edits.
      this.host.fatal(
        new KvError("IO_ERROR", `installing a compaction failed: ${(err as Error).message}`, {
          cause: err,
        }),
      );
      return;
    }
    if (this.stats.consecutiveFailures >= MAX_CONSECUTIVE_FAILURES) {
      this.host.fatal(
        new KvError(
          "IO_ERROR",
          `compaction failed ${this.stats.consecutiveFailures} times in a row; the store ` +
            `refuses writes until reopened: ${(err as Error).message}`,
          { cause: err },
        ),
      );
      return;
    }
    const delay = manual
      ? undefined
      : Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (this.stats.consecutiveFailures - 1));
    this.host.event({
      type: "compaction-failed",
      message: (err as Error).message,
      consecutiveFailures: this.stats.consecutiveFailures,
      retryInMs: delay,
    });
    if (delay === undefined) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.maybeSchedule();
    }, delay);
    this.retryTimer.unref();
  }
}
