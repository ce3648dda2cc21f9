/**
 * Write-ahead log writer: frames opaque record payloads (one write batch each) into the
 * block format of docs/format/wal.md, in log format version 1 (the default: the manifest
 * and the Raft log) or version 2 (`formatVersion: 2`: the store's write-ahead log).
 *
 * Grammar (one file):
 *
 *   log      := block* partial-block?
 *   block    := fragment* trailer?              (exactly BLOCK_SIZE = 32768 bytes)
 *   trailer  := 0x00{1..H-1}                    (when fewer than H header bytes are left)
 *   fragment := crc:u32le length:u16le type:u8 synced-end:u48le? payload:byte{length}
 *   record   := FULL | FIRST MIDDLE* LAST       (fragments in file order)
 *   crc      := maskCrc(crc32c(fragment bytes [4, H + length)))
 *
 * Version 1: H = 7, types 1..4, no synced-end. Version 2: H = 13, types 5..8, and every
 * fragment carries synced-end: the offset up to which this file was known durable (a
 * datasync through it had completed) when the fragment was framed. It never covers the
 * fragment's own bytes, so a readable fragment is proof that every byte before its
 * synced-end reached the disk; the reader uses that proof to tell a hole in unsynced
 * (preallocated) space from damage to synced data (docs/format/wal.md, "Version 2").
 *
 * A fragment never crosses a block boundary. FIRST and MIDDLE fragments fill their block
 * to its end; the fragment after them starts the next block.
 *
 * Group commit: `addRecord` frames records into a pending buffer (reused, grown by
 * doubling) and `flush` hands everything pending to the file in ONE `append`, so a group
 * of records costs one write system call; `sync` makes it durable with one fdatasync.
 *
 * Failures: an `append`, `preallocate` or `datasync` that throws leaves the file in an
 * unknown state (after a failed fdatasync Linux may have dropped the dirty pages), so the
 * writer throws that error as IO_ERROR (NO_SPACE for ENOSPC or EDQUOT) and every later
 * call throws READ_ONLY. The file is never written or synced again: the ways back are
 * reopening the log, reading it back (log-reader.ts) and cutting it at the end of its last
 * good record, or (the store after a no-space failure) a new log.
 */

import { ioError, isKvError, KvError } from "../errors.js";
import { crc32c, maskCrc } from "../util/crc32c.js";
import type { WritableFile } from "../vfs/file-system.js";
import {
  BLOCK_SIZE,
  FRAGMENT_FIRST,
  FRAGMENT_FULL,
  FRAGMENT_LAST,
  FRAGMENT_MIDDLE,
  FRAGMENT_V2_MARK,
  HEADER_SIZE,
  type LogFormatVersion,
  MAX_SYNCED_END,
  V2_HEADER_SIZE,
  V2_TYPE_OFFSET,
} from "./log-format.js";

export interface LogWriterOptions {
  /**
   * Offset inside the current 32 KiB block at which the next fragment goes. Default:
   * `file.size % BLOCK_SIZE`, which is right for any file this writer (or the reader's
   * `goodEndOffset`) produced. Must be an integer in [0, BLOCK_SIZE).
   */
  blockOffset?: number;
  /**
   * Keep the file physically extended with zeros this many bytes past the log's end
   * (`file.preallocate`), so appends overwrite allocated blocks and fdatasync needs no
   * metadata commit. Re-extended whenever the log's end comes within half of this of the
   * preallocated end. 0 (the default) disables it. The reader takes the zeros for the clean
   * end of the log. Safe after a power loss only in format version 2 (docs/design.md, "Log
   * preallocation").
   */
  preallocateBytes?: number;
  /**
   * With `preallocateBytes`: extend the file with zeros only once a `sync` or
   * `syncBlocking` was called (not a `backgroundSync`). A log that only receives unsynced
   * writes then never gets zeros ahead of its end: zeros that a background sync wrote to
   * the disk and records then overwrote would reach the disk twice, and writing them costs
   * the writer's thread a copy of each. Default false (preallocate from the first append).
   */
  preallocateOnceSynced?: boolean;
  /**
   * Framing version to write: 1 (default) or 2 (docs/format/wal.md). Never append version
   * 2 fragments to a file holding version 1 ones (their block trailers differ).
   */
  formatVersion?: LogFormatVersion;
  /**
   * Version 2: the offset up to which the file is already durable (for example the length
   * a reused log was cut to and synced at), claimed by the first records. At most
   * `file.size`. Default 0: nothing claimed until the first `sync` completes.
   */
  syncedEnd?: number;
}

/** Pending buffers bigger than this are released after a flush (one huge record). */
const RETAINED_BUFFER_LIMIT = 4 * 1024 * 1024;
const INITIAL_BUFFER_SIZE = 64 * 1024;

/** Header size of the fragments of a framing version. */
function headerSizeOf(version: LogFormatVersion): number {
  return version === 2 ? V2_HEADER_SIZE : HEADER_SIZE;
}

/**
 * Bytes that a record of `payloadLength` bytes occupies when it starts at `blockOffset`
 * inside a block: its fragments' headers and payload, plus the zero trailer of any block it
 * has to skip because fewer than a header's bytes were left. `headerSize` is HEADER_SIZE
 * (version 1, the default) or V2_HEADER_SIZE.
 */
export function framedLength(
  payloadLength: number,
  blockOffset: number,
  headerSize = HEADER_SIZE,
): number {
  let total = 0;
  let left = payloadLength;
  let offset = blockOffset;
  for (;;) {
    const leftover = BLOCK_SIZE - offset;
    if (leftover < headerSize) {
      total += leftover;
      offset = 0;
    }
    const avail = BLOCK_SIZE - offset - headerSize;
    const n = Math.min(left, avail);
    total += headerSize + n;
    offset += headerSize + n;
    left -= n;
    if (left === 0) return total;
  }
}

/**
 * Writes the header of the fragment at `pos` whose `length` payload bytes are in place:
 * length, type, synced-end (when headerSize is V2_HEADER_SIZE), then the CRC over bytes
 * [4, headerSize + length) of the fragment, contiguous.
 */
function writeHeader(
  dst: Uint8Array,
  pos: number,
  length: number,
  type: number,
  headerSize: number,
  syncedEnd: number,
): void {
  dst[pos + 4] = length & 0xff;
  dst[pos + 5] = length >>> 8;
  dst[pos + 6] = type;
  if (headerSize === V2_HEADER_SIZE) {
    // synced-end, 48 bits little-endian: the low 32 bits, then the high 16.
    const low = syncedEnd >>> 0;
    const high = Math.floor(syncedEnd / 0x1_0000_0000);
    dst[pos + 7] = low & 0xff;
    dst[pos + 8] = (low >>> 8) & 0xff;
    dst[pos + 9] = (low >>> 16) & 0xff;
    dst[pos + 10] = low >>> 24;
    dst[pos + 11] = high & 0xff;
    dst[pos + 12] = high >>> 8;
  }
  const crc = maskCrc(crc32c(dst, pos + 4, pos + headerSize + length));
  dst[pos] = crc & 0xff;
  dst[pos + 1] = (crc >>> 8) & 0xff;
  dst[pos + 2] = (crc >>> 16) & 0xff;
  dst[pos + 3] = crc >>> 24;
}

/**
 * Frames `payload` into dst at `pos`, as if the log were at `blockOffset` inside a block.
 * dst must have framedLength(payload.length, blockOffset, headerSize) bytes free at pos.
 * `syncedEnd` is written into every fragment when headerSize is V2_HEADER_SIZE. Returns
 * the block offset after the record.
 */
function frameRecord(
  dst: Uint8Array,
  pos: number,
  payload: Uint8Array,
  blockOffset: number,
  headerSize: number,
  syncedEnd: number,
): number {
  const typeOffset = headerSize === V2_HEADER_SIZE ? V2_TYPE_OFFSET : 0;
  let left = payload.length;
  let src = 0;
  let begin = true;
  for (;;) {
    const leftover = BLOCK_SIZE - blockOffset;
    if (leftover < headerSize) {
      // The trailer: too small for a header. Zero it (the buffer is reused).
      dst.fill(0, pos, pos + leftover);
      pos += leftover;
      blockOffset = 0;
    }
    const avail = BLOCK_SIZE - blockOffset - headerSize;
    const n = Math.min(left, avail);
    const end = n === left;
    const type = begin
      ? end
        ? FRAGMENT_FULL
        : FRAGMENT_FIRST
      : end
        ? FRAGMENT_LAST
        : FRAGMENT_MIDDLE;
    // Most records fit one fragment: no view to make (a view per put was ~100 bytes of garbage).
    dst.set(n === payload.length ? payload : payload.subarray(src, src + n), pos + headerSize);
    writeHeader(dst, pos, n, type + typeOffset, headerSize, syncedEnd);
    pos += headerSize + n;
    blockOffset += headerSize + n;
    src += n;
    left -= n;
    begin = false;
    if (left === 0) return blockOffset;
  }
}

/** Options of `encodeRecords`. */
export interface EncodeOptions {
  /** Framing version (default 1). */
  formatVersion?: LogFormatVersion;
  /**
   * Version 2: the synced-end every fragment claims (default 0). Must not exceed the
   * offset of any record (the reader rejects a fragment claiming its own bytes).
   */
  syncedEnd?: number;
}

/**
 * The framed bytes of `payloads` as consecutive records of a log whose end is at
 * `startOffset` (only `startOffset % BLOCK_SIZE` matters). Encoding a version 1 log from
 * offset 0 gives exactly the bytes a LogWriter writes into a new file. Used by tests and
 * tools.
 */
export function encodeRecords(
  payloads: Iterable<Uint8Array>,
  startOffset = 0,
  options: EncodeOptions = {},
): Uint8Array {
  const headerSize = headerSizeOf(options.formatVersion ?? 1);
  const syncedEnd = options.syncedEnd ?? 0;
  const list = [...payloads];
  let blockOffset = startOffset % BLOCK_SIZE;
  let total = 0;
  for (const p of list) {
    const n = framedLength(p.length, blockOffset, headerSize);
    total += n;
    blockOffset = (blockOffset + n) % BLOCK_SIZE;
  }
  const out = new Uint8Array(total);
  let pos = 0;
  blockOffset = startOffset % BLOCK_SIZE;
  for (const p of list) {
    const n = framedLength(p.length, blockOffset, headerSize);
    blockOffset = frameRecord(out, pos, p, blockOffset, headerSize, syncedEnd);
    pos += n;
  }
  return out;
}

export class LogWriter {
  readonly file: WritableFile;
  private blockOffsetValue: number;
  private buffer: Uint8Array;
  private pending = 0;
  private readonly preallocateBytes: number;
  /** HEADER_SIZE or V2_HEADER_SIZE: the framing version written. */
  private readonly headerSize: number;
  /** Version 2: the offset through which a datasync is known complete. */
  private syncedEndValue: number;
  /** Physical end we have extended the file to with `preallocate` (0: not yet). */
  private preallocatedEnd = 0;
  /** False while preallocation waits for a first sync (the preallocateOnceSynced option). */
  private preallocating: boolean;
  private failure: KvError | undefined;
  /** The newest `sync` in flight (undefined when none): later ones run after it. */
  private syncChain: Promise<void> | undefined;

  constructor(file: WritableFile, options: LogWriterOptions = {}) {
    const blockOffset = options.blockOffset ?? file.size % BLOCK_SIZE;
    if (!Number.isInteger(blockOffset) || blockOffset < 0 || blockOffset >= BLOCK_SIZE) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `log blockOffset must be an integer in [0, ${BLOCK_SIZE}), got ${blockOffset}`,
        { file: file.path },
      );
    }
    const preallocateBytes = options.preallocateBytes ?? 0;
    if (!Number.isSafeInteger(preallocateBytes) || preallocateBytes < 0) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `log preallocateBytes must be a non-negative integer, got ${preallocateBytes}`,
        { file: file.path },
      );
    }
    const formatVersion = options.formatVersion ?? 1;
    if (formatVersion !== 1 && formatVersion !== 2) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `log formatVersion must be 1 or 2, got ${formatVersion}`,
        {
          file: file.path,
        },
      );
    }
    const syncedEnd = options.syncedEnd ?? 0;
    if (!Number.isSafeInteger(syncedEnd) || syncedEnd < 0 || syncedEnd > file.size) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `log syncedEnd must be an integer in [0, ${file.size}] (the file's size), got ${syncedEnd}`,
        { file: file.path },
      );
    }
    this.file = file;
    this.blockOffsetValue = blockOffset;
    this.preallocateBytes = preallocateBytes;
    this.preallocating = options.preallocateOnceSynced !== true;
    this.headerSize = headerSizeOf(formatVersion);
    this.syncedEndValue = syncedEnd;
    this.buffer = new Uint8Array(INITIAL_BUFFER_SIZE);
  }

  /** The framing version written: 1 or 2. */
  get formatVersion(): LogFormatVersion {
    return this.headerSize === V2_HEADER_SIZE ? 2 : 1;
  }

  /**
   * The offset through which the file is known durable: the end of what was handed to the
   * file before the last completed `sync` (or the `syncedEnd` option). Version 2 records
   * claim it.
   */
  get syncedEnd(): number {
    return this.syncedEndValue;
  }

  /** Offset inside the current block at which the next fragment goes (pending included). */
  get blockOffset(): number {
    return this.blockOffsetValue;
  }

  /** True iff an append or sync failed: the writer is unusable (see the module comment). */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Bytes framed by `addRecord` and not yet handed to the file by `flush`. */
  get pendingBytes(): number {
    return this.pending;
  }

  /** The log's logical end once everything pending is flushed. */
  get size(): number {
    return this.file.size + this.pending;
  }

  /** Frames one record into the pending buffer. No I/O: call `flush` to write it. */
  addRecord(payload: Uint8Array): void {
    this.checkUsable();
    const n = framedLength(payload.length, this.blockOffsetValue, this.headerSize);
    this.reserve(n);
    this.blockOffsetValue = frameRecord(
      this.buffer,
      this.pending,
      payload,
      this.blockOffsetValue,
      this.headerSize,
      this.syncedEndValue,
    );
    this.pending += n;
  }

  /**
   * Writes everything pending with one `file.append` (preallocating first when due). Not
   * durable until `sync`. On failure throws IO_ERROR and the writer is unusable (READ_ONLY).
   */
  flush(): void {
    this.checkUsable();
    if (this.pending === 0) return;
    const data = this.buffer.subarray(0, this.pending);
    try {
      if (this.preallocateBytes > 0 && this.preallocating) {
        const end = this.file.size + this.pending;
        if (end + this.preallocateBytes / 2 > this.preallocatedEnd) {
          this.file.preallocate(end + this.preallocateBytes);
          this.preallocatedEnd = end + this.preallocateBytes;
        }
      }
      this.file.append(data);
    } catch (err) {
      throw this.fail("append to log", err);
    } finally {
      this.pending = 0;
    }
    if (this.buffer.length > RETAINED_BUFFER_LIMIT) {
      this.buffer = new Uint8Array(INITIAL_BUFFER_SIZE);
    }
  }

  /** `addRecord` then `flush`: one record, one append. */
  appendRecord(payload: Uint8Array): void {
    this.addRecord(payload);
    this.flush();
  }

  /**
   * Flushes anything pending, then fdatasyncs the file: every record added before the call
   * is durable when this resolves. On failure throws IO_ERROR and the writer is unusable.
   * Syncs run one at a time, in call order: a sync called while another is in flight
   * issues its fdatasync once that one has completed, and fails (READ_ONLY) if it failed.
   * Two fdatasyncs of one file in flight at once could share one writeback error between
   * them, reported to only one caller (Linux reports an error once per open file), and the
   * other would take data for durable that is not.
   */
  sync(): Promise<void> {
    this.preallocating = true;
    return this.backgroundSync();
  }

  /**
   * `sync` for a caller that no writer waits on (the store's walBytesPerSync): the same
   * fdatasync, ordering and failure handling, but it does not start preallocation (see
   * the preallocateOnceSynced option).
   */
  backgroundSync(): Promise<void> {
    try {
      this.flush();
    } catch (err) {
      return Promise.reject(err);
    }
    // fdatasync covers what was written before the call: everything up to here.
    const end = this.file.size;
    const prior = this.syncChain;
    const run =
      prior === undefined
        ? this.datasyncThrough(end)
        : prior.then(
            () => this.datasyncThrough(end),
            () => this.datasyncThrough(end),
          );
    this.syncChain = run;
    const settle = (): void => {
      if (this.syncChain === run) this.syncChain = undefined;
    };
    run.then(settle, settle);
    return run;
  }

  /** True while a `sync` is in flight (a blocking sync must not run beside it). */
  get syncing(): boolean {
    return this.syncChain !== undefined;
  }

  /** One fdatasync, after which the file is durable through `end`. */
  private async datasyncThrough(end: number): Promise<void> {
    this.checkUsable();
    try {
      await this.file.datasync();
    } catch (err) {
      throw this.fail("sync log", err);
    }
    this.synced(end);
  }

  /**
   * `sync` on the calling thread (blocks the event loop until the device is done; see
   * WritableFile.datasyncSync). Same contract and failure handling as `sync`. REQUIRES no
   * `sync` in flight (`syncing` false).
   */
  syncBlocking(): void {
    if (this.syncChain !== undefined)
      throw new Error("LogWriter.syncBlocking: a sync is in flight");
    this.preallocating = true;
    this.flush();
    const end = this.file.size;
    try {
      this.file.datasyncSync();
    } catch (err) {
      throw this.fail("sync log", err);
    }
    this.synced(end);
  }

  /**
   * `sync`, then (version 2) a sync mark claiming every byte before it, synced too: after
   * a clean close nothing in the log is left without a later fragment proving it durable,
   * so damage anywhere in it reads as damage to synced data, never as a torn tail. For
   * version 1 the same as `sync`. Same failure handling as `sync`.
   */
  async seal(): Promise<void> {
    await this.sync();
    if (this.headerSize !== V2_HEADER_SIZE) return;
    this.checkUsable();
    const leftover = BLOCK_SIZE - this.blockOffsetValue;
    const n = (leftover < V2_HEADER_SIZE ? leftover : 0) + V2_HEADER_SIZE;
    this.reserve(n);
    let pos = this.pending;
    if (leftover < V2_HEADER_SIZE) {
      this.buffer.fill(0, pos, pos + leftover); // the block's trailer
      pos += leftover;
      this.blockOffsetValue = 0;
    }
    writeHeader(this.buffer, pos, 0, FRAGMENT_V2_MARK, V2_HEADER_SIZE, this.syncedEndValue);
    this.blockOffsetValue += V2_HEADER_SIZE;
    this.pending += n;
    await this.sync();
  }

  /**
   * Flushes anything pending (not synced) and closes the file. A writer that failed closes
   * the file without writing.
   */
  async close(): Promise<void> {
    // A sync in flight is let finish first: closing its descriptor under it could make
    // the fdatasync fail, or reach another file that reused the descriptor number.
    if (this.syncChain !== undefined) await this.syncChain.catch(() => {});
    try {
      if (this.failure === undefined) this.flush();
    } finally {
      await this.file.close();
    }
  }

  /** A datasync issued when the file ended at `end` completed. */
  private synced(end: number): void {
    if (end > this.syncedEndValue && end <= MAX_SYNCED_END) this.syncedEndValue = end;
  }

  private checkUsable(): void {
    if (this.failure !== undefined) {
      throw new KvError(
        "READ_ONLY",
        `log ${this.file.path} failed earlier (${this.failure.message}); reopen the store`,
        { cause: this.failure, file: this.file.path },
      );
    }
  }

  private fail(what: string, err: unknown): KvError {
    const error = isKvError(err) ? err : ioError(`${what} ${this.file.path}`, err, this.file.path);
    this.failure = error;
    return error;
  }

  private reserve(n: number): void {
    const need = this.pending + n;
    if (need <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < need) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buffer.subarray(0, this.pending));
    this.buffer = grown;
  }
}
