/**
 * BlockCache: parsed data blocks shared by all tables of a store, bounded in bytes
 * (`blockCacheSize`), least recently used evicted first.
 *
 * Keys are numbers, (fileNumber mod 2^21) × 2^32 + (offset mod 2^32): exact integers, so
 * the Map hashes a number instead of building a string per lookup. Two blocks could share
 * a key only for file numbers 2^21 apart or offsets 2^32 apart, so every hit is checked
 * against the block's own file number and offset, and a mismatch counts as a miss: the
 * cache never returns another file's block.
 *
 * Readers keep the cached blocks they use in an array by block number and check them with
 * `touch` (no key lookup); eviction clears that array slot, so the cache's byte bound is
 * also a bound on what readers keep alive through it.
 *
 * An evicted block stays valid for whoever still holds it (iterators, values handed out):
 * blocks are immutable and garbage-collected, so eviction only drops the cache's reference.
 * File numbers are never reused, so blocks of a deleted file are never hit again; they age
 * out, or `evictFile` drops them at once.
 */
import { LruCache } from "../util/lru-cache.js";
import type { Block } from "./block.js";

/** Estimated bytes per cached block beyond its data (Block, views, list node, Map entry). */
export const BLOCK_OVERHEAD_BYTES = 240;

export interface BlockCacheStats {
  readonly hits: number;
  readonly misses: number;
  /** Bytes charged for the cached blocks. */
  readonly bytes: number;
  readonly count: number;
  readonly capacity: number;
}

const FILE_MOD = 2 ** 21;
const OFFSET_MOD = 2 ** 32;

function cacheKey(fileNumber: number, offset: number): number {
  return (fileNumber % FILE_MOD) * OFFSET_MOD + (offset % OFFSET_MOD);
}

function charge(block: Block): number {
  return block.byteLength + BLOCK_OVERHEAD_BYTES;
}

export class BlockCache {
  private readonly lru: LruCache<number, Block>;
  private extraMisses = 0;

  /** capacityBytes 0 disables caching (every lookup misses, nothing is kept). */
  constructor(capacityBytes: number) {
    this.lru = new LruCache<number, Block>(capacityBytes, charge, (_key, block) => {
      block.cacheHandle = undefined;
      const slots = block.slots;
      if (slots !== undefined && slots[block.slotIndex] === block) {
        slots[block.slotIndex] = undefined;
      }
      block.slots = undefined;
    });
  }

  /**
   * A hit on a block known to have been cached (the fast path of TableReader, which keeps
   * the blocks it got from the cache by block number): true, counted as a hit and made most
   * recently used, iff the block is still cached.
   */
  touch(block: Block): boolean {
    const handle = block.cacheHandle;
    return handle !== undefined && this.lru.touch(handle);
  }

  /** The cached block at (fileNumber, offset), or undefined. Counts a hit or a miss. */
  lookup(fileNumber: number, offset: number): Block | undefined {
    const block = this.lru.get(cacheKey(fileNumber, offset));
    if (block === undefined) return undefined;
    if (block.fileNumber !== fileNumber || block.offset !== offset) {
      this.lru.hits--;
      this.extraMisses++;
      return undefined;
    }
    return block;
  }

  /** Caches a block under its own file number and offset (replacing any block there). */
  insert(block: Block): void {
    block.cacheHandle = this.lru.set(cacheKey(block.fileNumber, block.offset), block);
  }

  /** Drops the block at (fileNumber, offset) if cached. */
  erase(fileNumber: number, offset: number): void {
    const key = cacheKey(fileNumber, offset);
    const block = this.lru.peek(key);
    if (block !== undefined && block.fileNumber === fileNumber && block.offset === offset) {
      this.lru.delete(key);
    }
  }

  /**
   * Drops every cached block of a file. O(cached blocks); TableReader.evictCachedBlocks is
   * O(blocks of the file) when the reader is at hand.
   */
  evictFile(fileNumber: number): void {
    const doomed: number[] = [];
    for (const key of this.lru.keys()) {
      if (this.lru.peek(key)?.fileNumber === fileNumber) doomed.push(key);
    }
    for (const key of doomed) this.lru.delete(key);
  }

  clear(): void {
    this.lru.clear();
  }

  get capacity(): number {
    return this.lru.capacity;
  }

  /** A snapshot of the counters. */
  stats(): BlockCacheStats {
    return {
      hits: this.lru.hits,
      misses: this.lru.misses + this.extraMisses,
      bytes: this.lru.size,
      count: this.lru.count,
      capacity: this.lru.capacity,
    };
  }
}
