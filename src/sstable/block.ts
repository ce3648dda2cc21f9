/**
 * Block: a parsed block (data or index) in the format written by BlockBuilder (see
 * docs/format/sstable.md, "Blocks"), and BlockIterator, a cursor over its entries.
 *
 * A Block's bytes are immutable once built: they may be shared by the block cache,
 * iterators and values handed to callers (only its cache bookkeeping fields change). Its
 * restart array is checked when it is built; every entry is checked when it is decoded
 * (lengths against the block bounds, key at least 8 bytes, kind PUT or DELETE); anything
 * wrong throws KvError CORRUPTION naming the file and the block offset.
 *
 * `seek` (used by lookups) decodes in a specialised loop, `scanFrom`, that compares each
 * key only from where it can differ from the target and skips keys it does not need.
 *
 * BlockIterator follows LevelDB's Block::Iter: `seek` binary-searches the restart points
 * (whose keys are stored whole) and then scans forward; `prev` goes back to the restart
 * point before the current entry and scans forward to the entry before it. Keys are decoded
 * into one reused, growable buffer; `key` and `internalKey` are views of it (valid until the
 * iterator moves). `value` is a view of the block, valid as long as the caller keeps it:
 * blocks are never modified.
 */
import type { KvError } from "../errors.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import {
  INTERNAL_KEY_TRAILER,
  KIND_DELETE,
  KIND_PUT,
  type ValueKind,
} from "../key/internal-key.js";
import type { BlockCache } from "./block-cache.js";
import { corruption } from "./format.js";
import { compareInternalRange, KeyBuffer } from "./key-bytes.js";

function readU32(d: Uint8Array, o: number): number {
  return (d[o]! | (d[o + 1]! << 8) | (d[o + 2]! << 16) | (d[o + 3]! << 24)) >>> 0;
}

/** The bytes of an empty block (one restart at 0, count 1). */
const EMPTY_DATA = Uint8Array.of(0, 0, 0, 0, 1, 0, 0, 0);

export class Block {
  /**
   * The block's bytes (entries, restart array, restart count), without the trailer. Never
   * modified while the block is in use; `release` (by the block cache only) empties it.
   */
  data: Uint8Array;
  /** Where the restart array starts: the entries lie in data[0, restartsOffset). */
  restartsOffset: number;
  numRestarts: number;

  /** data.buffer and data.byteOffset, kept to build value views without `subarray`. */
  buffer: ArrayBufferLike;
  byteOffset: number;

  // Block cache bookkeeping (BlockCache):
  /** The cache holding the block, or undefined. */
  cache: BlockCache | undefined = undefined;
  /** CLOCK bit: hit since the hand last passed. */
  referenced = false;
  /** Position in the cache's ring. */
  ringIndex = 0;
  /** Bytes charged to the cache. */
  charge = 0;
  /** `data` is the start of a frame from BlockCache.allocFrame that the block owns. */
  pooled = false;
  /**
   * Set (for good) once the block was handed to an iterator or a value view of it was
   * returned: its memory must then never be reused, so the cache does not recycle it.
   */
  exposed = false;
  /**
   * Block cache bookkeeping (TableReader): the reader's array of cached blocks that holds
   * this block at slotIndex, cleared by the cache when it drops the block.
   */
  slots: Array<Block | undefined> | undefined = undefined;
  slotIndex = 0;

  /**
   * Parses the block's restart array; throws CORRUPTION naming `file` and `offset` (the
   * block's offset in the file) when it is inconsistent. `fileNumber` identifies the block
   * in the block cache.
   */
  constructor(
    data: Uint8Array,
    readonly file: string = "<block>",
    readonly offset: number = 0,
    readonly fileNumber: number = 0,
  ) {
    this.data = data;
    this.buffer = data.buffer;
    this.byteOffset = data.byteOffset;
    if (data.length < 4) throw this.corruption(`block of ${data.length} bytes is too short`);
    const n = readU32(data, data.length - 4);
    const max = Math.floor((data.length - 4) / 4);
    if (n < 1 || n > max) {
      throw this.corruption(`restart count ${n} impossible in a block of ${data.length} bytes`);
    }
    this.numRestarts = n;
    this.restartsOffset = data.length - 4 - 4 * n;
    // Restart offsets are strictly increasing and point at entries; an empty block has
    // the single restart 0 with no entries.
    let prev = -1;
    for (let i = 0; i < n; i++) {
      const r = readU32(data, this.restartsOffset + 4 * i);
      const ok = r > prev && (r < this.restartsOffset || (r === 0 && this.restartsOffset === 0));
      if (!ok) throw this.corruption(`restart point ${i} at offset ${r} is out of order or bounds`);
      prev = r;
    }
  }

  /**
   * Empties the block (no entries) so that its memory can be reused: for the block cache
   * only, when it recycles a block nothing can reference any more (see BlockCache).
   */
  release(): void {
    this.data = EMPTY_DATA;
    this.buffer = EMPTY_DATA.buffer;
    this.byteOffset = 0;
    this.restartsOffset = 0;
    this.numRestarts = 1;
    this.pooled = false;
  }

  /** Bytes held (for cache accounting). */
  get byteLength(): number {
    return this.data.byteLength;
  }

  restartPoint(i: number): number {
    return readU32(this.data, this.restartsOffset + 4 * i);
  }

  iterator(): BlockIterator {
    return new BlockIterator(this);
  }

  /** A CORRUPTION error naming the file and this block. */
  corruption(message: string): KvError {
    return corruption(this.file, `block at offset ${this.offset}: ${message}`);
  }
}

/** An empty block (no entries) for iterators that are not on a block. */
const EMPTY_BLOCK = new Block(EMPTY_DATA);

// Results of decodeEntryHeader (module state: the read path is single-threaded and these
// are consumed right after the call, so no allocation is needed).
let hShared = 0;
let hUnshared = 0;
let hValueLen = 0;
/** Offset just after the entry header. */
let hEnd = 0;

/** Offset just after the last varint decodeVarint32 read. */
let vEnd = 0;
/** Decodes a varint of at most 5 bytes that ends before limit (sets vEnd); -1 if bad. */
function decodeVarint32(d: Uint8Array, p: number, limit: number): number {
  let result = 0;
  let mul = 1;
  for (let i = 0; i < 5 && p < limit; i++) {
    const b = d[p++]!;
    result += (b & 0x7f) * mul;
    if (b < 0x80) {
      vEnd = p;
      return result;
    }
    mul *= 128;
  }
  return -1;
}

/** Decodes the three varints of the entry header at d[p] (before limit); false if bad. */
function decodeEntryHeader(d: Uint8Array, p: number, limit: number): boolean {
  if (limit - p >= 3) {
    const a = d[p]!;
    const b = d[p + 1]!;
    const c = d[p + 2]!;
    if ((a | b | c) < 128) {
      hShared = a;
      hUnshared = b;
      hValueLen = c;
      hEnd = p + 3;
      return true;
    }
  }
  const s = decodeVarint32(d, p, limit);
  if (s < 0) return false;
  const u = decodeVarint32(d, vEnd, limit);
  if (u < 0) return false;
  const v = decodeVarint32(d, vEnd, limit);
  if (v < 0) return false;
  hShared = s;
  hUnshared = u;
  hValueLen = v;
  hEnd = vEnd;
  return true;
}

// Side results of compareInternalFrom.
/** User-key bytes [0, cmpAt) of both keys are equal. */
let cmpAt = 0;
/** True iff the result was decided by differing user-key bytes at cmpAt. */
let cmpByte = false;

/**
 * compareInternalRange(a, 0, aLen, b, 0, bLen) for keys known to agree on user-key bytes
 * [0, from): compares from there. Sets cmpAt and cmpByte. REQUIRES aLen, bLen >= 8 and
 * from <= both user-key lengths.
 */
function compareInternalFrom(
  a: Uint8Array,
  aLen: number,
  b: Uint8Array,
  bLen: number,
  from: number,
): number {
  const aUser = aLen - INTERNAL_KEY_TRAILER;
  const bUser = bLen - INTERNAL_KEY_TRAILER;
  const n = aUser < bUser ? aUser : bUser;
  for (let i = from; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) {
      cmpAt = i;
      cmpByte = true;
      return d;
    }
  }
  cmpAt = n;
  cmpByte = false;
  if (aUser !== bUser) return aUser - bUser;
  for (let i = INTERNAL_KEY_TRAILER - 1; i >= 0; i--) {
    const d = b[bUser + i]! - a[aUser + i]!;
    if (d !== 0) return d;
  }
  return 0;
}

export class BlockIterator implements InternalIterator {
  private block: Block = EMPTY_BLOCK;
  private data: Uint8Array = EMPTY_BLOCK.data;
  private restartsOffset = 0;
  private numRestarts = 1;
  /** Offset of the current entry; >= restartsOffset when invalid. */
  private current = 0;
  /** Index of the restart point at or before `current`. */
  private restartIndex = 0;
  /** Offset of restart point restartIndex + 1 (Infinity past the last one). */
  private nextRestart = Number.POSITIVE_INFINITY;
  /** Offset just after the current entry. */
  private nextOffset = 0;
  private keyBuf = new Uint8Array(64);
  private keyLen = 0;
  /** The last view `key` made, and the keyBuf it views (reused while both still fit). */
  private keyView = new Uint8Array(0);
  private keyViewOf: Uint8Array | undefined;
  private valueOffset = 0;
  private valueLen = 0;
  private readonly target = new KeyBuffer();

  constructor(block?: Block) {
    if (block !== undefined) this.reset(block);
  }

  /** Points the iterator at another block (or the empty one); it becomes invalid. */
  reset(block: Block = EMPTY_BLOCK): void {
    this.block = block;
    this.data = block.data;
    this.restartsOffset = block.restartsOffset;
    this.numRestarts = block.numRestarts;
    this.markInvalid();
  }

  /** The block the iterator is on. */
  get currentBlock(): Block {
    return this.block;
  }

  valid(): boolean {
    return this.current < this.restartsOffset;
  }

  seekToFirst(): void {
    this.seekToRestartPoint(0);
    this.parseNextKey();
  }

  seekToLast(): void {
    this.seekToRestartPoint(this.numRestarts - 1);
    while (this.parseNextKey() && this.nextOffset < this.restartsOffset) {
      // scan to the last entry
    }
  }

  seek(key: Uint8Array, seq: number): void {
    const t = this.target;
    t.setInternal(key, seq, KIND_PUT);
    this.seekEncoded(t.bytes, t.length);
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    const t = this.target;
    t.setInternal(key, seq, KIND_DELETE);
    this.seekForPrevEncoded(t.bytes, t.length);
  }

  /** Positions on the first entry >= the encoded internal key target[0, tlen). */
  seekEncoded(target: Uint8Array, tlen: number): void {
    const d = this.data;
    const limit = this.restartsOffset;
    let left = 0;
    let right = this.numRestarts - 1;
    while (left < right) {
      const mid = (left + right + 1) >>> 1;
      const off = this.block.restartPoint(mid);
      if (
        !decodeEntryHeader(d, off, limit) ||
        hShared !== 0 ||
        hUnshared < INTERNAL_KEY_TRAILER ||
        hUnshared > limit - hEnd
      ) {
        this.markInvalid();
        throw this.block.corruption(`bad restart entry at offset ${off}`);
      }
      if (compareInternalRange(d, hEnd, hUnshared, target, 0, tlen) < 0) left = mid;
      else right = mid - 1;
    }
    this.scanFrom(left, target, tlen);
  }

  /**
   * The linear part of seekEncoded: decodes entries from restart point `r` (whose key is
   * < target, or r = 0) until one is >= target, with the iterator's state kept in locals
   * and stored once at the end.
   *
   * Each key agrees with the target on the bytes it shares with the previous key, up to
   * where the previous key and the target first differed (cmpAt), so the comparison starts
   * there; when that first difference was a user-key byte the new key shares too, the key
   * sorts before the target like the previous one and needs no comparison at all.
   */
  private scanFrom(r: number, target: Uint8Array, tlen: number): void {
    const d = this.data;
    const limit = this.restartsOffset;
    let kb = this.keyBuf;
    let p = this.block.restartPoint(r);
    let keyLen = 0;
    let agreed = 0;
    let byteDecided = false;
    while (p < limit) {
      if (
        !decodeEntryHeader(d, p, limit) ||
        hShared > keyLen ||
        hUnshared + hValueLen > limit - hEnd
      ) {
        this.markInvalid();
        throw this.block.corruption(`bad entry at offset ${p}`);
      }
      const shared = hShared;
      const unshared = hUnshared;
      const start = hEnd;
      keyLen = shared + unshared;
      const valueEnd = start + unshared + hValueLen;
      // A skipped key is not even copied: it differs from the previous key only past
      // `agreed`, so kb[0, agreed] stays right, and the next key that is compared shares at
      // most `agreed` bytes and rewrites everything after them.
      if (!(byteDecided && shared > agreed)) {
        if (keyLen > kb.length) {
          const grown = new Uint8Array(Math.max(keyLen, kb.length * 2));
          grown.set(kb.subarray(0, shared));
          kb = grown;
          this.keyBuf = grown;
        }
        if (unshared <= 32) {
          for (let i = 0; i < unshared; i++) kb[shared + i] = d[start + i]!;
        } else {
          kb.set(d.subarray(start, start + unshared), shared);
        }
        if (keyLen < INTERNAL_KEY_TRAILER) {
          this.markInvalid();
          throw this.block.corruption(`entry at offset ${p} has a key of ${keyLen} bytes (< 8)`);
        }
        const c = compareInternalFrom(kb, keyLen, target, tlen, shared < agreed ? shared : agreed);
        if (c >= 0) {
          if (kb[keyLen - INTERNAL_KEY_TRAILER]! > KIND_PUT) {
            this.markInvalid();
            throw this.block.corruption(`entry at offset ${p} has an unknown kind`);
          }
          this.current = p;
          this.keyLen = keyLen;
          this.valueOffset = start + unshared;
          this.valueLen = hValueLen;
          this.nextOffset = valueEnd;
          // Entries from restart r on are < target up to restart r + 1's (>= target).
          const n = this.numRestarts;
          const next = r + 1 < n ? this.block.restartPoint(r + 1) : Number.POSITIVE_INFINITY;
          if (p >= next) {
            this.restartIndex = r + 1;
            this.nextRestart =
              r + 2 < n ? this.block.restartPoint(r + 2) : Number.POSITIVE_INFINITY;
          } else {
            this.restartIndex = r;
            this.nextRestart = next;
          }
          return;
        }
        agreed = cmpAt;
        byteDecided = cmpByte;
      }
      p = valueEnd;
    }
    this.markInvalid();
  }

  /** Positions on the last entry <= the encoded internal key target[0, tlen). */
  seekForPrevEncoded(target: Uint8Array, tlen: number): void {
    this.seekEncoded(target, tlen);
    if (!this.valid()) this.seekToLast();
    else if (compareInternalRange(this.keyBuf, 0, this.keyLen, target, 0, tlen) > 0) this.prev();
  }

  next(): void {
    this.parseNextKey();
  }

  prev(): void {
    const original = this.current;
    while (this.block.restartPoint(this.restartIndex) >= original) {
      if (this.restartIndex === 0) {
        this.markInvalid();
        return;
      }
      this.restartIndex--;
    }
    this.seekToRestartPoint(this.restartIndex);
    while (this.parseNextKey() && this.nextOffset < original) {
      // scan to the entry before `original`
    }
  }

  /**
   * User key of the current entry: a view valid until the iterator moves. Consecutive keys
   * of one length get the same view object (its bytes are the current key's: the buffer is
   * overwritten in place, as it always was), which spares an allocation per entry.
   */
  get key(): Uint8Array {
    const n = this.keyLen - INTERNAL_KEY_TRAILER;
    const view = this.keyView;
    if (view.length === n && this.keyViewOf === this.keyBuf) return view;
    this.keyViewOf = this.keyBuf;
    this.keyView = this.keyBuf.subarray(0, n);
    return this.keyView;
  }

  get seq(): number {
    const b = this.keyBuf;
    const o = this.keyLen - 7;
    const lo = (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
    return (b[o + 4]! | (b[o + 5]! << 8) | (b[o + 6]! << 16)) * 0x1_0000_0000 + lo;
  }

  get kind(): ValueKind {
    return this.keyBuf[this.keyLen - INTERNAL_KEY_TRAILER] as ValueKind;
  }

  /** Value of the current entry: a view of the (immutable) block. */
  get value(): Uint8Array {
    // A constructor call is cheaper than subarray (no species lookup).
    return new Uint8Array(
      this.block.buffer,
      this.block.byteOffset + this.valueOffset,
      this.valueLen,
    );
  }

  /** Encoded internal key of the current entry: a view valid until the iterator moves. */
  get internalKey(): Uint8Array {
    return this.keyBuf.subarray(0, this.keyLen);
  }

  /** The buffer holding the current encoded internal key in [0, keyLength). */
  get keyBytes(): Uint8Array {
    return this.keyBuf;
  }

  get keyLength(): number {
    return this.keyLen;
  }

  /** Offset of the current value within the block's data. */
  get valueStart(): number {
    return this.valueOffset;
  }

  get valueLength(): number {
    return this.valueLen;
  }

  /** True iff the current entry's user key equals key. REQUIRES valid(). */
  userKeyEquals(key: Uint8Array): boolean {
    const n = this.keyLen - INTERNAL_KEY_TRAILER;
    if (n !== key.length) return false;
    const b = this.keyBuf;
    for (let i = 0; i < n; i++) if (b[i] !== key[i]) return false;
    return true;
  }

  close(): void {
    this.reset(EMPTY_BLOCK);
  }

  private markInvalid(): void {
    this.current = this.restartsOffset;
    this.nextOffset = this.restartsOffset;
    this.restartIndex = this.numRestarts;
    this.nextRestart = Number.POSITIVE_INFINITY;
    this.keyLen = 0;
    this.valueOffset = 0;
    this.valueLen = 0;
  }

  private seekToRestartPoint(index: number): void {
    this.keyLen = 0;
    this.restartIndex = index;
    this.nextOffset = this.block.restartPoint(index);
    this.nextRestart =
      index + 1 < this.numRestarts ? this.block.restartPoint(index + 1) : Number.POSITIVE_INFINITY;
  }

  /** Decodes the entry at nextOffset; false (and invalid) at the end of the entries. */
  private parseNextKey(): boolean {
    const p = this.nextOffset;
    const limit = this.restartsOffset;
    this.current = p;
    if (p >= limit) {
      this.markInvalid();
      return false;
    }
    const d = this.data;
    if (
      !decodeEntryHeader(d, p, limit) ||
      hShared > this.keyLen ||
      hUnshared + hValueLen > limit - hEnd
    ) {
      this.markInvalid();
      throw this.block.corruption(`bad entry at offset ${p}`);
    }
    const shared = hShared;
    const unshared = hUnshared;
    const start = hEnd;
    const keyLen = shared + unshared;
    if (keyLen < INTERNAL_KEY_TRAILER) {
      this.markInvalid();
      throw this.block.corruption(`entry at offset ${p} has a key of ${keyLen} bytes (< 8)`);
    }
    if (keyLen > this.keyBuf.length) {
      const grown = new Uint8Array(Math.max(keyLen, this.keyBuf.length * 2));
      grown.set(this.keyBuf.subarray(0, shared));
      this.keyBuf = grown;
    }
    const kb = this.keyBuf;
    if (unshared <= 32) {
      for (let i = 0; i < unshared; i++) kb[shared + i] = d[start + i]!;
    } else {
      kb.set(d.subarray(start, start + unshared), shared);
    }
    if (kb[keyLen - INTERNAL_KEY_TRAILER]! > KIND_PUT) {
      this.markInvalid();
      throw this.block.corruption(`entry at offset ${p} has an unknown kind`);
    }
    this.keyLen = keyLen;
    this.valueOffset = start + unshared;
    this.valueLen = hValueLen;
    this.nextOffset = this.valueOffset + hValueLen;
    if (this.nextRestart < p) {
      const n = this.numRestarts;
      do {
        this.restartIndex++;
        this.nextRestart =
          this.restartIndex + 1 < n
            ? this.block.restartPoint(this.restartIndex + 1)
            : Number.POSITIVE_INFINITY;
      } while (this.nextRestart < p);
    }
    return true;
  }
}
