/**
 * Running one compaction: merge the input tables, keep what some reader can still see
 * (the rules: compaction-iterator.ts), write the rest out as new tables of the output level
 * (cut and made durable by output-writer.ts).
 *
 * A CompactionJob is plain data (numbers, strings, Uint8Arrays, arrays and plain objects),
 * so it can be posted to a worker thread as it is (see worker-pool.ts). The job opens the
 * input tables itself, writes its outputs under numbers the caller reserved, fsyncs each
 * output and then the directory once, and returns the outputs' metadata. It never touches
 * the manifest: installing the outputs (a VersionEdit deleting the inputs and adding the
 * outputs) is the caller's job, and until then the outputs are unlisted files that the
 * store's obsolete-file sweep deletes at the next open.
 *
 * The job yields to the event loop every YIELD_EVERY entries (event-loop-yield.ts): on the
 * main thread reads and writes keep being served; in a worker the same yields let an abort
 * message in.
 */
import { ioError, KvError } from "../errors.js";
import { LevelIterator } from "../iterator/level-iterator.js";
import { MergingIterator } from "../iterator/merging-iterator.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import type { TableOptions } from "../sstable/table-options.js";
import { TableReader } from "../sstable/table-reader.js";
import { BufferPool } from "../util/buffer-pool.js";
import { compareBound, type FileMetadata } from "../version/file-metadata.js";
import { tableFilePath } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import {
  CompactionIterator,
  type KeyRange,
  STEP_END,
  STEP_ENTRY,
  STEP_USER_KEY,
  STEP_YIELD,
} from "./compaction-iterator.js";
import { yieldToEventLoop } from "./event-loop-yield.js";
import { OutputWriter } from "./output-writer.js";

/** The input files of one level. */
export interface CompactionInput {
  readonly level: number;
  /** Level 0: any order. Deeper levels: sorted and non-overlapping, as in the version. */
  readonly files: readonly FileMetadata[];
}

/** One compaction, as plain (structured-clonable) data. */
export interface CompactionJob {
  /** The data directory: inputs are read from and outputs written to `tableFilePath(dir, n)`. */
  readonly dir: string;
  /** Input files per level: the compacted level's files and the output level's. */
  readonly inputs: readonly CompactionInput[];
  /** The level the outputs are meant for (>= 1). */
  readonly outputLevel: number;
  /** Sequence numbers of the live snapshots, ascending. */
  readonly snapshots: readonly number[];
  /**
   * For each level below the output level (outputLevel + 1, ...), the user-key ranges of
   * its files (at least those within the inputs' key range), sorted. A tombstone can be
   * dropped only when no range holds its key.
   */
  readonly deeperFiles: readonly (readonly KeyRange[])[];
  /** The files of level outputLevel + 1 that overlap the inputs, sorted (may be empty). */
  readonly grandparents: readonly FileMetadata[];
  readonly targetFileSize: number;
  readonly maxGrandparentOverlapBytes: number;
  readonly tableOptions: TableOptions;
  /**
   * File numbers reserved by the caller for the outputs, used in order. Running out fails
   * the job with INVALID_ARGUMENT (see `outputNumbersNeeded` in picker.ts).
   */
  readonly outputNumbers: readonly number[];
  /** Check the CRC of every data block read. */
  readonly verifyChecksums: boolean;
}

export interface CompactionResult {
  /** The new tables, sorted by key, not overlapping; fsynced, and their directory too. */
  readonly outputs: FileMetadata[];
  /** Total size of the input files. */
  readonly bytesRead: number;
  /** Total size of the outputs. */
  readonly bytesWritten: number;
  /** Entries read from the inputs. */
  readonly entriesIn: number;
  /** Entries written. entriesIn = entriesOut + droppedVersions + droppedTombstones. */
  readonly entriesOut: number;
  /** Entries (puts or tombstones) dropped because a newer entry hides them from every reader (rule 1). */
  readonly droppedVersions: number;
  /** Tombstones dropped by rules 2 and 3 (compaction-iterator.ts). */
  readonly droppedTombstones: number;
}

/**
 * Lets the caller stop a running job: polled at least once per entry read and between file
 * operations.
 */
export interface CompactionControl {
  aborted(): boolean;
  /**
   * Called at each yield point of the merge; when it returns a promise, the job waits for
   * it before going on (the worker thread uses this to let flushes go first).
   */
  pause?(): Promise<void> | undefined;
}

/** Thrown when a job stops because its control said so (or its worker was terminated). */
export class CompactionAbortedError extends Error {
  override readonly name = "CompactionAbortedError";
  readonly code = "ABORTED";

  constructor(message = "compaction aborted") {
    super(message);
  }
}

/** True iff `err` carries code "ABORTED" (a CompactionAbortedError, or one rebuilt from a worker). */
export function isCompactionAborted(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === "ABORTED";
}

/**
 * Read-ahead of each input table's iterator (TableIteratorOptions.readaheadBytes, with
 * readaheadReuse): a compaction reads every input block in order once, so one read per
 * chunk replaces one read and one allocation per block. Each input keeps one chunk of
 * memory, so the low end of the sizes that measured alike (docs/benchmarks/tables.md).
 */
export const COMPACTION_READAHEAD_BYTES = 64 * 1024;

/**
 * The inputs' read-ahead memory, kept for the next inputs and jobs on this thread (module
 * state: one pool per thread): each input's window takes a buffer when it first reads and
 * gives it back when its iterator closes. Bounded to as many inputs as a large level-0
 * compaction has.
 */
const readaheadPool = new BufferPool<ArrayBuffer>(48 * COMPACTION_READAHEAD_BYTES);

function badJob(message: string): KvError {
  return new KvError("INVALID_ARGUMENT", `compaction job: ${message}`);
}

function checkJob(job: CompactionJob): void {
  if (!Number.isSafeInteger(job.outputLevel) || job.outputLevel < 1) {
    throw badJob(`outputLevel must be an integer >= 1, got ${job.outputLevel}`);
  }
  for (let i = 1; i < job.snapshots.length; i++) {
    if (!(job.snapshots[i - 1]! <= job.snapshots[i]!)) {
      throw badJob("snapshots must be sorted ascending");
    }
  }
  if (!(job.targetFileSize >= 1)) throw badJob(`bad targetFileSize ${job.targetFileSize}`);
  const numbers = new Set<number>();
  for (const input of job.inputs) {
    if (input.level > job.outputLevel) {
      throw badJob(`input level ${input.level} is below the output level ${job.outputLevel}`);
    }
    input.files.forEach((f, i) => {
      if (numbers.has(f.number)) throw badJob(`file ${f.number} is an input twice`);
      numbers.add(f.number);
      const prev = input.files[i - 1];
      if (
        input.level > 0 &&
        prev !== undefined &&
        compareBound(prev.largestKey, prev.largestSeq, f.smallestKey, f.smallestSeq) >= 0
      ) {
        throw badJob(`level ${input.level} inputs are not sorted and disjoint`);
      }
    });
  }
  for (const n of job.outputNumbers) {
    if (numbers.has(n)) throw badJob(`output number ${n} is an input file's number`);
  }
}

/** Opens one input table; the reader owns the file. */
async function openInput(
  fs: FileSystem,
  dir: string,
  meta: FileMetadata,
  verifyChecksums: boolean,
): Promise<TableReader> {
  const path = tableFilePath(dir, meta.number);
  let file: Awaited<ReturnType<FileSystem["openReadable"]>>;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    throw ioError("open table for compaction", err, path);
  }
  try {
    if (file.size !== meta.size) {
      throw new KvError(
        "CORRUPTION",
        `${path}: table is ${file.size} bytes, the version says ${meta.size}`,
        { file: path },
      );
    }
    // A compaction scans its inputs and never looks a key up: no filter needed.
    return TableReader.open(file, meta.number, { verifyChecksums, skipFilter: true });
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
}

/**
 * Runs `job` on `fs` (see the module comment). On success the outputs are durable and
 * listed in the result; on failure or abort (CompactionAbortedError, code "ABORTED") every
 * output written so far is removed (best effort) and the error is rethrown. The inputs are
 * only read.
 */
export async function runCompaction(
  fs: FileSystem,
  job: CompactionJob,
  control?: CompactionControl,
): Promise<CompactionResult> {
  checkJob(job);
  const aborted = () => control?.aborted() === true;
  const checkAborted = () => {
    if (aborted()) throw new CompactionAbortedError();
  };
  const readers: TableReader[] = [];
  let used = 0;
  const out = new OutputWriter(fs, {
    dir: job.dir,
    tableOptions: job.tableOptions,
    targetFileSize: job.targetFileSize,
    grandparents: job.grandparents,
    maxGrandparentOverlapBytes: job.maxGrandparentOverlapBytes,
    label: "compaction output",
    nextNumber: () => {
      const number = job.outputNumbers[used++];
      if (number !== undefined) return number;
      throw new KvError(
        "INVALID_ARGUMENT",
        `compaction job: the ${job.outputNumbers.length} reserved output file numbers ` +
          "are used up; reserve more (outputNumbersNeeded)",
      );
    },
  });
  let merged: MergingIterator | undefined;
  try {
    checkAborted();
    const children: InternalIterator[] = [];
    const inputOptions = {
      fillCache: false,
      readaheadBytes: COMPACTION_READAHEAD_BYTES,
      // The merge copies what it keeps (userKey, held tombstone; outputs copy on add).
      readaheadReuse: true,
      readaheadPool,
    };
    let bytesRead = 0;
    for (const input of job.inputs) {
      const group: TableReader[] = [];
      for (const meta of input.files) {
        const reader = await openInput(fs, job.dir, meta, job.verifyChecksums);
        readers.push(reader);
        group.push(reader);
        bytesRead += reader.fileSize;
      }
      if (input.level === 0) {
        for (const r of group) children.push(r.iterator(inputOptions));
      } else if (group.length > 0) {
        children.push(new LevelIterator(input.files, (i) => group[i]!.iterator(inputOptions)));
      }
    }
    merged = new MergingIterator(children);
    const kept = new CompactionIterator(merged, job.snapshots, job.deeperFiles);
    await writeKept(kept, out, checkAborted, () => control?.pause?.());
    merged.close();
    merged = undefined;
    // Input closes are checked too: every file operation's failure fails the job.
    await out.finish();
    const closes = await Promise.allSettled(readers.map((r) => r.close()));
    for (const c of closes) if (c.status === "rejected") throw c.reason;
    checkAborted();
    await out.syncDirectory("sync directory after compaction");
    return {
      outputs: out.outputs,
      bytesRead,
      bytesWritten: out.bytesWritten,
      entriesIn: kept.entriesIn,
      entriesOut: out.entriesOut,
      droppedVersions: kept.droppedVersions,
      droppedTombstones: kept.droppedTombstones,
    };
  } catch (err) {
    merged?.close();
    await Promise.allSettled(readers.map((r) => r.close()));
    await out.discard();
    throw err;
  }
}

/**
 * The merge loop: writes what `kept` keeps through `out`, cutting outputs where `out`
 * decides, polling `checkAborted` at every step and yielding (then waiting for `pause`)
 * every YIELD_EVERY entries read. Ends with the last output finished (its sync started).
 */
async function writeKept(
  kept: CompactionIterator,
  out: OutputWriter,
  checkAborted: () => void,
  pause: () => Promise<void> | undefined,
): Promise<void> {
  for (;;) {
    const step = kept.next();
    if (step === STEP_END) break;
    checkAborted();
    if (step === STEP_ENTRY) {
      const added = out.add(kept.key, kept.seq, kept.kind, kept.value);
      if (added !== undefined) await added;
    } else if (step === STEP_USER_KEY) {
      const cut = out.beforeUserKey(kept.key);
      if (cut !== undefined) await cut;
    } else if (step === STEP_YIELD) {
      await yieldToEventLoop();
      const paused = pause();
      if (paused !== undefined) await paused;
      checkAborted();
    }
  }
  await out.finishOutput();
}
