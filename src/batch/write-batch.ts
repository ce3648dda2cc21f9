/**
 * WriteBatch: an ordered list of puts and deletes applied atomically, and its encoding,
 * which is the payload of one write-ahead-log record. Format: docs/format/write-batch.md.
 *
 *   batch    := sequence:fixed64 count:fixed32 entry{count}
 *   entry    := KIND_PUT:u8 keyLen:varint key valueLen:varint value
 *             | KIND_DELETE:u8 keyLen:varint key
 *
 * The entries get consecutive sequence numbers starting at `sequence`.
 */
import { KvError } from "../errors.js";
import { KIND_DELETE, KIND_PUT, type ValueKind } from "../key/internal-key.js";
import {
  getFixed32,
  getFixed64,
  getVarint,
  putFixed32,
  putFixed64,
  putVarint,
  type VarintResult,
  varintLength,
} from "../util/coding.js";
import { type BytesLike, byteLengthOf, keyLengthOf, writeBytes } from "./bytes.js";

/** Bytes of the batch header: sequence (8) + count (4). Do not change: stored on disk. */
export const BATCH_HEADER_SIZE = 12;

export class WriteBatch {
  private buf: Buffer = Buffer.allocUnsafe(256);
  private len = BATCH_HEADER_SIZE;
  private entries = 0;
  /**
   * True while `buf` holds an encoding that `encode` handed out (a pending write may read
   * it): the next change copies the content to a buffer of its own first.
   */
  private shared = false;

  /** Number of operations in the batch. */
  get count(): number {
    return this.entries;
  }

  /** Size of the encoded batch in bytes. */
  get byteSize(): number {
    return this.len;
  }

  /** Adds a put. Throws INVALID_ARGUMENT (and leaves the batch unchanged) on bad input. */
  put(key: BytesLike, value: BytesLike): this {
    const kn = keyLengthOf(key);
    const vn = byteLengthOf(value, "value");
    this.reserve(1 + varintLength(kn) + kn + varintLength(vn) + vn);
    this.buf[this.len++] = KIND_PUT;
    this.len = putVarint(this.buf, this.len, kn);
    this.len = writeBytes(this.buf, this.len, key, kn);
    this.len = putVarint(this.buf, this.len, vn);
    this.len = writeBytes(this.buf, this.len, value, vn);
    this.entries++;
    return this;
  }

  /** Adds a delete. Throws INVALID_ARGUMENT (and leaves the batch unchanged) on bad input. */
  delete(key: BytesLike): this {
    const kn = keyLengthOf(key);
    this.reserve(1 + varintLength(kn) + kn);
    this.buf[this.len++] = KIND_DELETE;
    this.len = putVarint(this.buf, this.len, kn);
    this.len = writeBytes(this.buf, this.len, key, kn);
    this.entries++;
    return this;
  }

  /** Removes every operation. */
  clear(): this {
    if (this.shared) {
      this.buf = Buffer.allocUnsafe(256);
      this.shared = false;
    }
    this.len = BATCH_HEADER_SIZE;
    this.entries = 0;
    return this;
  }

  /**
   * The encoding, with the count filled in and sequence 0 (the commit path sets the
   * sequence), owned by the caller: later changes to this batch do not touch it. It is the
   * batch's own buffer, not a copy, until the batch changes (copy on write): a write of a
   * batch of 1,000 puts then allocates ~120 KB less, memory that otherwise waited for a
   * garbage collection of the main thread to be freed.
   */
  encode(): Buffer {
    if (this.shared) {
      // Encoded before and unchanged since: the earlier encoding may be pending still (and
      // may carry the sequence the commit path gave it).
      const out = Buffer.allocUnsafe(this.len);
      this.buf.copy(out, 0, 0, this.len);
      putFixed64(out, 0, 0);
      return out;
    }
    putFixed64(this.buf, 0, 0);
    putFixed32(this.buf, 8, this.entries);
    this.shared = true;
    return this.buf.subarray(0, this.len);
  }

  private reserve(extra: number): void {
    if (this.len + extra <= this.buf.length && !this.shared) return;
    let size = this.buf.length;
    while (size < this.len + extra) size *= 2;
    const next = takeSpare(size) ?? Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    if (!this.shared) giveSpare(this.buf);
    this.buf = next;
    this.shared = false;
  }
}

/**
 * Spare batch buffers by size class (powers of two from 4 KiB to 1 MiB, one each): a
 * batch that outgrows its buffer leaves it here for the next batch that grows to that
 * size. A batch of 1,000 puts grows through 4, 8, ... 64 KiB buffers on its way to 128
 * KiB; without reuse every batch allocated and dropped them all (~250 KB).
 */
const SPARE_MIN_SHIFT = 12;
const SPARE_MAX_SHIFT = 20;
const spares: Array<Buffer | undefined> = new Array(SPARE_MAX_SHIFT - SPARE_MIN_SHIFT + 1);

/** Size class of a power-of-two length, or -1 outside the classes kept. */
function spareClass(length: number): number {
  const shift = 31 - Math.clz32(length);
  if (length !== 1 << shift || shift < SPARE_MIN_SHIFT || shift > SPARE_MAX_SHIFT) return -1;
  return shift - SPARE_MIN_SHIFT;
}

function takeSpare(size: number): Buffer | undefined {
  const c = spareClass(size);
  if (c < 0) return undefined;
  const b = spares[c];
  spares[c] = undefined;
  return b;
}

/** Keeps a buffer nothing refers to any more (no view of it escaped) for takeSpare. */
function giveSpare(b: Buffer): void {
  const c = spareClass(b.length);
  if (c >= 0) spares[c] = b;
}

/**
 * Single writes are encoded into slabs of this size: the result is one plain view per
 * write, where Buffer.allocUnsafe made a Buffer over its pool (~60 bytes more garbage
 * per put, by heap sampling). A slab stays allocated while any write encoded in
 * it is (the commit path holds one until it is applied). Writes over SLAB_BYTES / 8 get
 * memory of their own.
 */
const SLAB_BYTES = 64 << 10;
let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let slabUsed = 0;

/** Offset, in the buffer the last beginSingleWrite returned, of the write it began. */
let singleAt = 0;

/**
 * Reserves `size` bytes for a single write's encoding (in the slab, or memory of their own
 * when big), writes its header (sequence 0, count 1) and `kind`, and returns the buffer
 * they are in: they start at `singleAt`.
 */
function beginSingleWrite(size: number, kind: ValueKind): Buffer {
  let buf: Buffer;
  if (size > SLAB_BYTES >>> 3) {
    buf = Buffer.allocUnsafeSlow(size);
    singleAt = 0;
  } else {
    if (slabUsed + size > SLAB_BYTES) {
      slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      slabUsed = 0;
    }
    buf = slab;
    singleAt = slabUsed;
    slabUsed += size;
  }
  putFixed64(buf, singleAt, 0);
  putFixed32(buf, singleAt + 8, 1);
  buf[singleAt + BATCH_HEADER_SIZE] = kind;
  return buf;
}

/** Encodes a batch of one put without building a WriteBatch (the put() fast path). */
export function encodeSinglePut(key: BytesLike, value: BytesLike): Uint8Array {
  const kn = keyLengthOf(key);
  const vn = byteLengthOf(value, "value");
  const size = BATCH_HEADER_SIZE + 1 + varintLength(kn) + kn + varintLength(vn) + vn;
  const buf = beginSingleWrite(size, KIND_PUT);
  const at = singleAt;
  let off = putVarint(buf, at + BATCH_HEADER_SIZE + 1, kn);
  off = writeBytes(buf, off, key, kn);
  off = putVarint(buf, off, vn);
  writeBytes(buf, off, value, vn);
  return new Uint8Array(buf.buffer, buf.byteOffset + at, size);
}

/** Encodes a batch of one delete (the delete() fast path). */
export function encodeSingleDelete(key: BytesLike): Uint8Array {
  const kn = keyLengthOf(key);
  const size = BATCH_HEADER_SIZE + 1 + varintLength(kn) + kn;
  const buf = beginSingleWrite(size, KIND_DELETE);
  const at = singleAt;
  writeBytes(buf, putVarint(buf, at + BATCH_HEADER_SIZE + 1, kn), key, kn);
  return new Uint8Array(buf.buffer, buf.byteOffset + at, size);
}

/** Sets the first sequence number of an encoded batch. */
export function setBatchSequence(rep: Uint8Array, sequence: number): void {
  putFixed64(rep, 0, sequence);
}

export function batchSequence(rep: Uint8Array): number {
  return getFixed64(rep, 0);
}

export function batchCount(rep: Uint8Array): number {
  return getFixed32(rep, 8);
}

/** Receives each entry of a decoded batch; key and value are views into the batch. */
export type BatchVisitor = (
  seq: number,
  kind: ValueKind,
  key: Uint8Array,
  value: Uint8Array,
) => void;

/**
 * Receives each entry of a batch as places in the batch's bytes, without views: the key is
 * rep[keyStart, keyStart + keyLength), the value rep[valueStart, valueStart + valueLength)
 * (for a delete, valueLength is 0). The commit path uses it, so that applying a put to the
 * memtable makes no objects (two views were ~190 bytes of garbage per put).
 */
export type BatchRangeVisitor = (
  seq: number,
  kind: ValueKind,
  rep: Uint8Array,
  keyStart: number,
  keyLength: number,
  valueStart: number,
  valueLength: number,
) => void;

const EMPTY: Uint8Array = new Uint8Array(0);
const vr: VarintResult = { value: 0, offset: 0 };

/**
 * Decodes an encoded batch, calling `visit` for each entry in order with the places of its
 * key and value. Throws KvError CORRUPTION when the encoding is malformed (bad kind, length
 * past the end, count mismatch); in that case `visit` may already have seen some entries,
 * so callers that need all-or-nothing call `validateBatch` first.
 */
export function visitBatch(rep: Uint8Array, visit: BatchRangeVisitor): void {
  if (rep.length < BATCH_HEADER_SIZE) throw corrupt("batch shorter than its header");
  let seq: number;
  try {
    seq = getFixed64(rep, 0);
  } catch {
    throw corrupt("batch sequence number out of range");
  }
  const count = getFixed32(rep, 8);
  let off = BATCH_HEADER_SIZE;
  let n = 0;
  try {
    while (off < rep.length) {
      const kind = rep[off++];
      if (kind !== KIND_PUT && kind !== KIND_DELETE) throw corrupt(`unknown entry kind ${kind}`);
      getVarint(rep, off, vr);
      const keyStart = vr.offset;
      const keyLength = vr.value;
      const kEnd = keyStart + keyLength;
      if (kEnd > rep.length) throw corrupt("key length past the end of the batch");
      let valueStart = kEnd;
      let valueLength = 0;
      off = kEnd;
      if (kind === KIND_PUT) {
        getVarint(rep, off, vr);
        valueStart = vr.offset;
        valueLength = vr.value;
        off = valueStart + valueLength;
        if (off > rep.length) throw corrupt("value length past the end of the batch");
      }
      visit(seq + n, kind, rep, keyStart, keyLength, valueStart, valueLength);
      n++;
    }
  } catch (err) {
    if (err instanceof RangeError) throw corrupt(err.message);
    throw err;
  }
  if (n !== count) throw corrupt(`batch header says ${count} entries, found ${n}`);
}

/**
 * `visitBatch` with views: calls `visit` with each entry's key and value as views of
 * `rep` (EMPTY for a delete's value). Throws as visitBatch does.
 */
export function decodeBatch(rep: Uint8Array, visit: BatchVisitor): void {
  // Views are made with the Uint8Array constructor on rep's buffer: for a Buffer `rep`,
  // Buffer#subarray costs about twice as much (its own checks, then a FastBuffer).
  const buffer = rep.buffer;
  const base = rep.byteOffset;
  visitBatch(rep, (seq, kind, _rep, keyStart, keyLength, valueStart, valueLength) => {
    const key = new Uint8Array(buffer, base + keyStart, keyLength);
    const value =
      kind === KIND_PUT ? new Uint8Array(buffer, base + valueStart, valueLength) : EMPTY;
    visit(seq, kind, key, value);
  });
}

/** Checks that an encoded batch decodes cleanly; throws CORRUPTION if not. */
export function validateBatch(rep: Uint8Array): void {
  visitBatch(rep, () => {});
}

function corrupt(message: string): KvError {
  return new KvError("CORRUPTION", `malformed write batch: ${message}`);
}
