/**
 * BuilderMemory: the working memory of one TableBuilder (write buffer, frame for oversized
 * blocks, data and index block builders, filter builder and filter bytes, key scratch),
 * and a small free list of it per thread, so that the next table built on the same thread
 * reuses it instead of allocating it again.
 *
 * Why: a builder lives as long as its table takes to write (tens of milliseconds and
 * thousands of allocations), long enough for its buffers to be promoted to V8's old
 * generation, where dead ArrayBuffers are freed only by a full collection. The compaction
 * worker's heap is small and rarely collected in full, so the buffers of finished builders
 * would pile up between collections (figures: docs/benchmarks/tables.md, "Worker
 * memory").
 *
 * Contract: memory taken with `takeBuilderMemory` belongs to one builder until it gives it
 * back with `giveBuilderMemory`, after which that builder never touches it again.
 * Module state: each thread (the main thread, each worker) has its own free list.
 */
import { BlockBuilder } from "./block-builder.js";
import { BloomFilterBuilder } from "./bloom.js";
import { KeyBuffer } from "./key-bytes.js";

/** Blocks are gathered up to this many bytes before one `append`. */
export const WRITE_BUFFER_BYTES = 64 * 1024;
/** Size of a new frame buffer (for blocks that do not fit the write buffer). */
const FRAME_BYTES = 8192;
/** A frame or filter buffer larger than this (huge values, huge tables) is not kept. */
const KEEP_LIMIT = 1 << 20;
/** Builders' memory kept per thread: a flush and a compaction output build at once. */
const MAX_FREE = 2;

export interface BuilderMemory {
  readonly writeBuffer: Uint8Array;
  frame: Uint8Array;
  /** Filter bytes are built here when it is long enough (BloomFilterBuilder.finish). */
  filter: Uint8Array;
  dataBlock: BlockBuilder;
  readonly indexBlock: BlockBuilder;
  bloom: BloomFilterBuilder | undefined;
  last: KeyBuffer;
  cur: KeyBuffer;
  readonly indexKey: KeyBuffer;
}

const free: BuilderMemory[] = [];

/**
 * Memory for a builder whose data blocks restart every `restartInterval` entries and whose
 * filter has `bloomBitsPerKey` bits per key (0: no filter): reset, reused when there is
 * some, else new.
 */
export function takeBuilderMemory(restartInterval: number, bloomBitsPerKey: number): BuilderMemory {
  const m = free.pop();
  if (m === undefined) {
    return {
      writeBuffer: new Uint8Array(WRITE_BUFFER_BYTES),
      frame: new Uint8Array(FRAME_BYTES),
      filter: new Uint8Array(0),
      dataBlock: new BlockBuilder(restartInterval),
      indexBlock: new BlockBuilder(1),
      bloom: bloomBitsPerKey > 0 ? new BloomFilterBuilder(bloomBitsPerKey) : undefined,
      last: new KeyBuffer(),
      cur: new KeyBuffer(),
      indexKey: new KeyBuffer(),
    };
  }
  if (m.dataBlock.restartInterval === restartInterval) m.dataBlock.reset();
  else m.dataBlock = new BlockBuilder(restartInterval);
  m.indexBlock.reset();
  if (bloomBitsPerKey <= 0) m.bloom = undefined;
  else if (m.bloom?.bitsPerKey === bloomBitsPerKey) m.bloom.reset();
  else m.bloom = new BloomFilterBuilder(bloomBitsPerKey);
  m.last.length = 0;
  m.cur.length = 0;
  m.indexKey.length = 0;
  return m;
}

/** Gives a builder's memory back for the next builder on this thread (see the contract). */
export function giveBuilderMemory(m: BuilderMemory): void {
  if (free.length >= MAX_FREE) return;
  if (m.frame.length > KEEP_LIMIT) m.frame = new Uint8Array(FRAME_BYTES);
  if (m.filter.length > KEEP_LIMIT) m.filter = new Uint8Array(0);
  free.push(m);
}
