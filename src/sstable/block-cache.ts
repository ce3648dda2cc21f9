/**
 * BlockCache: parsed data blocks shared by all tables of a store, bounded in bytes
 * (`blockCacheSize`), evicted by CLOCK (second chance), and the owner of a pool of block
 * memory that evicted blocks give back for the next reads.
 *
 * Keys are numbers, (fileNumber mod 2^21) × 2^32 + (offset mod 2^32): exact integers, so
 * the Map hashes a number instead of building a string per lookup. Two blocks could share
 * a key only for file numbers 2^21 apart or offsets 2^32 apart, so every hit is checked
 * against the block's own file number and offset, and a mismatch counts as a miss: the
 * cache never returns another file's block.
 *
 * Replacement: the cached blocks sit in a ring; a hit only sets the block's `referenced`
 * bit (no list relinking, no writes to other blocks). To make room, the hand sweeps the
 * ring: a referenced block loses its bit and is passed over, the first unreferenced one
 * is evicted, and the new block takes its place, just behind the hand.
 *
 * Readers keep the cached blocks they use in an array by block number and check them with
 * `touch` (no key lookup); eviction clears that array slot, so the cache's byte bound is
 * also a bound on what readers keep alive through it.
 *
 * Block memory (`allocFrame`): data blocks are read into frames of a few size classes
 * (multiples of FRAME_GRANULE bytes). When a block leaves the cache its frame goes back to
 * the pool and a later read overwrites it, so a block's memory is reused ONLY IF nothing
 * can still read it. That holds for a block that is `recyclable`: its data is a pool
 * frame, and it was never handed out beyond a synchronous lookup that copies what it
 * needs (TableReader.getCopy) — TableReader sets `exposed` on every block it hands to an
 * iterator or whose value it returns as a view, and an exposed block is left to the
 * garbage collector instead. A recycled Block is emptied (`Block.release`) so a stale
 * reference would find no entries rather than another block's bytes. A block that was
 * never stored (too big, capacity 0) is never recycled.
 *
 * Admission (`admits`): a point lookup that copies what it needs (TableReader.getCopy, the
 * store's get) asks before caching a block it had to read while the cache is full, and the
 * block is cached only if it is used more often than the block it would evict (TinyLFU's
 * rule, with `FrequencySketch`). Otherwise it is read into scratch memory and dropped: a
 * cache smaller than a uniformly read data set keeps its blocks instead of replacing one
 * per miss (same hit rate, none of the eviction work and garbage), while blocks that turn
 * hot still come in. Blocks for iterators and value views are always inserted (they need
 * memory of their own anyway). Hits and misses of every lookup feed the sketch.
 *
 * File numbers are never reused, so blocks of a deleted file are never hit again; they age
 * out, or `evictFile` drops them at once.
 */
import { BufferPool } from "../util/buffer-pool.js";
import type { Block } from "./block.js";
import { FrequencySketch } from "./frequency-sketch.js";

/** Estimated bytes per cached block beyond its data (Block, views, ring slot, Map entry). */
export const BLOCK_OVERHEAD_BYTES = 240;

/** Frame sizes are multiples of this (so a freed frame fits the next reads of its class). */
export const FRAME_GRANULE = 64;
/** Frames above this size are not pooled (allocated and left to the garbage collector). */
const MAX_POOLED_FRAME = 256 * 1024;

export interface BlockCacheStats {
  readonly hits: number;
  readonly misses: number;
  /** Bytes charged for the cached blocks. */
  readonly bytes: number;
  readonly count: number;
  readonly capacity: number;
  /** Blocks read while the cache was full and not cached: rarer than the one to evict. */
  readonly rejected: number;
}

const FILE_MOD = 2 ** 21;
const OFFSET_MOD = 2 ** 32;

function cacheKey(fileNumber: number, offset: number): number {
  return (fileNumber % FILE_MOD) * OFFSET_MOD + (offset % OFFSET_MOD);
}

/** The size class (pool frame size) of a frame of `size` bytes. */
function frameClass(size: number): number {
  return Math.ceil(size / FRAME_GRANULE) * FRAME_GRANULE || FRAME_GRANULE;
}

/** The charge of a block read into a pooled frame of `frameSize` bytes. */
function frameCharge(frameSize: number): number {
  return (frameSize > MAX_POOLED_FRAME ? frameSize : frameClass(frameSize)) + BLOCK_OVERHEAD_BYTES;
}

/** A 4 KiB block's charge: sizes the frequency sketch from the capacity. */
const TYPICAL_BLOCK_CHARGE = 4096 + BLOCK_OVERHEAD_BYTES;

/** The bytes a block holds: its whole pool frame when it has one, else its data. */
function charge(block: Block): number {
  return (block.pooled ? block.buffer.byteLength : block.byteLength) + BLOCK_OVERHEAD_BYTES;
}

export class BlockCache {
  private readonly map = new Map<number, Block>();
  /** The CLOCK ring: cached blocks at their ringIndex, holes undefined. */
  private readonly ring: Array<Block | undefined> = [];
  /** Holes of the ring, reused first (the last one freed on top). */
  private readonly holes: number[] = [];
  private hand = 0;
  private used = 0;
  private hitCount = 0;
  private missCount = 0;
  private rejectCount = 0;
  /** Access frequencies of cached and missed blocks, for `admits`. */
  private readonly sketch: FrequencySketch;
  private readonly capacityBytes: number;
  /**
   * Free frames by size (a multiple of FRAME_GRANULE), bounded in bytes outside the
   * capacity (they hold no block).
   */
  private readonly pool: BufferPool<ArrayBuffer>;

  /** capacityBytes 0 disables caching (every lookup misses, nothing is kept). */
  constructor(capacityBytes: number) {
    if (!(capacityBytes >= 0) || !Number.isFinite(capacityBytes)) {
      throw new RangeError(
        `BlockCache capacity must be a finite number >= 0, got ${capacityBytes}`,
      );
    }
    this.capacityBytes = capacityBytes;
    this.sketch = new FrequencySketch(Math.ceil(capacityBytes / TYPICAL_BLOCK_CHARGE));
    this.pool = new BufferPool(Math.min(Math.max(capacityBytes / 64, 256 * 1024), 4 * 1024 * 1024));
  }

  /**
   * A hit on a block known to have been cached (the fast path of TableReader, which keeps
   * the blocks it got from the cache by block number): true, counted as a hit and marked
   * referenced, iff the block is still in this cache.
   */
  touch(block: Block): boolean {
    if (block.cache !== this) return false;
    block.referenced = true;
    this.hitCount++;
    this.sketch.add(block.fileNumber, block.offset);
    return true;
  }

  /** The cached block at (fileNumber, offset), or undefined. Counts a hit or a miss. */
  lookup(fileNumber: number, offset: number): Block | undefined {
    this.sketch.add(fileNumber, offset);
    const block = this.map.get(cacheKey(fileNumber, offset));
    if (block === undefined || block.fileNumber !== fileNumber || block.offset !== offset) {
      this.missCount++;
      return undefined;
    }
    block.referenced = true;
    this.hitCount++;
    return block;
  }

  /**
   * Whether a block of `frameSize` bytes at (fileNumber, offset), just missed by `lookup`,
   * should be inserted: true while it fits without evicting; otherwise true iff the sketch
   * counts it more often used than the block under the hand (the next one an eviction
   * considers; the hand does not move, so a refusal costs no sweep). A refusal is counted
   * in `stats().rejected`.
   */
  admits(fileNumber: number, offset: number, frameSize: number): boolean {
    const c = frameCharge(frameSize);
    if (this.used + c <= this.capacityBytes) return true;
    if (c > this.capacityBytes) return false;
    const victim = this.blockAtHand();
    const sketch = this.sketch;
    if (sketch.estimate(fileNumber, offset) > sketch.estimate(victim.fileNumber, victim.offset)) {
      return true;
    }
    this.rejectCount++;
    return false;
  }

  /**
   * Caches a block under its own file number and offset (replacing any block there),
   * evicting others to make room. A block bigger than the capacity is not stored.
   * REQUIRES the block is in no cache.
   */
  insert(block: Block): void {
    const key = cacheKey(block.fileNumber, block.offset);
    const old = this.map.get(key);
    if (old !== undefined) this.remove(old);
    const c = charge(block);
    if (c > this.capacityBytes) return;
    while (this.used + c > this.capacityBytes) this.evictOne();
    let at = this.holes.pop();
    if (at === undefined) {
      at = this.ring.length;
      this.ring.push(block);
    } else {
      this.ring[at] = block;
    }
    block.ringIndex = at;
    block.charge = c;
    block.referenced = false;
    block.cache = this;
    this.map.set(key, block);
    this.used += c;
  }

  /** Drops the block at (fileNumber, offset) if cached. */
  erase(fileNumber: number, offset: number): void {
    const block = this.map.get(cacheKey(fileNumber, offset));
    if (block !== undefined && block.fileNumber === fileNumber && block.offset === offset) {
      this.remove(block);
    }
  }

  /**
   * Drops every cached block of a file. O(cached blocks); TableReader.evictCachedBlocks is
   * O(blocks of the file) when the reader is at hand.
   */
  evictFile(fileNumber: number): void {
    const doomed: Block[] = [];
    for (const block of this.map.values()) if (block.fileNumber === fileNumber) doomed.push(block);
    for (const block of doomed) this.remove(block);
  }

  /** Drops every block, and the free frames. */
  clear(): void {
    for (const block of [...this.map.values()]) this.remove(block);
    this.ring.length = 0;
    this.holes.length = 0;
    this.hand = 0;
    this.pool.clear();
  }

  get capacity(): number {
    return this.capacityBytes;
  }

  /** Bytes of the free frames waiting in the pool (not counted in `stats().bytes`). */
  get pooledBytes(): number {
    return this.pool.pooledBytes;
  }

  /** A snapshot of the counters. */
  stats(): BlockCacheStats {
    return {
      hits: this.hitCount,
      misses: this.missCount,
      bytes: this.used,
      count: this.map.size,
      capacity: this.capacityBytes,
      rejected: this.rejectCount,
    };
  }

  /**
   * Memory for a block frame of `size` bytes: a view [0, size) of a fresh or recycled
   * ArrayBuffer of its own, sized size rounded up to FRAME_GRANULE (frames above
   * MAX_POOLED_FRAME: exactly size). The contents are arbitrary.
   */
  allocFrame(size: number): Uint8Array {
    if (size > MAX_POOLED_FRAME) return new Uint8Array(new ArrayBuffer(size));
    const cls = frameClass(size);
    return new Uint8Array(this.pool.take(cls) ?? new ArrayBuffer(cls), 0, size);
  }

  /**
   * Gives back a frame from `allocFrame` that nothing references any more (e.g. the
   * compressed frame of a block once inflated). Frames of other sizes are ignored.
   */
  freeFrame(buffer: ArrayBufferLike): void {
    const cls = buffer.byteLength;
    if (cls % FRAME_GRANULE !== 0 || cls > MAX_POOLED_FRAME || !(buffer instanceof ArrayBuffer)) {
      return;
    }
    this.pool.give(buffer);
  }

  /** Evicts the first unreferenced block at or after the hand (clearing bits on the way). */
  private evictOne(): void {
    const ring = this.ring;
    // used > 0 here, so the ring holds a block; two turns at most clear every bit.
    for (;;) {
      if (this.hand >= ring.length) this.hand = 0;
      const block = ring[this.hand++];
      if (block === undefined) continue;
      if (block.referenced) {
        block.referenced = false;
        continue;
      }
      this.remove(block);
      return;
    }
  }

  /**
   * The first block at or after the hand, which stays where it is. REQUIRES the ring holds
   * a block (used > 0).
   */
  private blockAtHand(): Block {
    const ring = this.ring;
    let at = this.hand;
    for (;;) {
      if (at >= ring.length) at = 0;
      const block = ring[at++];
      if (block !== undefined) return block;
    }
  }

  private remove(block: Block): void {
    this.map.delete(cacheKey(block.fileNumber, block.offset));
    this.ring[block.ringIndex] = undefined;
    this.holes.push(block.ringIndex);
    this.used -= block.charge;
    block.cache = undefined;
    block.referenced = false;
    const slots = block.slots;
    if (slots !== undefined && slots[block.slotIndex] === block) {
      slots[block.slotIndex] = undefined;
    }
    block.slots = undefined;
    if (block.pooled && !block.exposed) {
      const buffer = block.buffer;
      block.release();
      this.freeFrame(buffer);
    }
  }
}
