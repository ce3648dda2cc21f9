/**
 * RaftLogStorage: the durable Raft log on the FileSystem interface. Format and recovery
 * rules: docs/format/raft-log.md (raft log format version 1, over the WAL framing of
 * docs/format/wal.md).
 *
 * A directory of its own, locked (`LOCK`), holding segment files `segment-<seq>.log`. Each
 * segment starts with a header (the log's state when it was started) and continues with
 * one record per write: `save` (a snapshot install, entries, the hard state), `snapshot`
 * (the application's snapshot), `compact`, and `close`. Every record carries the hard
 * state and the offset up to which its segment was known durable.
 *
 * Reads are synchronous: the retained entries are kept in memory (as etcd keeps its
 * MemoryStorage beside its WAL), the disk is read only at open.
 *
 * Writes are serialized in call order. Each `save` is one record, one `append` and, unless
 * `mustSync` is false, one fdatasync; when the current segment is full a save starts the
 * next one (its header and the record in one append, one fdatasync, then a directory
 * fsync before the save resolves). The in-memory log changes only once the write is done,
 * so reads never see what a failed write tried. Any I/O error leaves the storage failed:
 * later writes throw READ_ONLY, and reopening recovers what reached the disk (a failed
 * fsync is never retried).
 *
 * Legal call order: `open`, then any of the reads and `save` / `createSnapshot` /
 * `compact` (concurrently if wished; they run one at a time), then `close`.
 */

import { ioError, isKvError, KvError } from "../../errors.js";
import {
  dirName,
  type FileLock,
  type FileSystem,
  joinPath,
  LockHeldError,
  type WritableFile,
} from "../../vfs/file-system.js";
import { LogWriter } from "../../wal/log-writer.js";
import { isRaftError, RaftError } from "../errors.js";
import type { ConfState, Entry, InitialState, RaftStorage, Snapshot } from "../types.js";
import { encodeLogRecord, type LogRecord } from "./log-record.js";
import type { LogState, RaftLogUpdate } from "./log-state.js";
import { type ChainSegment, type RaftLogDamage, recoverRaftLog } from "./recovery.js";
import { DAMAGED_SUFFIX, LOCK_FILE_NAME, segmentFileName } from "./segment-name.js";

export interface RaftLogStorageOptions {
  /** A save starts a new segment once the current one holds this many bytes. Default 64 MiB. */
  segmentBytes?: number;
  /**
   * Keep each segment extended with zeros this many bytes past its end (LogWriter's
   * `preallocateBytes`), so that fdatasync overwrites allocated blocks and needs no
   * metadata commit. Safe with this format: recovery tells a hole left in unsynced
   * preallocated space from damage by the durable offsets records carry. Default 0 (off);
   * 1 MiB is a good value on a real disk.
   */
  preallocateBytes?: number;
  /** Create the directory when it does not exist. Default true. */
  createIfMissing?: boolean;
}

/** What `open` found and did (docs/format/raft-log.md, "Recovery"). */
export interface RaftLogRecoveryReport {
  /** Segment files read. */
  readonly segmentsRead: number;
  readonly bytesRead: number;
  /** Records replayed into the log. */
  readonly records: number;
  /** Bytes of unsynced tail dropped (records and damaged framing after the durable point). */
  readonly tornTailBytes: number;
  /** Damage to synced data, when found: the log keeps only the entries before it. */
  readonly damage: RaftLogDamage | undefined;
  /** The repair mark the log opened with (see InitialState.repair). */
  readonly repair: { readonly throughIndex: number } | undefined;
  /** Files removed: leftovers off the chain, segments compacted away. */
  readonly removedSegments: readonly string[];
  /** Segments set aside as `<name>.damaged` (never read again, never removed). */
  readonly damagedSegments: readonly string[];
}

const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;

function positiveInteger(value: number | undefined, fallback: number, what: string): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 0) {
    throw new RaftError(
      "INVALID_ARGUMENT",
      `${what} must be a non-negative safe integer, got ${v}`,
    );
  }
  return v;
}

/** Wraps what a file operation threw as KvError (IO_ERROR unless it already is one). */
function asKvError(what: string, err: unknown, file?: string): KvError {
  return isKvError(err) ? err : ioError(what, err, file);
}

export class RaftLogStorage implements RaftStorage {
  readonly dir: string;
  /** What open found and did. */
  readonly recovery: RaftLogRecoveryReport;
  private readonly fs: FileSystem;
  private readonly lock: FileLock;
  private readonly segmentBytes: number;
  private readonly preallocateBytes: number;
  private readonly state: LogState;
  /** Sealed segments (no longer written), oldest first. */
  private readonly sealed: ChainSegment[];
  private current: { name: string; seq: number; writer: LogWriter };
  /** Bytes of the current segment known durable. */
  private syncedEnd: number;
  private tail: Promise<unknown> = Promise.resolve();
  private failure: KvError | undefined;
  private closed = false;

  private constructor(init: {
    fs: FileSystem;
    dir: string;
    lock: FileLock;
    options: { segmentBytes: number; preallocateBytes: number };
    state: LogState;
    sealed: ChainSegment[];
    current: { name: string; seq: number; writer: LogWriter };
    recovery: RaftLogRecoveryReport;
  }) {
    this.fs = init.fs;
    this.dir = init.dir;
    this.lock = init.lock;
    this.segmentBytes = init.options.segmentBytes;
    this.preallocateBytes = init.options.preallocateBytes;
    this.state = init.state;
    this.sealed = init.sealed;
    this.current = init.current;
    this.syncedEnd = init.current.writer.size;
    this.recovery = init.recovery;
  }

  /**
   * Opens (creating if needed) the log in `dir`: takes the lock, recovers, and starts a new
   * segment (see docs/format/raft-log.md, "Opening"). Throws KvError LOCKED when another
   * handle holds the directory, IO_ERROR, or CORRUPTION for a log of a newer format.
   * Damage is not an error: it is in `recovery.damage`, and `initialState().repair` is set.
   */
  static async open(
    fs: FileSystem,
    dir: string,
    options: RaftLogStorageOptions = {},
  ): Promise<RaftLogStorage> {
    const segmentBytes = positiveInteger(
      options.segmentBytes,
      DEFAULT_SEGMENT_BYTES,
      "segmentBytes",
    );
    const preallocateBytes = positiveInteger(options.preallocateBytes, 0, "preallocateBytes");
    await prepareDirectory(fs, dir, options.createIfMissing ?? true);
    const lock = await takeLock(fs, dir);
    let writer: LogWriter | undefined;
    try {
      const found = await recoverRaftLog(fs, dir);
      const state = found.state;
      const chain = found.chain;
      const head = chain[chain.length - 1];
      if (head !== undefined) {
        // What recovery read may be only in the page cache (a process crash): make it
        // durable before a new header says it is.
        await syncFile(fs, joinPath(dir, head.name));
      }
      const seq = found.maxSeq + 1;
      const name = segmentFileName(seq);
      const path = joinPath(dir, name);
      let file: WritableFile;
      try {
        file = await fs.createWritable(path);
      } catch (err) {
        throw asKvError(`create raft log segment ${path}`, err, path);
      }
      writer = new LogWriter(file, { preallocateBytes });
      const header = state.header(seq, head?.seq ?? 0, head?.end ?? 0, found.damage !== undefined);
      writer.addRecord(encodeLogRecord(header));
      await writer.sync();
      await syncDirectory(fs, dir);

      const removed: string[] = [];
      const setAside: string[] = [];
      for (const n of found.damaged) {
        const from = joinPath(dir, n);
        try {
          await fs.rename(from, `${from}${DAMAGED_SUFFIX}`);
        } catch (err) {
          throw asKvError(`set aside damaged raft log segment ${from}`, err, from);
        }
        setAside.push(n);
      }
      for (const n of found.obsolete) {
        await removeFile(fs, joinPath(dir, n));
        removed.push(n);
      }
      const sealed = chain;
      while (sealed.length > 0 && sealed[0]!.liveThrough <= state.compactIndex) {
        const n = sealed.shift()!.name;
        await removeFile(fs, joinPath(dir, n));
        removed.push(n);
      }
      if (removed.length > 0 || setAside.length > 0) await syncDirectory(fs, dir);

      const repair = state.repairThrough === 0 ? undefined : { throughIndex: state.repairThrough };
      return new RaftLogStorage({
        fs,
        dir,
        lock,
        options: { segmentBytes, preallocateBytes },
        state,
        sealed,
        current: { name, seq, writer },
        recovery: {
          segmentsRead: found.segmentsRead,
          bytesRead: found.bytesRead,
          records: found.records,
          tornTailBytes: found.tornTailBytes,
          damage: found.damage,
          repair,
          removedSegments: removed,
          damagedSegments: setAside,
        },
      });
    } catch (err) {
      if (writer !== undefined) await writer.close().catch(() => {});
      await lock.release().catch(() => {});
      throw isRaftError(err) ? err : asKvError(`open raft log ${dir}`, err, dir);
    }
  }

  // ---- RaftStorage (synchronous, from memory) ----

  initialState(): InitialState {
    const s = this.state;
    return s.repairThrough === 0
      ? { hardState: s.hardState, confState: s.confState }
      : {
          hardState: s.hardState,
          confState: s.confState,
          repair: { throughIndex: s.repairThrough },
        };
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const s = this.state;
    if (lo > hi) throw new RaftError("INVALID_ARGUMENT", `entries: lo ${lo} > hi ${hi}`);
    if (lo <= s.compactIndex) {
      throw new RaftError("COMPACTED", `entries from ${lo}: compacted through ${s.compactIndex}`);
    }
    if (hi > s.lastIndex + 1) {
      throw new RaftError("UNAVAILABLE", `entries up to ${hi - 1}: last index is ${s.lastIndex}`);
    }
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i < hi; i++) {
      const e = s.entries[i - s.entriesStart]!;
      bytes += e.data.length;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  term(index: number): number {
    const s = this.state;
    if (index < s.compactIndex) {
      throw new RaftError("COMPACTED", `term of ${index}: compacted through ${s.compactIndex}`);
    }
    if (index > s.lastIndex) {
      throw new RaftError("UNAVAILABLE", `term of ${index}: last index is ${s.lastIndex}`);
    }
    return s.termAt(index)!;
  }

  firstIndex(): number {
    return this.state.firstIndex;
  }

  lastIndex(): number {
    return this.state.lastIndex;
  }

  snapshot(): Snapshot {
    return this.state.snapshot;
  }

  /** Names of the segment files in use, oldest first (the last one is being written). */
  segmentNames(): string[] {
    return [...this.sealed.map((s) => s.name), this.current.name];
  }

  // ---- writes ----

  /**
   * Persists one Ready's worth: installs `snapshot` (replacing the whole log), appends
   * `entries` (replacing any stored suffix from the first one's index), records
   * `hardState`; one record, one append, one fdatasync (none when `mustSync` is false; a
   * snapshot is always synced). Resolves once durable, and with it every earlier save.
   * Nothing to change: writes nothing (but syncs earlier unsynced saves unless `mustSync`
   * is false).
   * Bad input (non-consecutive entries, a gap, a term or vote going back, a commit past the
   * last index) throws RaftError INVALID_ARGUMENT, an out-of-date snapshot
   * SNAPSHOT_OUT_OF_DATE; nothing changes.
   */
  save(update: RaftLogUpdate): Promise<void> {
    return this.serialized(async () => {
      this.checkWritable();
      const plan = this.state.planSave(update);
      const sync = plan.snapshot !== undefined || update.mustSync !== false;
      if (!plan.changes) {
        // Nothing to write; a synced save still makes earlier unsynced ones durable.
        if (sync && this.syncedEnd < this.current.writer.size) await this.syncCurrent();
        return;
      }
      await this.write(
        (syncedEnd) => ({
          kind: "save",
          syncedEnd,
          lastIndex: plan.lastIndex,
          hardState: plan.hardState,
          snapshot: plan.snapshot,
          entries: plan.entries,
        }),
        sync,
        true,
      );
      const replacedFrom = this.state.applySave(plan);
      for (const s of this.sealed) {
        if (s.liveThrough > replacedFrom - 1) s.liveThrough = replacedFrom - 1;
      }
      if (plan.snapshot !== undefined) await this.removeCompactedSegments();
    });
  }

  /**
   * Records the snapshot the application took of its state at `index` (<= last index,
   * newer than the stored snapshot), durably; entries are kept until `compact`. Returns
   * the snapshot (its term is the entry's). Throws RaftError SNAPSHOT_OUT_OF_DATE,
   * UNAVAILABLE (past the last index) or COMPACTED.
   */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Promise<Snapshot> {
    return this.serialized(async () => {
      this.checkWritable();
      const snapshot = this.state.planCreateSnapshot(index, confState, data);
      const { lastIndex, hardState } = this.state;
      await this.write(
        (syncedEnd) => ({ kind: "snapshot", syncedEnd, lastIndex, hardState, snapshot }),
        true,
        false,
      );
      this.state.applyCreateSnapshot(snapshot);
      return snapshot;
    });
  }

  /**
   * Discards the entries up to `index` (at most the snapshot's index), durably, then
   * removes the segments that hold nothing newer. Throws RaftError COMPACTED when the log
   * is already compacted through `index` (as etcd's MemoryStorage), INVALID_ARGUMENT when
   * `index` is past the snapshot.
   */
  compact(index: number): Promise<void> {
    return this.serialized(async () => {
      this.checkWritable();
      const term = this.state.planCompact(index);
      const { lastIndex, hardState } = this.state;
      await this.write(
        (syncedEnd) => ({ kind: "compact", syncedEnd, lastIndex, hardState, index, term }),
        true,
        false,
      );
      this.state.applyCompact(index, term);
      await this.removeCompactedSegments();
    });
  }

  /**
   * Waits for pending writes, records a clean close (so the next open can prove the last
   * write durable), closes the segment and releases the lock. Reads still answer from
   * memory afterwards; writes throw CLOSED. A second call does nothing.
   */
  close(): Promise<void> {
    return this.serialized(async () => {
      if (this.closed) return;
      this.closed = true;
      let error: unknown;
      if (this.failure === undefined) {
        try {
          // Sync first, so that the close record's durable offset covers every save.
          if (this.syncedEnd < this.current.writer.size) await this.syncCurrent();
          const { lastIndex, hardState } = this.state;
          await this.write(
            (syncedEnd) => ({ kind: "close", syncedEnd, lastIndex, hardState }),
            true,
            false,
          );
        } catch (err) {
          error = err;
        }
      }
      try {
        await this.current.writer.close();
      } catch (err) {
        error ??= asKvError(`close ${this.current.name}`, err, this.current.name);
      }
      await this.lock.release().catch(() => {});
      if (error !== undefined) throw error;
    });
  }

  // ---- internals ----

  private serialized<T>(op: () => Promise<T>): Promise<T> {
    const result = this.tail.then(op);
    this.tail = result.catch(() => {});
    return result;
  }

  private checkWritable(): void {
    if (this.closed) {
      throw new KvError("CLOSED", `raft log ${this.dir} is closed`, { file: this.dir });
    }
    if (this.failure !== undefined) {
      throw new KvError(
        "READ_ONLY",
        `raft log ${this.dir} failed earlier (${this.failure.message}); reopen it`,
        { cause: this.failure, file: this.dir },
      );
    }
  }

  /**
   * Writes one record, syncing when `sync`. A save (`mayRotate`) that syncs starts a new
   * segment first when the current one is full and wholly synced: the new header and the
   * record in one append, one fdatasync, then a directory fsync. The record is built for
   * the `syncedEnd` of the segment it goes to. Encoding errors throw before any I/O; I/O
   * errors leave the storage failed.
   */
  private async write(
    build: (syncedEnd: number) => LogRecord,
    sync: boolean,
    mayRotate: boolean,
  ): Promise<void> {
    const old = this.current;
    const rotate =
      mayRotate &&
      sync &&
      old.writer.size >= this.segmentBytes &&
      this.syncedEnd === old.writer.size;
    const payload = encodeLogRecord(build(rotate ? 0 : this.syncedEnd));
    let next = old;
    try {
      if (rotate) {
        const seq = old.seq + 1;
        const name = segmentFileName(seq);
        const path = joinPath(this.dir, name);
        let file: WritableFile;
        try {
          file = await this.fs.createWritable(path);
        } catch (err) {
          throw asKvError(`create raft log segment ${path}`, err, path);
        }
        next = {
          name,
          seq,
          writer: new LogWriter(file, { preallocateBytes: this.preallocateBytes }),
        };
        next.writer.addRecord(
          encodeLogRecord(this.state.header(seq, old.seq, old.writer.size, false)),
        );
      }
      next.writer.addRecord(payload);
      if (sync) await next.writer.sync();
      else next.writer.flush();
      if (rotate) {
        await syncDirectory(this.fs, this.dir);
        this.current = next;
        this.sealed.push({
          name: old.name,
          seq: old.seq,
          end: old.writer.size,
          liveThrough: this.state.lastIndex,
        });
        await old.writer.close();
      }
    } catch (err) {
      if (next !== old && this.current === old) await next.writer.close().catch(() => {});
      this.failure = asKvError(`write raft log ${this.dir}`, err, this.dir);
      throw this.failure;
    }
    if (sync) this.syncedEnd = next.writer.size;
  }

  /** fdatasyncs the current segment (it holds unsynced writes). */
  private async syncCurrent(): Promise<void> {
    const writer = this.current.writer;
    try {
      await writer.sync();
    } catch (err) {
      this.failure = asKvError(`sync raft log ${this.dir}`, err, this.dir);
      throw this.failure;
    }
    this.syncedEnd = writer.size;
  }

  /** Removes the oldest sealed segments whose entries are all compacted away. */
  private async removeCompactedSegments(): Promise<void> {
    let removed = false;
    try {
      while (this.sealed.length > 0 && this.sealed[0]!.liveThrough <= this.state.compactIndex) {
        const s = this.sealed[0]!;
        await removeFile(this.fs, joinPath(this.dir, s.name));
        this.sealed.shift();
        removed = true;
      }
      if (removed) await syncDirectory(this.fs, this.dir);
    } catch (err) {
      this.failure = asKvError(`remove raft log segments in ${this.dir}`, err, this.dir);
      throw this.failure;
    }
  }
}

async function prepareDirectory(fs: FileSystem, dir: string, create: boolean): Promise<void> {
  try {
    if (await fs.exists(dir)) return;
    if (!create) {
      throw new KvError("INVALID_ARGUMENT", `${dir} does not exist (createIfMissing is false)`, {
        file: dir,
      });
    }
    await fs.mkdir(dir);
    // The new directory's own name is durable only once its parent is synced.
    await fs.syncDir(dirName(dir));
  } catch (err) {
    throw asKvError(`create raft log directory ${dir}`, err, dir);
  }
}

async function takeLock(fs: FileSystem, dir: string): Promise<FileLock> {
  const path = joinPath(dir, LOCK_FILE_NAME);
  try {
    return await fs.lock(path);
  } catch (err) {
    if (err instanceof LockHeldError) {
      throw new KvError(
        "LOCKED",
        `raft log ${dir} is in use by another open handle (in this process or another); close it first`,
        { file: path, cause: err },
      );
    }
    throw ioError("cannot take the raft log lock", err, path);
  }
}

async function syncFile(fs: FileSystem, path: string): Promise<void> {
  let file: WritableFile;
  try {
    file = await fs.openWritable(path);
  } catch (err) {
    throw asKvError(`open ${path} to sync it`, err, path);
  }
  try {
    await file.datasync();
  } catch (err) {
    await file.close().catch(() => {});
    throw asKvError(`sync ${path}`, err, path);
  }
  try {
    await file.close();
  } catch (err) {
    throw asKvError(`close ${path}`, err, path);
  }
}

async function syncDirectory(fs: FileSystem, dir: string): Promise<void> {
  try {
    await fs.syncDir(dir);
  } catch (err) {
    throw asKvError(`sync directory ${dir}`, err, dir);
  }
}

async function removeFile(fs: FileSystem, path: string): Promise<void> {
  try {
    await fs.remove(path);
  } catch (err) {
    throw asKvError(`remove ${path}`, err, path);
  }
}
