/**
 * The parts of an open store and how they are wired: built once, after recovery
 * (store-open.ts), by `assembleStore`. The KvStore facade holds them; each part gets the
 * others it works with, so none reaches back into the facade except through `StoreHooks`.
 *
 *   writes:  CommitQueue -> MemtableSet (apply), WriteStalls.makeRoom (before each group)
 *            -> MemtableFlushes (switch, flush) -> CompactionScheduler (flush in the worker)
 *   changes: a flush or compaction installed -> MemtableSet.installView, the sweep
 *   failures: a failed log append, sync or switch, flush or manifest write, repeated
 *            compaction failures -> BackgroundError -> the commit queue refuses writes,
 *            an event; a no-space one -> NoSpaceRecovery -> writes resume
 */
import { visitBatch } from "../batch/write-batch.js";
import type { TableOptions } from "../sstable/table-builder.js";
import { logFilePath } from "../version/file-names.js";
import { BackgroundError } from "./background-error.js";
import { CommitQueue } from "./commit-queue.js";
import { CompactionScheduler } from "./compaction-scheduler.js";
import type { StoreEvent } from "./events.js";
import { MemtableFlushes } from "./memtable-flushes.js";
import { MemtableSet } from "./memtable-set.js";
import { NoSpaceRecovery } from "./no-space-recovery.js";
import { ObsoleteFileSweeper } from "./obsolete-files.js";
import { PointGet } from "./point-get.js";
import type { RecoveredStore } from "./store-open.js";
import { WriteStalls } from "./write-stalls.js";

/** What the parts need of the facade. */
export interface StoreHooks {
  /** Sequence numbers of the live snapshots, any order (what compactions must keep). */
  liveSequences(): number[];
  /** True once the store is closing. */
  closing(): boolean;
  /** Reports a store event (to the onEvent listener). */
  emit(event: StoreEvent): void;
}

/** An open store's parts (see the module comment). */
export interface StoreParts extends RecoveredStore {
  readonly background: BackgroundError;
  readonly memtables: MemtableSet;
  readonly commits: CommitQueue;
  readonly compactions: CompactionScheduler;
  readonly flushes: MemtableFlushes;
  readonly stalls: WriteStalls;
  readonly sweeper: ObsoleteFileSweeper;
  readonly recovery: NoSpaceRecovery;
  readonly reads: PointGet;
  /** Log number -> checkpoints copying it now (the sweep keeps those logs). */
  readonly pinnedLogs: Map<number, number>;
}

/** Builds the parts of the store recovered as `r` (see the module comment). */
export function assembleStore(r: RecoveredStore, hooks: StoreHooks): StoreParts {
  const { dir, options, versions, tables } = r;
  const emit = hooks.emit;
  // The arena pool has room for every memtable that can be released while the next one
  // fills, so that the arenas stay within maxWriteBufferNumber buffers' worth.
  const poolBytes = (options.maxWriteBufferNumber - 1) * options.writeBufferSize;
  const memtables = new MemtableSet(r.memtable, r.log, r.logNumber, versions, poolBytes);
  // Assigned below; the commit queue forms its first group only after this returns.
  let stalls: WriteStalls;
  const commits = new CommitQueue(
    r.log,
    (rep) => visitBatch(rep, memtables.addToMemtable),
    r.lastSequence,
    logFilePath(dir, r.logNumber),
    () => stalls.makeRoom(),
    options.blockingLoneSync,
    options.walBytesPerSync,
  );
  // Assigned below; the background error can be set only once the store is assembled.
  let recovery: NoSpaceRecovery;
  let compactions: CompactionScheduler;
  let sweeper: ObsoleteFileSweeper;
  let refusedSince = 0;
  const background = new BackgroundError(
    (err) => {
      commits.fail(err);
      refusedSince ||= performance.now();
      const recoverable = err.code === "NO_SPACE";
      emit({ type: "background-error", code: err.code, message: err.message, recoverable });
      if (recoverable) recovery.start();
    },
    (err) => {
      const failure = commits.error;
      if (failure !== undefined && failure.code !== "NO_SPACE") {
        background.set(failure);
        return;
      }
      if (failure !== undefined) commits.resume();
      const durationMs = performance.now() - refusedSince;
      refusedSince = 0;
      emit({ type: "resumed", code: err.code, message: err.message, durationMs });
      compactions.resume();
      sweeper.schedule();
    },
  );
  commits.onLogFailure = (err, op) => {
    emit({ type: "log-failed", op, code: err.code, message: err.message, file: err.file });
    background.set(err);
  };
  const tableOptions: TableOptions = {
    blockSize: options.blockSize,
    bloomBitsPerKey: options.bloomBitsPerKey,
    compression: options.compression,
  };
  // File numbers being written (not yet in a version): never treated as obsolete.
  const pendingOutputs = new Set<number>();
  const pinnedLogs = new Map<number, number>();
  sweeper = new ObsoleteFileSweeper(
    options.fs,
    dir,
    () => ({
      liveTables: versions.liveFileNumbers(),
      pendingOutputs,
      minLogNumber: versions.logNumber,
      currentLogNumber: memtables.logNumber,
      pinnedLogs: new Set(pinnedLogs.keys()),
      manifestNumber: versions.manifestNumber,
    }),
    (removed) => {
      for (const n of removed) tables.evict(n);
    },
    hooks.closing,
  );
  compactions = new CompactionScheduler(
    {
      fs: options.fs,
      nice: options.compactionNice,
      dir,
      versions,
      pendingOutputs,
      liveSequences: hooks.liveSequences,
      installed: () => {
        memtables.installView();
        sweeper.schedule();
      },
      fatal: (err) => background.set(err),
      closing: hooks.closing,
      event: emit,
    },
    options.compaction,
    tableOptions,
    options.verifyChecksums,
    options.compactionMode === "worker",
  );
  const flushes = new MemtableFlushes({
    fs: options.fs,
    dir,
    memtables,
    commits,
    versions,
    tables,
    compactions,
    tableOptions,
    walPreallocateBytes: options.walPreallocateBytes,
    pendingOutputs,
    background,
    emit,
    flushEnded: () => sweeper.schedule(),
  });
  stalls = new WriteStalls(options, versions, memtables, flushes, compactions, background, emit);
  recovery = new NoSpaceRecovery({
    fs: options.fs,
    dir,
    versions,
    memtables,
    commits,
    flushes,
    background,
    emit,
    closing: hooks.closing,
  });
  versions.onVersionReleased = () => sweeper.schedule();
  return {
    ...r,
    background,
    memtables,
    commits,
    compactions,
    flushes,
    stalls,
    sweeper,
    recovery,
    reads: new PointGet(tables),
    pinnedLogs,
  };
}
