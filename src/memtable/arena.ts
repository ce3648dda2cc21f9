/**
 * The memtable's arena: append-only storage of entry bytes, and the layout of an entry in
 * it, shared by the tree (btree.ts), its iterators and the image reader on the worker
 * thread (memtable-image.ts).
 *
 * Layout of an entry: [kind, 1 byte][value length, uint32 little-endian][key][value],
 * starting at a multiple of 4 bytes of a chunk. An entry is named by a 32-bit position:
 * chunk index << 16 | offset / 4 (kept in an int32 slot: read it back with `>>>` and `&`,
 * or with chunkIndexOf and keyStartOf).
 *
 * Chunks are SharedArrayBuffers, so a flush on the compaction worker thread reads them in
 * place (Memtable.image), of FIRST_CHUNK_BYTES doubling to MAX_CHUNK_BYTES; an entry over
 * BIG_ENTRY_BYTES gets an exact-size chunk of its own, which takes as many indexes as it
 * spans 256 KiB (their `chunks` elements are NO_BYTES), so the 2^16 indexes address 16 GiB.
 *
 * Contract: bytes once written are never moved or overwritten until `release`, which gives
 * the chunks to the pool (when there is one) for later arenas; after it nothing may read
 * them through an old view.
 */

import type { ValueKind } from "../key/internal-key.js";
import { RangeCopier } from "../util/range-copier.js";
import type { ArenaPool } from "./arena-pool.js";

/** Bytes before an entry's key: its kind (1 byte) and its value length (uint32 LE). */
export const ENTRY_HEADER_BYTES = 5;
/** Low bits of a position: the entry's offset in its chunk, in 4-byte units. */
const POS_OFFSET_BITS = 16;
const POS_OFFSET_MASK = (1 << POS_OFFSET_BITS) - 1;
/** Entries start at multiples of 4 bytes, so that a 16-bit offset spans a 256 KiB chunk. */
const ALIGN_SHIFT = 2;
/** Size of a full chunk, and the address space each chunk index stands for. */
const MAX_CHUNK_BYTES = 1 << (POS_OFFSET_BITS + ALIGN_SHIFT);
/** Size of an arena's first chunk; each new chunk doubles it up to MAX_CHUNK_BYTES. */
const FIRST_CHUNK_BYTES = 16 << 10;
/** Entries larger than this get a chunk of their own (it bounds the space a chunk wastes). */
const BIG_ENTRY_BYTES = MAX_CHUNK_BYTES >>> 3;
/** Chunk indexes are the high 16 bits of a position. */
const MAX_CHUNK_INDEXES = 1 << (32 - POS_OFFSET_BITS);
/** Largest stored entry (header, key, value), so that lengths and offsets fit an int32. */
const MAX_ENTRY_BYTES = 0x7ffffff0;
/** Longest part of an array that copyBytes copies with a loop rather than a view and `set`. */
const COPY_LOOP_MAX_BYTES = 256;

/** An empty chunk: stands at the extra indexes of a big entry's chunk, and for "none". */
export const NO_BYTES = new Uint8Array(new ArrayBuffer(0));

/** Chunk index of the entry at position `pos`. */
export function chunkIndexOf(pos: number): number {
  return pos >>> POS_OFFSET_BITS;
}

/** Offset in its chunk of the key of the entry at position `pos`. */
export function keyStartOf(pos: number): number {
  return ((pos & POS_OFFSET_MASK) << ALIGN_SHIFT) + ENTRY_HEADER_BYTES;
}

/** Kind of the entry whose key starts at `keyStart` of `chunk`. */
export function kindAt(chunk: Uint8Array, keyStart: number): ValueKind {
  return chunk[keyStart - ENTRY_HEADER_BYTES] as ValueKind;
}

/** Value length of the entry whose key starts at `keyStart` of `chunk`. */
export function valueLengthAt(chunk: Uint8Array, keyStart: number): number {
  return (
    (chunk[keyStart - 4]! |
      (chunk[keyStart - 3]! << 8) |
      (chunk[keyStart - 2]! << 16) |
      (chunk[keyStart - 1]! << 24)) >>>
    0
  );
}

export class Arena {
  /** Chunk by index (NO_BYTES at the extra indexes a big entry's chunk takes). */
  readonly chunks: Uint8Array<ArrayBufferLike>[] = [];
  /**
   * chunks[i].buffer, kept apart because making a view from an ArrayBuffer at hand is
   * cheaper than reading a typed array's `buffer` first.
   */
  readonly buffers: ArrayBufferLike[] = [];
  /** The chunk receiving small entries, its index, and its bytes in use. */
  private current: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  /**
   * Copies into `current` 4 bytes at a time (about twice as fast as a byte loop for a
   * 100-byte value, and unlike `set` it makes no view per copy): a batch's entries all come
   * from one encoded batch, so its views are made once per batch and chunk, not per entry.
   */
  private readonly copier = new RangeCopier();
  private currentIndex = 0;
  private used = 0;
  private nextChunkBytes = FIRST_CHUNK_BYTES;
  /** The index buffers of the images made of this arena (see imageBuffer). */
  private readonly imageBuffers: SharedArrayBuffer[] = [];

  constructor(private readonly pool: ArenaPool | undefined) {}

  /**
   * Copies an entry in, its key from keySrc[keyStart, keyStart + keyLen) and its value from
   * valueSrc[valueStart, valueStart + valueLen); returns its position. Throws RangeError if
   * the arena is full.
   */
  append(
    kind: ValueKind,
    keySrc: Uint8Array,
    keyStart: number,
    keyLen: number,
    valueSrc: Uint8Array,
    valueStart: number,
    valueLen: number,
  ): number {
    const size = ENTRY_HEADER_BYTES + keyLen + valueLen;
    if (size > MAX_ENTRY_BYTES) throw new RangeError(`memtable entry of ${size} bytes`);
    const need = (size + 3) & ~3;
    let chunk: Uint8Array;
    let index: number;
    let off: number;
    if (need > BIG_ENTRY_BYTES) {
      const indexes = Math.ceil(need / MAX_CHUNK_BYTES);
      chunk = this.addChunk(need, indexes);
      index = this.chunks.length - indexes;
      off = 0;
      writeEntryHeader(chunk, off, kind, valueLen);
      copyBytes(keySrc, keyStart, keyLen, chunk, off + ENTRY_HEADER_BYTES);
      copyBytes(valueSrc, valueStart, valueLen, chunk, off + ENTRY_HEADER_BYTES + keyLen);
    } else {
      if (this.used + need > this.current.length) {
        let bytes = this.nextChunkBytes;
        while (bytes < need) bytes *= 2;
        this.nextChunkBytes = Math.min(bytes * 2, MAX_CHUNK_BYTES);
        this.current = this.addChunk(bytes, 1);
        this.currentIndex = this.chunks.length - 1;
        this.used = 0;
      }
      chunk = this.current;
      index = this.currentIndex;
      off = this.used;
      this.used += need;
      writeEntryHeader(chunk, off, kind, valueLen);
      this.copier.copy(keySrc, keyStart, keyLen, chunk, off + ENTRY_HEADER_BYTES);
      this.copier.copy(valueSrc, valueStart, valueLen, chunk, off + ENTRY_HEADER_BYTES + keyLen);
    }
    return (index << POS_OFFSET_BITS) | (off >>> ALIGN_SHIFT);
  }

  /**
   * Shared memory of `bytes` bytes for a memtable image's index (Memtable.image), from the
   * pool when it has a buffer of that size; given back with the chunks at `release`.
   */
  imageBuffer(bytes: number): SharedArrayBuffer {
    const buffer = this.pool?.take(bytes) ?? new SharedArrayBuffer(bytes);
    this.imageBuffers.push(buffer);
    return buffer;
  }

  /** Appends a chunk of `bytes` bytes that takes `indexes` chunk indexes. */
  private addChunk(bytes: number, indexes: number): Uint8Array<ArrayBufferLike> {
    if (this.chunks.length + indexes > MAX_CHUNK_INDEXES) {
      throw new RangeError("memtable arena full: a memtable holds at most 16 GiB");
    }
    // Shared memory: a flush on the worker thread reads the chunks in place (no copy).
    const buffer =
      (indexes === 1 ? this.pool?.take(bytes) : undefined) ?? new SharedArrayBuffer(bytes);
    const chunk = new Uint8Array(buffer);
    this.chunks.push(chunk);
    this.buffers.push(buffer);
    for (let i = 1; i < indexes; i++) {
      this.chunks.push(NO_BYTES);
      this.buffers.push(NO_BYTES.buffer);
    }
    return chunk;
  }

  /**
   * Gives the chunks (those of small entries: a big entry's exact-size chunk would rarely
   * fit another) and the image index buffers to the pool, and forgets them. REQUIRES
   * nothing reads them again.
   */
  release(): void {
    const pool = this.pool;
    if (pool !== undefined) {
      for (const buffer of this.buffers) {
        if (buffer.byteLength <= MAX_CHUNK_BYTES && buffer instanceof SharedArrayBuffer) {
          pool.give(buffer);
        }
      }
      for (const buffer of this.imageBuffers) pool.give(buffer);
    }
    this.chunks.length = 0;
    this.buffers.length = 0;
    this.imageBuffers.length = 0;
    this.current = new Uint8Array(0);
    this.copier.forget();
    this.used = 0;
  }
}

/** Writes an entry's header (kind, value length) at `off` of `chunk`. */
function writeEntryHeader(chunk: Uint8Array, off: number, kind: ValueKind, valueLen: number): void {
  chunk[off] = kind;
  chunk[off + 1] = valueLen;
  chunk[off + 2] = valueLen >>> 8;
  chunk[off + 3] = valueLen >>> 16;
  chunk[off + 4] = valueLen >>> 24;
}

/**
 * Copies src[from, from + n) to `dst` at `at`. A byte loop for short ranges, where it beats
 * `set`'s call; `set` for longer ones, through a view only when the range is part of `src`
 * (a view is garbage, worth it only where the copy itself costs more).
 */
function copyBytes(src: Uint8Array, from: number, n: number, dst: Uint8Array, at: number): void {
  if (n > 32 && (n === src.length || n > COPY_LOOP_MAX_BYTES)) {
    dst.set(n === src.length ? src : src.subarray(from, from + n), at);
    return;
  }
  const d = at - from;
  for (let i = from; i < from + n; i++) dst[i + d] = src[i]!;
}
