/**
 * OutputWriter: writes the entries a compaction keeps (or repair merges) as new tables,
 * cutting them between user keys, and makes them durable.
 *
 * Cutting: when a new user key begins (`beforeUserKey`, keys ascending), the current output
 * ends when it has reached `targetFileSize`, or when the keys since the last cut overlap
 * more than `maxGrandparentOverlapBytes` of the grandparent level (the level below the
 * output level: LevelDB's ShouldStopBefore), so compacting the output later stays small.
 * All versions of a user key go to one output, so two outputs never share a boundary user
 * key.
 *
 * Durability: each finished output is fsynced and closed in the background (at most
 * MAX_PENDING_SYNCS in flight: the merge is CPU work, an fsync waits for the device), and
 * `finish` waits for them all; `syncDirectory` then makes the new names durable. Errors are
 * KvError IO_ERROR naming the file; the first failure of a background sync or close
 * surfaces from the next `finishOutput` or from `finish`.
 *
 * Call order: (beforeUserKey, add*)* then finish (then syncDirectory), or discard at any
 * point after a failure. Every path created is remembered, so `discard` removes them all.
 */
import { ioError } from "../errors.js";
import { compareBytes, type ValueKind } from "../key/internal-key.js";
import { TableBuilder, type TableBuildResult } from "../sstable/table-builder.js";
import type { TableOptions } from "../sstable/table-options.js";
import type { FileMetadata } from "../version/file-metadata.js";
import { tableFilePath } from "../version/file-names.js";
import type { FileSystem, WritableFile } from "../vfs/file-system.js";

/** Outputs whose fsync may be in flight at once. */
export const MAX_PENDING_SYNCS = 4;

/** The metadata of table `number`, from what its builder's `finish` returned. */
export function tableMetadata(number: number, props: TableBuildResult): FileMetadata {
  return {
    number,
    size: props.fileSize,
    smallestKey: props.smallestKey,
    smallestSeq: props.smallestKeySeq,
    largestKey: props.largestKey,
    largestSeq: props.largestKeySeq,
    entries: props.entries,
    tombstones: props.tombstones,
  };
}

export interface OutputWriterOptions {
  /** The directory the outputs are written to (as `tableFilePath(dir, number)`). */
  readonly dir: string;
  readonly tableOptions: TableOptions;
  readonly targetFileSize: number;
  /** The grandparent level's files overlapping the inputs, sorted (may be empty). */
  readonly grandparents: readonly FileMetadata[];
  readonly maxGrandparentOverlapBytes: number;
  /** The file number of the next output, in order; throws (a KvError) when there is none. */
  readonly nextNumber: () => number;
  /** What the outputs are called in error messages, e.g. "compaction output". */
  readonly label: string;
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

export class OutputWriter {
  /** The finished outputs, in key order. */
  readonly outputs: FileMetadata[] = [];
  bytesWritten = 0;
  entriesOut = 0;
  private readonly created: string[] = [];
  /** Sync-and-close of finished outputs, oldest first (each never rejects: see `closing`). */
  private syncing: Promise<void>[] = [];
  /** The first failure of a background sync or close. */
  private syncError: unknown;
  private file: WritableFile | undefined;
  private builder: TableBuilder | undefined;
  private number = 0;
  private path = "";
  private readonly grandparents: GrandparentTracker;

  constructor(
    private readonly fs: FileSystem,
    private readonly options: OutputWriterOptions,
  ) {
    this.grandparents = new GrandparentTracker(
      options.grandparents,
      options.maxGrandparentOverlapBytes,
    );
  }

  /**
   * A new user key begins (keys ascending): ends the current output if it is due (see the
   * module comment). Returns a promise only when it ends one.
   */
  beforeUserKey(key: Uint8Array): Promise<void> | undefined {
    const stop = this.grandparents.stopBefore(key);
    const builder = this.builder;
    if (builder !== undefined && (stop || builder.estimatedSize >= this.options.targetFileSize)) {
      return this.finishOutput();
    }
    return undefined;
  }

  /**
   * Adds an entry, opening an output first if none is open. Synchronous (returns undefined)
   * while an output is open: callers await only when a file is created.
   */
  add(key: Uint8Array, seq: number, kind: ValueKind, value: Uint8Array): Promise<void> | undefined {
    const builder = this.builder;
    if (builder === undefined) return this.startAndAdd(key, seq, kind, value);
    builder.add(key, seq, kind, value);
    this.entriesOut++;
    return undefined;
  }

  private async startAndAdd(
    key: Uint8Array,
    seq: number,
    kind: ValueKind,
    value: Uint8Array,
  ): Promise<void> {
    await this.start();
    this.builder!.add(key, seq, kind, value);
    this.entriesOut++;
  }

  private async start(): Promise<void> {
    const number = this.options.nextNumber();
    this.number = number;
    this.path = tableFilePath(this.options.dir, number);
    // Recorded before creating: a failed create may still have left the name behind.
    this.created.push(this.path);
    try {
      this.file = await this.fs.createWritable(this.path);
    } catch (err) {
      throw ioError(`create ${this.options.label}`, err, this.path);
    }
    this.builder = new TableBuilder(this.file, this.options.tableOptions);
    this.grandparents.reset();
  }

  /**
   * Finishes the current output, if one is open (footer), and starts its fsync and close;
   * waits only when MAX_PENDING_SYNCS are already in flight.
   */
  async finishOutput(): Promise<void> {
    const builder = this.builder;
    const file = this.file;
    if (builder === undefined || file === undefined) return;
    const props = builder.finish();
    this.builder = undefined;
    this.file = undefined;
    this.syncing.push(this.closing(file, this.path));
    if (this.syncing.length > MAX_PENDING_SYNCS) await this.syncing.shift();
    this.throwSyncError();
    this.outputs.push(tableMetadata(this.number, props));
    this.bytesWritten += props.fileSize;
  }

  /** Finishes the current output and waits for every output's sync and close. */
  async finish(): Promise<void> {
    await this.finishOutput();
    const pending = this.syncing;
    this.syncing = [];
    await Promise.all(pending);
    this.throwSyncError();
  }

  /** fsync of the directory, when any output was written: their names become durable. */
  async syncDirectory(what: string): Promise<void> {
    if (this.outputs.length === 0) return;
    try {
      await this.fs.syncDir(this.options.dir);
    } catch (err) {
      throw ioError(what, err, this.options.dir);
    }
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
      this.syncError ??= ioError(`${step} ${this.options.label}`, err, path);
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
