/**
 * Write-ahead log writer: frames opaque record payloads (one write batch each) into the
 * block format of docs/format/wal.md (log format version 1).
 *
 * Grammar (one file):
 *
 *   log      := block* partial-block?
 *   block    := fragment* trailer?              (exactly BLOCK_SIZE = 32768 bytes)
 *   trailer  := 0x00{1..6}                      (when fewer than 7 bytes are left)
 *   fragment := crc:u32le length:u16le type:u8 payload:byte{length}
 *   record   := FULL | FIRST MIDDLE* LAST       (fragments in file order)
 *   crc      := maskCrc(crc32c(length, type, payload))   i.e. of fragment bytes [4, 7+length)
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
  HEADER_SIZE,
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
   * end of the log.
   */
  preallocateBytes?: number;
}

/** Pending buffers bigger than this are released after a flush (one huge record). */
const RETAINED_BUFFER_LIMIT = 4 * 1024 * 1024;
const INITIAL_BUFFER_SIZE = 64 * 1024;

/**
 * Bytes that a record of `payloadLength` bytes occupies when it starts at `blockOffset`
 * inside a block: its fragments' headers and payload, plus the zero trailer of any block it
 * has to skip because fewer than HEADER_SIZE bytes were left.
 */
export function framedLength(payloadLength: number, blockOffset: number): number {
  let total = 0;
  let left = payloadLength;
  let offset = blockOffset;
  for (;;) {
    const leftover = BLOCK_SIZE - offset;
    if (leftover < HEADER_SIZE) {
      total += leftover;
      offset = 0;
    }
    const avail = BLOCK_SIZE - offset - HEADER_SIZE;
    const n = Math.min(left, avail);
    total += HEADER_SIZE + n;
    offset += HEADER_SIZE + n;
    left -= n;
    if (left === 0) return total;
  }
}

/**
 * Frames `payload` into dst at `pos`, as if the log were at `blockOffset` inside a block.
 * dst must have framedLength(payload.length, blockOffset) bytes free at pos. Returns the
 * block offset after the record.
 */
function frameRecord(
  dst: Uint8Array,
  pos: number,
  payload: Uint8Array,
  blockOffset: number,
): number {
  let left = payload.length;
  let src = 0;
  let begin = true;
  for (;;) {
    const leftover = BLOCK_SIZE - blockOffset;
    if (leftover < HEADER_SIZE) {
      // The trailer: too small for a header. Zero it (the buffer is reused).
      dst.fill(0, pos, pos + leftover);
      pos += leftover;
      blockOffset = 0;
    }
    const avail = BLOCK_SIZE - blockOffset - HEADER_SIZE;
    const n = Math.min(left, avail);
    const end = n === left;
    const type = begin
      ? end
        ? FRAGMENT_FULL
        : FRAGMENT_FIRST
      : end
        ? FRAGMENT_LAST
        : FRAGMENT_MIDDLE;
    dst[pos + 4] = n & 0xff;
    dst[pos + 5] = n >>> 8;
    dst[pos + 6] = type;
    // Most records fit one fragment: no view to make (a view per put was ~100 bytes of garbage).
    dst.set(n === payload.length ? payload : payload.subarray(src, src + n), pos + HEADER_SIZE);
    // The CRC covers length, type and payload: bytes [4, 7 + n) of the fragment, contiguous.
    const crc = maskCrc(crc32c(dst, pos + 4, pos + HEADER_SIZE + n));
    dst[pos] = crc & 0xff;
    dst[pos + 1] = (crc >>> 8) & 0xff;
    dst[pos + 2] = (crc >>> 16) & 0xff;
    dst[pos + 3] = crc >>> 24;
    pos += HEADER_SIZE + n;
    blockOffset += HEADER_SIZE + n;
    src += n;
    left -= n;
    begin = false;
    if (left === 0) return blockOffset;
  }
}

/**
 * The framed bytes of `payloads` as consecutive records of a log whose end is at
 * `startOffset` (only `startOffset % BLOCK_SIZE` matters). Encoding a log from offset 0
 * gives exactly the bytes a LogWriter writes into a new file. Used by tests and tools.
 */
export function encodeRecords(payloads: Iterable<Uint8Array>, startOffset = 0): Uint8Array {
  const list = [...payloads];
  let blockOffset = startOffset % BLOCK_SIZE;
  let total = 0;
  for (const p of list) {
    const n = framedLength(p.length, blockOffset);
    total += n;
    blockOffset = (blockOffset + n) % BLOCK_SIZE;
  }
  const out = new Uint8Array(total);
  let pos = 0;
  blockOffset = startOffset % BLOCK_SIZE;
  for (const p of list) {
    const n = framedLength(p.length, blockOffset);
    blockOffset = frameRecord(out, pos, p, blockOffset);
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
  /** Physical end we have extended the file to with `preallocate` (0: not yet). */
  private preallocatedEnd = 0;
  private failure: KvError | undefined;

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
    this.file = file;
    this.blockOffsetValue = blockOffset;
    this.preallocateBytes = preallocateBytes;
    this.buffer = new Uint8Array(INITIAL_BUFFER_SIZE);
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
    const n = framedLength(payload.length, this.blockOffsetValue);
    this.reserve(n);
    this.blockOffsetValue = frameRecord(this.buffer, this.pending, payload, this.blockOffsetValue);
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
      if (this.preallocateBytes > 0) {
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
   */
  async sync(): Promise<void> {
    this.flush();
    try {
      await this.file.datasync();
    } catch (err) {
      throw this.fail("sync log", err);
    }
  }

  /**
   * `sync` on the calling thread (blocks the event loop until the device is done; see
   * WritableFile.datasyncSync). Same contract and failure handling as `sync`.
   */
  syncBlocking(): void {
    this.flush();
    try {
      this.file.datasyncSync();
    } catch (err) {
      throw this.fail("sync log", err);
    }
  }

  /**
   * Flushes anything pending (not synced) and closes the file. A writer that failed closes
   * the file without writing.
   */
  async close(): Promise<void> {
    try {
      if (this.failure === undefined) this.flush();
    } finally {
      await this.file.close();
    }
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
