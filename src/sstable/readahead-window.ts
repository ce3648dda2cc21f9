/**
 * ReadaheadWindow: the read-ahead state of one table iterator (TableIteratorOptions
 * `readaheadBytes`): the last chunk of the file it read in one positioned read, a run of
 * data blocks whose frames (block and trailer) follow each other in the file, and the
 * block a forward scan will want next.
 *
 * By default every chunk is fresh memory, exactly sized, and is never written again after
 * its read: blocks built on views of it (and value views of those blocks) stay valid as
 * long as they are kept, which also keeps the whole chunk alive. With `reuse`, the window
 * reads every chunk into the same memory (`bytes` of it; more only for an oversized
 * block): what came from a chunk is valid only until the next `fill`, and a scan allocates
 * nothing per chunk (no garbage for the collector to catch up with). With a `pool` too, that
 * memory comes from the pool and goes back to it at `release`, for the next window (a
 * compaction opens one window per input: without the pool, each input of each job would
 * leave its chunk as old-generation garbage in the worker). The window only reads and
 * slices; checking and
 * decoding the blocks is the reader's job (TableReader).
 */
import { ioError } from "../errors.js";
import type { BufferPool } from "../util/buffer-pool.js";
import type { ReadableFile } from "../vfs/file-system.js";
import { BLOCK_TRAILER_SIZE } from "./format.js";
import type { TableIndex } from "./table-index.js";

const NO_BYTES = new Uint8Array(0);

export class ReadaheadWindow {
  /** The last chunk: file bytes [start, start + chunk.length), `filled` of them read. */
  private chunk: Uint8Array = NO_BYTES;
  private start = 0;
  private filled = 0;
  /** The data blocks the chunk was read for: [first, end). */
  private first = 0;
  private end = 0;
  /** The block after the last one served: a chunk is read only for this one (forward). */
  next = 0;

  /**
   * `bytes`: the chunk size aimed at (a chunk holds whole blocks, at least one). `reuse`:
   * read every chunk into the same memory; `pool` (with reuse): where that memory comes
   * from and goes back to (see the module comment).
   */
  constructor(
    readonly bytes: number,
    readonly reuse = false,
    private readonly pool?: BufferPool<ArrayBuffer>,
  ) {}

  /**
   * Gives the reused memory back to the pool (with `reuse` and a pool) and empties the
   * window. REQUIRES nothing that came from a chunk is used again.
   */
  release(): void {
    const buffer = this.chunk.buffer;
    this.chunk = NO_BYTES;
    this.first = 0;
    this.end = 0;
    this.filled = 0;
    if (this.reuse && this.pool !== undefined && buffer.byteLength === this.bytes) {
      this.pool.give(buffer as ArrayBuffer);
    }
  }

  /** True iff the current chunk was read for data block i. */
  covers(i: number): boolean {
    return i >= this.first && i < this.end;
  }

  /**
   * Reads a new chunk starting with data block i: blocks i, i + 1, ... as long as each
   * frame starts where the previous one ends, ends by `dataLimit`, and the chunk stays
   * within `bytes` (block i is always taken). Returns the count of bytes read (fewer than
   * asked only if the file is now shorter than at open), or -1, reading nothing, when
   * block i itself does not end by dataLimit. A failed read is IO_ERROR naming the file and
   * the offset of block i, and leaves the window empty.
   */
  fill(file: ReadableFile, index: TableIndex, i: number, dataLimit: number): number {
    const offsets = index.blockOffsets;
    const sizes = index.blockSizes;
    const start = offsets[i]!;
    let end = start + sizes[i]! + BLOCK_TRAILER_SIZE;
    if (start < 0 || end > dataLimit) return -1;
    let j = i + 1;
    for (; j < index.count; j++) {
      const frameEnd = offsets[j]! + sizes[j]! + BLOCK_TRAILER_SIZE;
      if (offsets[j] !== end || frameEnd > dataLimit || frameEnd - start > this.bytes) break;
      end = frameEnd;
    }
    this.first = 0;
    this.end = 0;
    const chunk = this.chunkMemory(end - start);
    let n: number;
    try {
      n = file.read(chunk, start);
    } catch (err) {
      throw ioError(
        `read data block at offset ${start} (read-ahead of ${end - start} bytes, ${j - i} blocks)`,
        err,
        file.path,
      );
    }
    this.chunk = chunk;
    this.start = start;
    this.filled = n;
    this.first = i;
    this.end = j;
    return n;
  }

  /** Memory for a chunk of `size` bytes: the last chunk's when reusing and big enough. */
  private chunkMemory(size: number): Uint8Array {
    const last = this.chunk;
    if (!this.reuse) {
      // Not Buffer.allocUnsafe: memory of its own, never a slice of a shared pool slab.
      return Buffer.allocUnsafeSlow(size);
    }
    if (last.buffer.byteLength >= size) return new Uint8Array(last.buffer, 0, size);
    // Room for any chunk of the aimed-at size, so only an oversized block allocates again.
    if (size <= this.bytes) {
      const pooled = this.pool?.take(this.bytes);
      if (pooled !== undefined) return new Uint8Array(pooled, 0, size);
    }
    return new Uint8Array(Buffer.allocUnsafeSlow(Math.max(size, this.bytes)).buffer, 0, size);
  }

  /** File bytes [offset, offset + length) as a view of the chunk. REQUIRES they lie in it. */
  view(offset: number, length: number): Uint8Array {
    const c = this.chunk;
    return new Uint8Array(c.buffer, c.byteOffset + (offset - this.start), length);
  }

  /** How many of the file bytes [offset, offset + length) of the chunk its read got. */
  bytesRead(offset: number, length: number): number {
    const got = this.filled - (offset - this.start);
    return got < 0 ? 0 : got < length ? got : length;
  }
}
