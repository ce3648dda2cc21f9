/**
 * Running one compaction: merge the input tables, keep what some reader can still see,
 * write the rest out as new tables of the output level.
 *
 * A CompactionJob is plain data (numbers, strings, Uint8Arrays, arrays and plain objects),
 * so it can be posted to a worker thread as it is (see worker-pool.ts). The job opens the
 * input tables itself, writes its outputs under numbers the caller reserved, fsyncs each
 * output and then the directory once, and returns the outputs' metadata. It never touches
 * the manifest: installing the outputs (a VersionEdit deleting the inputs and adding the
 * outputs) is the caller's job, and until then the outputs are unlisted files that the
 * store's obsolete-file sweep deletes at the next open.
 *
 * What is kept, per user key (versions newest first). Readers are the current state plus
 * one per live snapshot; the snapshots cut the sequence numbers into stripes: the stripe of
 * an entry is the smallest snapshot >= its sequence (or "above every snapshot"). A reader
 * at snapshot s sees the newest entry of its stripe or an older one, so:
 * 1. An entry is dropped when a newer entry of the same user key lies in the same stripe
 *    (no snapshot s with entry.seq <= s < newer.seq): no reader can see it (LevelDB's rule,
 *    exact per snapshot rather than against the oldest snapshot only).
 * 2. Of the entries left, a tombstone directly followed (older) by another kept tombstone
 *    is dropped: every reader it served finds the older tombstone instead, with the same
 *    answer ("deleted").
 * 3. The oldest entry left, if it is a tombstone, is dropped when no level below the output
 *    level holds the key (`deeperFiles`): readers of its stripe and of every older stripe
 *    then find nothing at all, which is what the tombstone told them. This is LevelDB's
 *    "seq <= smallest snapshot and base level for key" generalised: with a tombstone at or
 *    below the oldest snapshot, rule 1 already dropped everything older, so it is the
 *    oldest entry left.
 * Levels above the output level only hold newer entries of a key, which none of this can
 * change.
 *
 * Outputs are cut only between user keys (all versions of a key go to one file, so two
 * outputs never share a boundary user key), when the file reaches `targetFileSize` or when
 * the keys since the last cut overlap more than `maxGrandparentOverlapBytes` of the level
 * below the output level (LevelDB's ShouldStopBefore), so compacting the output later
 * stays small.
 *
 * Running on the main thread, the job yields to the event loop every YIELD_EVERY entries so
 * reads and writes keep being served; in a worker the same yields let an abort message in.
 */
import { ioError, KvError } from "../errors.js";
import { LevelIterator } from "../iterator/level-iterator.js";
import { MergingIterator } from "../iterator/merging-iterator.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes, KIND_DELETE, KIND_PUT, type ValueKind } from "../key/internal-key.js";
import { TableBuilder } from "../sstable/table-builder.js";
import type { TableOptions } from "../sstable/table-options.js";
import { TableReader } from "../sstable/table-reader.js";
import { BufferPool } from "../util/buffer-pool.js";
import { compareBound, type FileMetadata } from "../version/file-metadata.js";
import { tableFilePath } from "../version/file-names.js";
import type { FileSystem, WritableFile } from "../vfs/file-system.js";

/** A user-key range [smallest, largest], both inclusive. */
export type KeyRange = readonly [smallest: Uint8Array, largest: Uint8Array];

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
  /** Tombstones dropped by rules 2 and 3 (module comment). */
  readonly droppedTombstones: number;
}

/** Lets the caller stop a running job: polled once per entry and between file operations. */
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

/** Entries between yields to the event loop. */
export const YIELD_EVERY = 2000;

/**
 * Read-ahead of each input table's iterator (TableIteratorOptions.readaheadBytes, with
 * readaheadReuse): a compaction reads every input block in order once, so one read per
 * chunk replaces one read and one allocation per ~4 KiB block. Scanning a 200k-entry table
 * from the page cache took ~30 % less time with it (a whole 4-input compaction ~4 %, a 1M
 * key random fill no measurable change); 64 KiB-1 MiB measured the same. Each input keeps
 * one chunk of memory, so the low end: fresh 256 KiB chunks per read had raised the peak
 * RSS of that fill by ~40 MiB of garbage awaiting collection, reused ones do not.
 */
export const COMPACTION_READAHEAD_BYTES = 64 * 1024;

/**
 * The inputs' read-ahead memory, kept for the next inputs and jobs on this thread (module
 * state: one pool per thread): each input's window takes a buffer when it first reads and
 * gives it back when its iterator closes. Bounded to as many inputs as a large level-0
 * compaction has.
 */
const readaheadPool = new BufferPool<ArrayBuffer>(48 * COMPACTION_READAHEAD_BYTES);

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

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

/** True iff no range of any deeper level holds `key`. */
export function isBaseLevelForKey(
  deeperFiles: readonly (readonly KeyRange[])[],
  key: Uint8Array,
): boolean {
  for (const ranges of deeperFiles) {
    // First range whose largest key >= key; it holds key iff its smallest key <= key.
    let lo = 0;
    let hi = ranges.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareBytes(ranges[mid]![1], key) < 0) lo = mid + 1;
      else hi = mid;
    }
    const r = ranges[lo];
    if (r !== undefined && compareBytes(r[0], key) <= 0) return false;
  }
  return true;
}

/**
 * Outputs whose fsync may be in flight at once. A finished output's fsync and close run
 * while the merge goes on into the next output (the merge is CPU work, the fsync waits
 * for the device); `drain` waits for them all before the job reports its outputs.
 */
export const MAX_PENDING_SYNCS = 4;

/**
 * Writes the outputs one after the other; remembers every path it created. Each finished
 * output is synced and closed in the background (at most MAX_PENDING_SYNCS at a time);
 * `drain` waits for those and rethrows the first failure.
 */
class OutputWriter {
  readonly outputs: FileMetadata[] = [];
  private readonly created: string[] = [];
  /** Sync-and-close of finished outputs, oldest first (each never rejects: see `closing`). */
  private syncing: Promise<void>[] = [];
  /** The first failure of a background sync or close. */
  private syncError: unknown;
  private used = 0;
  private file: WritableFile | undefined;
  private builder: TableBuilder | undefined;
  private number = 0;
  private path = "";
  bytesWritten = 0;
  entriesOut = 0;

  constructor(
    private readonly fs: FileSystem,
    private readonly job: CompactionJob,
  ) {}

  get open(): boolean {
    return this.builder !== undefined;
  }

  /** Bytes of the current output so far (0 when none is open). */
  get currentSize(): number {
    return this.builder?.estimatedSize ?? 0;
  }

  async start(): Promise<void> {
    const number = this.job.outputNumbers[this.used];
    if (number === undefined) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `compaction job: the ${this.job.outputNumbers.length} reserved output file numbers ` +
          "are used up; reserve more (outputNumbersNeeded)",
      );
    }
    this.used++;
    this.number = number;
    this.path = tableFilePath(this.job.dir, number);
    // Recorded before creating: a failed create may still have left the name behind.
    this.created.push(this.path);
    try {
      this.file = await this.fs.createWritable(this.path);
    } catch (err) {
      throw ioError("create compaction output", err, this.path);
    }
    this.builder = new TableBuilder(this.file, this.job.tableOptions);
  }

  add(key: Uint8Array, seq: number, kind: ValueKind, value: Uint8Array): void {
    this.builder!.add(key, seq, kind, value);
    this.entriesOut++;
  }

  /**
   * Finishes the current output (footer) and starts its fsync and close; waits only when
   * MAX_PENDING_SYNCS are already in flight. A sync or close failure surfaces here (when
   * seen by then) or from `drain`.
   */
  async finish(): Promise<void> {
    const builder = this.builder!;
    const file = this.file!;
    const props = builder.finish();
    this.builder = undefined;
    this.file = undefined;
    this.syncing.push(this.closing(file, this.path));
    if (this.syncing.length > MAX_PENDING_SYNCS) await this.syncing.shift();
    this.throwSyncError();
    this.outputs.push({
      number: this.number,
      size: props.fileSize,
      smallestKey: props.smallestKey,
      smallestSeq: props.smallestKeySeq,
      largestKey: props.largestKey,
      largestSeq: props.largestKeySeq,
      entries: props.entries,
      tombstones: props.tombstones,
    });
    this.bytesWritten += props.fileSize;
  }

  /** Waits for every output's sync and close; throws the first failure. */
  async drain(): Promise<void> {
    const pending = this.syncing;
    this.syncing = [];
    await Promise.all(pending);
    this.throwSyncError();
  }

  /** fsync then close `file`; records the first failure instead of rejecting. */
  private async closing(file: WritableFile, path: string): Promise<void> {
    let step = "sync";
    try {
      await file.sync();
      step = "close";
      await file.close();
    } catch (err) {
      if (step === "sync") await file.close().catch(() => {});
      this.syncError ??= ioError(`${step} compaction output`, err, path);
    }
  }

  private throwSyncError(): void {
    if (this.syncError !== undefined) throw this.syncError;
  }

  /** Best effort: abandons the current output and removes every file created. */
  async discard(): Promise<void> {
    await Promise.all(this.syncing);
    this.syncing = [];
    try {
      this.builder?.abandon();
    } catch {
      // already finished
    }
    this.builder = undefined;
    const file = this.file;
    this.file = undefined;
    await file?.close().catch(() => {});
    for (const path of this.created) await this.fs.remove(path).catch(() => {});
    this.created.length = 0;
  }
}

/** Cuts outputs where they would overlap too much of the grandparent level. */
class GrandparentTracker {
  private index = 0;
  private seenKey = false;
  private overlapped = 0;

  constructor(
    private readonly grandparents: readonly FileMetadata[],
    private readonly limit: number,
  ) {}

  /** Called once per user key, ascending: true when the output should end before `key`. */
  stopBefore(key: Uint8Array): boolean {
    const gp = this.grandparents;
    while (this.index < gp.length && compareBytes(key, gp[this.index]!.largestKey) > 0) {
      if (this.seenKey) this.overlapped += gp[this.index]!.size;
      this.index++;
    }
    this.seenKey = true;
    if (this.overlapped > this.limit) {
      this.overlapped = 0;
      return true;
    }
    return false;
  }

  /** A new output starts: overlap is counted from here. */
  reset(): void {
    this.overlapped = 0;
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
  const out = new OutputWriter(fs, job);
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
    const counts = await compactEntries(merged, job, out, checkAborted, () => control?.pause?.());
    merged.close();
    merged = undefined;
    // Input closes are checked too: every file operation's failure fails the job.
    await out.drain();
    const closes = await Promise.allSettled(readers.map((r) => r.close()));
    for (const c of closes) if (c.status === "rejected") throw c.reason;
    checkAborted();
    if (out.outputs.length > 0) {
      try {
        await fs.syncDir(job.dir);
      } catch (err) {
        throw ioError("sync directory after compaction", err, job.dir);
      }
    }
    return {
      outputs: out.outputs,
      bytesRead,
      bytesWritten: out.bytesWritten,
      entriesIn: counts.entriesIn,
      entriesOut: out.entriesOut,
      droppedVersions: counts.droppedVersions,
      droppedTombstones: counts.droppedTombstones,
    };
  } catch (err) {
    merged?.close();
    await Promise.allSettled(readers.map((r) => r.close()));
    await out.discard();
    throw err;
  }
}

/** True iff a equals b[0, bLength) (bLength -1: never). */
function sameBytes(a: Uint8Array, b: Uint8Array, bLength: number): boolean {
  if (a.length !== bLength) return false;
  for (let i = bLength - 1; i >= 0; i--) if (a[i] !== b[i]) return false;
  return true;
}

/** The merge loop: applies the rules of the module comment, writes through `out`. */
async function compactEntries(
  it: InternalIterator,
  job: CompactionJob,
  out: OutputWriter,
  checkAborted: () => void,
  pause: () => Promise<void> | undefined,
): Promise<{ entriesIn: number; droppedVersions: number; droppedTombstones: number }> {
  const snapshots = job.snapshots;
  /** Index of the smallest snapshot >= seq (snapshots.length: above every snapshot). */
  const stripeOf = (seq: number): number => {
    let lo = 0;
    let hi = snapshots.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (snapshots[mid]! < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const grandparents = new GrandparentTracker(job.grandparents, job.maxGrandparentOverlapBytes);
  let entriesIn = 0;
  let droppedVersions = 0;
  let droppedTombstones = 0;

  // The current user key, copied (iterator keys are views): userKeyBytes[0, userKeyLength),
  // userKeyLength -1 before the first entry.
  let userKeyBytes = new Uint8Array(64);
  let userKeyLength = -1;
  const userKey = () => userKeyBytes.subarray(0, userKeyLength);
  let lastStripe = -1;
  // A kept tombstone not yet written: rules 2 and 3 need to know what follows it.
  let heldSeq = -1;
  let heldValue: Uint8Array = new Uint8Array(0);

  const startAndAdd = async (key: Uint8Array, seq: number, kind: ValueKind, value: Uint8Array) => {
    checkAborted();
    await out.start();
    grandparents.reset();
    out.add(key, seq, kind, value);
  };
  /**
   * Adds an entry to the current output, opening one first if needed. Synchronous (returns
   * undefined) while an output is open: the loop awaits only when a file is created, not
   * once per entry.
   */
  const emit = (
    key: Uint8Array,
    seq: number,
    kind: ValueKind,
    value: Uint8Array,
  ): Promise<void> | undefined => {
    if (!out.open) return startAndAdd(key, seq, kind, value);
    out.add(key, seq, kind, value);
    return undefined;
  };
  /** End of a user key's versions: rule 3 for the held tombstone. */
  const endKey = (): Promise<void> | undefined => {
    if (heldSeq < 0) return undefined;
    const seq = heldSeq;
    heldSeq = -1;
    const key = userKey();
    if (isBaseLevelForKey(job.deeperFiles, key)) {
      droppedTombstones++;
      return undefined;
    }
    return emit(key, seq, KIND_DELETE, heldValue);
  };

  for (it.seekToFirst(); it.valid(); it.next()) {
    checkAborted();
    entriesIn++;
    if (entriesIn % YIELD_EVERY === 0) {
      await yieldToEventLoop();
      const paused = pause();
      if (paused !== undefined) await paused;
      checkAborted();
    }
    const key = it.key;
    const seq = it.seq;
    const kind = it.kind;
    if (!sameBytes(key, userKeyBytes, userKeyLength)) {
      const ended = endKey();
      if (ended !== undefined) await ended;
      const stop = grandparents.stopBefore(key);
      if (out.open && (stop || out.currentSize >= job.targetFileSize)) await out.finish();
      if (key.length > userKeyBytes.length) userKeyBytes = new Uint8Array(key.length * 2);
      userKeyBytes.set(key);
      userKeyLength = key.length;
      lastStripe = -1;
    }
    const stripe = stripeOf(seq);
    if (stripe === lastStripe) {
      droppedVersions++; // rule 1
      continue;
    }
    lastStripe = stripe;
    if (kind === KIND_DELETE) {
      if (heldSeq >= 0) droppedTombstones++; // rule 2: this older tombstone serves its readers
      heldSeq = seq;
      heldValue = it.value.slice();
    } else if (kind === KIND_PUT) {
      if (heldSeq >= 0) {
        // The held tombstone is of this user key (endKey handled the previous ones').
        const held = emit(key, heldSeq, KIND_DELETE, heldValue);
        heldSeq = -1;
        if (held !== undefined) await held;
      }
      const added = emit(key, seq, kind, it.value);
      if (added !== undefined) await added;
    }
  }
  await endKey();
  if (out.open) await out.finish();
  return { entriesIn, droppedVersions, droppedTombstones };
}
