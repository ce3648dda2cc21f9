/**
 * BlockBuilder: lays out one block (data or index) in the format of
 * docs/format/sstable.md, "Blocks":
 *
 *   entry*        shared:varint unshared:varint valueLen:varint keyDelta value
 *   restart*      u32 LE offset of each restart entry
 *   numRestarts   u32 LE
 *
 * Each key is stored as the number of bytes it shares with the previous key, then the rest
 * (prefix compression). Every `restartInterval` entries the sharing resets: a restart entry
 * stores its whole key (shared = 0) and its offset goes into the restart array, so a reader
 * can binary-search the restarts and decode from any of them.
 *
 * Call order: `add*` then `finish`, then `reset` before reusing the builder. Keys must be
 * added in strictly increasing order; the caller (TableBuilder) checks it.
 */
import { putFixed32, putVarint } from "../util/coding.js";
import { RangeCopier } from "../util/range-copier.js";

/** After a huge entry, `reset` drops a buffer larger than this instead of keeping it. */
const SHRINK_ABOVE = 1 << 20;
/**
 * Longest value `addShared` copies with its copier (4 bytes at a time, no view); longer
 * ones take a view and `set` (a memcpy, worth the view's allocation).
 */
const COPY_LOOP_MAX_BYTES = 256;

export class BlockBuilder {
  private buf = new Uint8Array(4096);
  private used = 0;
  /** Copies values into `buf` (see addShared). */
  private readonly copier = new RangeCopier();
  private restarts: number[] = [0];
  /** Entries since the last restart. */
  private counter = 0;
  private last = new Uint8Array(64);
  private lastLength = 0;
  private entryCount = 0;
  private finished = false;

  constructor(readonly restartInterval: number) {
    if (!Number.isSafeInteger(restartInterval) || restartInterval < 1) {
      throw new RangeError(`restartInterval must be an integer >= 1, got ${restartInterval}`);
    }
  }

  /** Number of entries added since the last reset. */
  get entries(): number {
    return this.entryCount;
  }

  get empty(): boolean {
    return this.entryCount === 0;
  }

  /** The size the block would have if finished now (without the trailer). */
  get estimatedSize(): number {
    return this.used + 4 * this.restarts.length + 4;
  }

  /**
   * Appends an entry. REQUIRES: not finished; key greater than the previous key.
   * Copies key and value.
   */
  add(key: Uint8Array, value: Uint8Array): void {
    if (this.finished) throw new Error("BlockBuilder.add after finish (call reset first)");
    let shared = 0;
    if (this.counter < this.restartInterval) {
      const n = this.lastLength < key.length ? this.lastLength : key.length;
      const last = this.last;
      while (shared < n && last[shared] === key[shared]) shared++;
    } else {
      this.restarts.push(this.used);
      this.counter = 0;
    }
    const unshared = key.length - shared;
    this.reserve(this.used + 3 * 10 + unshared + value.length);
    const buf = this.buf;
    let o = this.used;
    o = putVarint(buf, o, shared);
    o = putVarint(buf, o, unshared);
    o = putVarint(buf, o, value.length);
    if (unshared <= 32) {
      for (let i = shared; i < key.length; i++) buf[o++] = key[i]!;
    } else {
      buf.set(key.subarray(shared), o);
      o += unshared;
    }
    if (value.length <= 32) {
      for (let i = 0; i < value.length; i++) buf[o++] = value[i]!;
    } else {
      buf.set(value, o);
      o += value.length;
    }
    this.used = o;

    if (key.length > this.last.length) {
      const grown = new Uint8Array(Math.max(key.length, this.last.length * 2));
      grown.set(this.last.subarray(0, shared));
      this.last = grown;
    }
    const last = this.last;
    for (let i = shared; i < key.length; i++) last[i] = key[i]!;
    this.lastLength = key.length;
    this.counter++;
    this.entryCount++;
  }

  /**
   * Appends an entry whose key the caller keeps: `key[0, keyLength)`, of which the first
   * `shared` bytes equal the previous entry's key (the caller computed it, as TableBuilder
   * does for data blocks, so that the key is scanned once per entry, not once per layer),
   * and whose value is `valueSrc[valueStart, valueStart + valueLength)` (a range, so that
   * a caller holding the value inside a larger array, as a memtable image does, makes no
   * view of it). `shared` is ignored (0 is stored) at a restart. Same bytes as `add` with
   * the same keys when `shared` is their whole common prefix. REQUIRES: not finished; key
   * greater than the previous key; one block is built with `add` or with `addShared`, not
   * both (this method does not keep the previous key that `add` compares with).
   */
  addShared(
    key: Uint8Array,
    keyLength: number,
    shared: number,
    valueSrc: Uint8Array,
    valueStart: number,
    valueLength: number,
  ): void {
    if (this.finished) throw new Error("BlockBuilder.addShared after finish (call reset first)");
    if (this.entryCount === 0) {
      shared = 0;
    } else if (this.counter >= this.restartInterval) {
      this.restarts.push(this.used);
      this.counter = 0;
      shared = 0;
    }
    const unshared = keyLength - shared;
    const vn = valueLength;
    this.reserve(this.used + 3 * 10 + unshared + vn);
    const buf = this.buf;
    let o = this.used;
    if (shared < 0x80 && unshared < 0x80 && vn < 0x80) {
      buf[o] = shared;
      buf[o + 1] = unshared;
      buf[o + 2] = vn;
      o += 3;
    } else {
      o = putVarint(buf, o, shared);
      o = putVarint(buf, o, unshared);
      o = putVarint(buf, o, vn);
    }
    if (unshared <= 32) {
      for (let i = shared; i < keyLength; i++) buf[o++] = key[i]!;
    } else {
      buf.set(key.subarray(shared, keyLength), o);
      o += unshared;
    }
    if (vn > 32 && valueStart === 0 && vn === valueSrc.length) {
      // A whole array (a compaction's values are views, one per entry): a memcpy, where
      // the copier would make a DataView of each.
      buf.set(valueSrc, o);
    } else if (vn <= COPY_LOOP_MAX_BYTES) {
      this.copier.copy(valueSrc, valueStart, vn, buf, o);
    } else {
      buf.set(valueSrc.subarray(valueStart, valueStart + vn), o);
    }
    this.used = o + vn;
    this.counter++;
    this.entryCount++;
  }

  /**
   * Appends the restart array and its count and returns the block's bytes: a view valid
   * until the next `reset`. An empty block is 8 bytes (one restart at 0, count 1).
   */
  finish(): Uint8Array {
    if (!this.finished) {
      this.reserve(this.estimatedSize);
      for (const r of this.restarts) {
        putFixed32(this.buf, this.used, r);
        this.used += 4;
      }
      putFixed32(this.buf, this.used, this.restarts.length);
      this.used += 4;
      this.finished = true;
    }
    return this.buf.subarray(0, this.used);
  }

  /** Empties the builder for the next block (keeps its buffers unless one grew huge). */
  reset(): void {
    if (this.buf.length > SHRINK_ABOVE) this.buf = new Uint8Array(4096);
    this.used = 0;
    this.restarts.length = 1;
    this.counter = 0;
    this.lastLength = 0;
    this.entryCount = 0;
    this.finished = false;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(n, this.buf.length * 2));
    grown.set(this.buf.subarray(0, this.used));
    this.buf = grown;
  }
}
