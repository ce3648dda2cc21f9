/**
 * `compact`: opens a store, compacts a key range (default: everything) down to the
 * deepest level that holds files, reporting progress, and closes it.
 *
 * Progress comes from the store's compaction events (`onEvent`), each followed by a look
 * at `db.stats()` (taken on a later turn of the event loop: a listener must not call into
 * the store). `percent` is an estimate:
 * - whole store: the work left is W = Σ bytes(L) × (target − L) over the levels L above
 *   the target level (every byte there has that many levels still to descend); percent =
 *   100 × (W0 − W) / W0, W0 taken after the memtable is flushed. It reaches 100 when
 *   compactRange is done, since nothing is then left above the target level.
 * - a key range: per-level sizes do not say how much of the range is left, so percent
 *   counts levels: a step from level L means levels above L are done (L / target).
 * Either way it never goes down, and is 100 once compactRange has returned.
 */
import type { StoreEvent } from "../db/events.js";
import type { OpenOptions } from "../db/options.js";
import { openExistingStore } from "./open-store.js";

export type CompactionEvent = Extract<StoreEvent, { type: "compaction" }>;

/** Files and bytes per level. */
export interface LevelSummary {
  files: number[];
  bytes: number[];
}

/** One compaction that ran, with the state after it. */
export interface CompactStep {
  /** 1, 2, ... in the order they finished. */
  step: number;
  event: CompactionEvent;
  /** Estimated progress, 0..100 (see the module comment). */
  percent: number;
  levels: LevelSummary;
}

export interface CompactOptions extends Pick<OpenOptions, "fs" | "numLevels"> {
  /** Inclusive bounds of the range; undefined: unbounded. */
  start?: Uint8Array | undefined;
  end?: Uint8Array | undefined;
  /** Called once the memtable is flushed, just before compacting, with the sizes then. */
  onStart?: (before: LevelSummary, targetLevel: number) => void;
  /** Called after each compaction (background ones included). */
  onStep?: (step: CompactStep) => void;
}

export interface CompactReport {
  /** After the memtable was flushed, before compacting. */
  before: LevelSummary;
  after: LevelSummary;
  /** The level compactRange compacted down to. */
  targetLevel: number;
  steps: CompactStep[];
  bytesRead: number;
  bytesWritten: number;
}

/** The deepest level holding files, at least 1 (compactRange's target). */
export function targetLevel(files: readonly number[]): number {
  let deepest = 1;
  for (let l = 2; l < files.length; l++) if ((files[l] ?? 0) > 0) deepest = l;
  return Math.min(deepest, Math.max(files.length - 1, 0));
}

/** Σ bytes(L) × (target − L) for L < target: the bytes-times-levels still to descend. */
export function remainingWork(bytes: readonly number[], target: number): number {
  let work = 0;
  for (let l = 0; l < target; l++) work += (bytes[l] ?? 0) * (target - l);
  return work;
}

/** Estimates progress; see the module comment. */
export class ProgressEstimate {
  private readonly initial: number;
  private last = 0;

  constructor(
    private readonly target: number,
    before: LevelSummary,
    private readonly bounded: boolean,
  ) {
    this.initial = remainingWork(before.bytes, target);
  }

  /** Progress after a compaction from `level`, given the sizes now. */
  update(level: number, bytes: readonly number[]): number {
    let p: number;
    if (this.bounded) p = this.target === 0 ? 100 : (100 * level) / this.target;
    else if (this.initial === 0) p = 100;
    else p = (100 * (this.initial - remainingWork(bytes, this.target))) / this.initial;
    this.last = Math.max(this.last, Math.min(100, Math.max(0, p)));
    return this.last;
  }
}

function summary(s: { levelFiles: number[]; levelBytes: number[] }): LevelSummary {
  return { files: [...s.levelFiles], bytes: [...s.levelBytes] };
}

/** Compacts the store in `dir`; see the module comment. Throws LOCKED, INVALID_ARGUMENT, ... */
export async function compactStore(
  dir: string,
  options: CompactOptions = {},
): Promise<CompactReport> {
  const queued: CompactionEvent[] = [];
  const steps: CompactStep[] = [];
  let estimate: ProgressEstimate | undefined;
  let db: Awaited<ReturnType<typeof openExistingStore>> | undefined;
  let done = false;
  const drain = (): void => {
    if (db === undefined || estimate === undefined || done || queued.length === 0) return;
    const s = db.stats();
    for (const event of queued.splice(0)) {
      const step: CompactStep = {
        step: steps.length + 1,
        event,
        percent: estimate.update(event.level, s.levelBytes),
        levels: summary(s),
      };
      steps.push(step);
      options.onStep?.(step);
    }
  };
  const openOptions: OpenOptions = {
    onEvent: (event) => {
      if (event.type !== "compaction") return;
      queued.push(event);
      setImmediate(drain);
    },
  };
  if (options.fs !== undefined) openOptions.fs = options.fs;
  if (options.numLevels !== undefined) openOptions.numLevels = options.numLevels;
  db = await openExistingStore(dir, openOptions);
  try {
    await db.flush();
    const stats = db.stats();
    const before = summary(stats);
    const target = targetLevel(before.files);
    const bounded = options.start !== undefined || options.end !== undefined;
    estimate = new ProgressEstimate(target, before, bounded);
    options.onStart?.(before, target);
    const read0 = stats.compaction.bytesRead;
    const written0 = stats.compaction.bytesWritten;
    await db.compactRange(options.start, options.end);
    drain();
    done = true;
    const end = db.stats();
    return {
      before,
      after: summary(end),
      targetLevel: target,
      steps,
      bytesRead: end.compaction.bytesRead - read0,
      bytesWritten: end.compaction.bytesWritten - written0,
    };
  } finally {
    await db.close();
  }
}
