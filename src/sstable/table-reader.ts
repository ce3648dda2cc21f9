/**
 * TableReader: an open SSTable (docs/format/sstable.md). Opening is synchronous once the
 * file is open: it reads and checks the footer, then the index, filter and properties
 * blocks, once, verifying their checksums whatever the options. After that, a `get` costs
 * a filter probe, a binary search over the decoded index, and one data block from the block
 * cache or from one positioned read (its checksum checked unless verifyChecksums is false).
 * An iterator may instead read ahead (TableIteratorOptions.readaheadBytes): one read per
 * chunk of consecutive data blocks, each block checked as it is served.
 *
 * Errors: damaged data is KvError CORRUPTION naming the file (and the block offset for
 * blocks), thrown by `open` for the footer and the metadata blocks and by `get`/iterators
 * for a data block; a damaged block is never returned as data. Failed reads are IO_ERROR.
 *
 * The reader is single-threaded like the rest of the read path: `get` and iterator calls
 * run to completion synchronously. `close` closes the file; the reader must not be used
 * after it (TableCache keeps readers open while they are in use).
 */
import { ioError } from "../errors.js";
import { compareBytes, KIND_PUT, MAX_SEQUENCE, type ValueKind } from "../key/internal-key.js";
import type { BufferPool } from "../util/buffer-pool.js";
import type { ReadableFile } from "../vfs/file-system.js";
import { Block, BlockIterator } from "./block.js";
import type { BlockCache } from "./block-cache.js";
import { decompressBlock } from "./block-codec.js";
import { BloomFilter, bloomHash } from "./bloom.js";
import {
  BLOCK_TRAILER_SIZE,
  blockTrailerMatches,
  COMPRESSION_DEFLATE,
  COMPRESSION_LZ4,
  COMPRESSION_NONE,
  corruption,
  decodeFooter,
  FOOTER_SIZE,
  type Footer,
} from "./format.js";
import { KeyBuffer } from "./key-bytes.js";
import { decodeProperties, type TableProperties } from "./properties.js";
import { ReadaheadWindow } from "./readahead-window.js";
import { TableIndex } from "./table-index.js";
import { type BlockSource, TableIterator } from "./table-iterator.js";

export interface TableReaderOptions {
  /** Shared cache of data blocks; without one every data block access reads the file. */
  blockCache?: BlockCache | undefined;
  /** Check each data block's CRC when it is read from the file (default true). */
  verifyChecksums?: boolean | undefined;
  /**
   * Leave the filter block unread (default false), for readers that only scan (compaction):
   * lookups then work as in a table without a filter.
   */
  skipFilter?: boolean | undefined;
}

export interface TableIteratorOptions {
  /** Cache the data blocks the iterator reads (default true); long scans may opt out. */
  fillCache?: boolean | undefined;
  /**
   * Read-ahead for sequential scans, in bytes (default 0: off). When > 0, moving forward
   * onto a block that is neither in the last chunk read nor in the block cache reads a
   * chunk of up to this many bytes (whole data blocks, consecutive in the file, at least
   * one) in one positioned read, and the blocks of the chunk are then served as views of
   * it: one read and one allocation instead of one per block. Each block is still checked
   * as it is served (checksum unless verifyChecksums is false, truncation, decompression).
   * Blocks served from a chunk are never cached whatever fillCache says; reverse steps and
   * seeks off the chunk read their block alone (cached per fillCache). A value or block
   * kept keeps its whole chunk in memory: meant for scans that do not hold on to values
   * (compaction), not for user iterators.
   */
  readaheadBytes?: number | undefined;
  /**
   * With readaheadBytes: read every chunk into the same memory (default false). Blocks,
   * keys and values that came from a chunk are then valid only until the iterator reads
   * its next chunk: for scans that copy what they keep (compaction), which then allocate
   * nothing per chunk.
   */
  readaheadReuse?: boolean | undefined;
  /**
   * With readaheadReuse: the chunk memory (readaheadBytes long) is taken from this pool
   * and given back to it when the iterator closes.
   */
  readaheadPool?: BufferPool<ArrayBuffer> | undefined;
}

/** Counters of one reader. */
export interface TableReaderStats {
  /** Lookups that consulted the filter. */
  filterChecked: number;
  /** Lookups the filter answered "absent" (no block read). */
  filterUseful: number;
  /** Data blocks read from the file (cache misses, or no cache), or served from read-ahead. */
  blockReads: number;
  /**
   * Bytes read for data blocks, trailers included: those reads, plus the read-ahead
   * chunks (all their bytes, whether or not every block was then served).
   */
  blockBytesRead: number;
  /** Read-ahead reads (each of one chunk; its blocks count in blockReads as served). */
  readaheadReads: number;
}

export interface TableGetResult {
  readonly kind: ValueKind;
  /**
   * `get`: a view of the (immutable) data block: stays valid as long as it is kept.
   * `getCopy`: a copy (a Buffer) the caller owns.
   */
  readonly value: Uint8Array;
}

/**
 * Reads the block at [offset, offset + size) and its trailer, which must end by `limit`,
 * checks the trailer (when verify) and decompresses. Throws CORRUPTION or IO_ERROR.
 * `frame` (size + BLOCK_TRAILER_SIZE bytes) receives the read when given; an uncompressed
 * block's data is then a view of it.
 */
function readBlockContents(
  file: ReadableFile,
  offset: number,
  size: number,
  verify: boolean,
  limit: number,
  what: string,
  frame?: Uint8Array,
): Uint8Array {
  const frameSize = size + BLOCK_TRAILER_SIZE;
  if (offset < 0 || offset + frameSize > limit) {
    throw corruption(
      file.path,
      `${blockName(what, offset)}: size ${size} runs past the end of its region (${limit})`,
    );
  }
  // Not Buffer.allocUnsafe: a pooled slice would pin its 8 KiB pool slab for as long as the
  // block is cached. allocUnsafeSlow gives the block its own exactly-sized memory.
  frame ??= Buffer.allocUnsafeSlow(frameSize);
  let n: number;
  try {
    n = file.read(frame, offset);
  } catch (err) {
    throw ioError(`read ${blockName(what, offset)}`, err, file.path);
  }
  return decodeBlockFrame(file.path, frame, n, size, verify, what, offset);
}

/**
 * Scratch of `get`, `getCopy` and `find`, shared by every reader of this thread (lookups are
 * synchronous and never nested), so that a reader, of which a load opens one per table it
 * writes (most of them compacted away unread), carries no scratch of its own.
 */
const getTarget = new KeyBuffer();
const getIter = new BlockIterator();
/**
 * Memory of the blocks a transient lookup read but the block cache declined (readBlock):
 * overwritten by the next one, so such a block is valid only until then. Grows to the
 * largest frame read (not shrunk).
 */
let scratchFrame = new Uint8Array(8192);

/**
 * The contents of a block read into frame[0, n) (frame: the block and its trailer, size +
 * BLOCK_TRAILER_SIZE bytes asked for, n of them read): CORRUPTION naming the `what` block
 * at `offset` when the read came up short or (when verify) the trailer does not match;
 * otherwise the block's data, decompressed, or a view of frame when it is stored
 * uncompressed.
 */
function decodeBlockFrame(
  path: string,
  frame: Uint8Array,
  n: number,
  size: number,
  verify: boolean,
  what: string,
  offset: number,
): Uint8Array {
  const frameSize = size + BLOCK_TRAILER_SIZE;
  if (n !== frameSize) {
    throw corruption(
      path,
      `${blockName(what, offset)}: truncated, read ${n} of ${frameSize} bytes`,
    );
  }
  if (verify && !blockTrailerMatches(frame, size)) {
    throw corruption(path, `${blockName(what, offset)}: checksum mismatch`);
  }
  const type = frame[size];
  if (type === COMPRESSION_NONE) return new Uint8Array(frame.buffer, frame.byteOffset, size);
  if (type === COMPRESSION_DEFLATE || type === COMPRESSION_LZ4) {
    return decompressBlock(path, type, frame.subarray(0, size), blockName(what, offset));
  }
  throw corruption(path, `${blockName(what, offset)}: unknown compression type ${type}`);
}

/** How errors name a block: built only when one is thrown. */
function blockName(what: string, offset: number): string {
  return `${what} block at offset ${offset}`;
}

function readFooter(file: ReadableFile): Footer {
  const size = file.size;
  if (size < FOOTER_SIZE) {
    throw corruption(
      file.path,
      `file of ${size} bytes is too short for a table (the footer is ${FOOTER_SIZE} bytes)`,
    );
  }
  const bytes = new Uint8Array(FOOTER_SIZE);
  let n: number;
  try {
    n = file.read(bytes, size - FOOTER_SIZE);
  } catch (err) {
    throw ioError("read table footer", err, file.path);
  }
  if (n !== FOOTER_SIZE) throw corruption(file.path, `footer truncated: read ${n} bytes`);
  return decodeFooter(bytes, size, file.path);
}

export class TableReader implements BlockSource {
  readonly fileSize: number;
  readonly properties: TableProperties;
  readonly index: TableIndex;
  readonly stats: TableReaderStats = {
    filterChecked: 0,
    filterUseful: 0,
    blockReads: 0,
    blockBytesRead: 0,
    readaheadReads: 0,
  };
  private readonly filter: BloomFilter | undefined;
  private readonly cache: BlockCache | undefined;
  private readonly verify: boolean;
  /** Data blocks (and their trailers) end by here: the first metadata block. */
  private readonly dataLimit: number;
  /**
   * Data blocks this reader got from the block cache, by block number (a cached block is
   * found without a cache key lookup). The cache clears a slot when it evicts the block.
   * Made when the first block is slotted: most tables written during a load are compacted
   * away unread, and the array (8 bytes per data block, ~8 KB for a 4 MiB table) lives as
   * long as the reader, long enough to be promoted out of V8's young generation.
   */
  private slots: Array<Block | undefined> | undefined;
  private closePromise: Promise<void> | undefined;

  private constructor(
    readonly file: ReadableFile,
    readonly fileNumber: number,
    readonly footer: Footer,
    parts: {
      index: TableIndex;
      filter: BloomFilter | undefined;
      properties: TableProperties;
      dataLimit: number;
      options: TableReaderOptions;
    },
  ) {
    this.fileSize = file.size;
    this.index = parts.index;
    this.filter = parts.filter;
    this.properties = parts.properties;
    this.dataLimit = parts.dataLimit;
    this.cache = parts.options.blockCache;
    this.verify = parts.options.verifyChecksums ?? true;
  }

  /**
   * Opens a table: reads and checks the footer, index, filter and properties blocks.
   * `fileNumber` keys its blocks in the block cache (unique among the cache's tables).
   * Throws CORRUPTION naming the file or IO_ERROR; on failure the file stays open (the
   * caller closes it). On success the reader owns the file (`close` closes it).
   */
  static open(
    file: ReadableFile,
    fileNumber: number,
    options: TableReaderOptions = {},
  ): TableReader {
    const path = file.path;
    const footer = readFooter(file);
    const metaLimit = file.size - FOOTER_SIZE;
    const meta = (name: string, h: { offset: number; size: number }): Uint8Array =>
      readBlockContents(file, h.offset, h.size, true, metaLimit, name);

    let dataLimit = Math.min(footer.index.offset, footer.properties.offset);
    if (footer.filter.size > 0) dataLimit = Math.min(dataLimit, footer.filter.offset);

    const indexBlock = new Block(
      meta("index", footer.index),
      path,
      footer.index.offset,
      fileNumber,
    );
    const index = TableIndex.decode(indexBlock, dataLimit);

    let filter: BloomFilter | undefined;
    if (footer.filter.size > 0 && options.skipFilter !== true) {
      try {
        filter = new BloomFilter(meta("filter", footer.filter));
      } catch (err) {
        if (err instanceof RangeError) throw corruption(path, `filter block: ${err.message}`);
        throw err;
      }
    }
    const properties = decodeProperties(meta("properties", footer.properties), path);
    if (properties.dataBlocks !== index.count) {
      throw corruption(
        path,
        `properties say ${properties.dataBlocks} data blocks, the index has ${index.count}`,
      );
    }
    return new TableReader(file, fileNumber, footer, {
      index,
      filter,
      properties,
      dataLimit,
      options,
    });
  }

  /** True iff the table has a Bloom filter. */
  get hasFilter(): boolean {
    return this.filter !== undefined;
  }

  /** The Bloom filter's size in bits and probes per key (undefined without a filter); for inspection tools. */
  get filterShape(): { bits: number; probes: number } | undefined {
    const f = this.filter;
    return f === undefined ? undefined : { bits: (f.data.length - 1) * 8, probes: f.probes };
  }

  /**
   * The newest entry for the user key with sequence <= seq (a tombstone is returned as
   * such), or undefined. `hash` is bloomHash(key) when the caller computed it already.
   * REQUIRES 0 <= seq <= MAX_SEQUENCE.
   */
  get(key: Uint8Array, seq: number, hash?: number): TableGetResult | undefined {
    const it = getIter;
    if (!this.find(key, seq, hash, false)) return undefined;
    it.currentBlock.exposed = true; // the value is a view of it: never recycle its memory
    const result: TableGetResult = { kind: it.kind, value: it.value };
    it.reset();
    return result;
  }

  /**
   * As `get`, but the value is a copy (a Buffer) and nothing of the block is kept: the
   * read path of the store, which lets the block cache reuse the block's memory, and a
   * block read while the cache is full is cached only if the cache admits it (see
   * BlockCache.admits), else read into scratch memory reused by the next such read.
   */
  getCopy(key: Uint8Array, seq: number, hash?: number): TableGetResult | undefined {
    const it = getIter;
    if (!this.find(key, seq, hash, true)) return undefined;
    const result: TableGetResult = { kind: it.kind, value: Buffer.from(it.value) };
    it.reset();
    return result;
  }

  /**
   * Positions getIter (module state) on the newest entry of the user key with sequence
   * <= seq and returns true, or returns false (getIter reset) when there is none.
   * `transient`: the caller copies what it needs before the next read of this thread (the
   * block may then be in scratch memory: see readBlock).
   */
  private find(
    key: Uint8Array,
    seq: number,
    hash: number | undefined,
    transient: boolean,
  ): boolean {
    const filter = this.filter;
    if (filter !== undefined) {
      this.stats.filterChecked++;
      if (!filter.mayContainHash(hash ?? bloomHash(key))) {
        this.stats.filterUseful++;
        return false;
      }
    }
    const t = getTarget;
    t.setInternal(key, seq, KIND_PUT);
    const i = this.index.findFirstGE(t.bytes, t.length);
    if (i === this.index.count) return false;
    // Block i holds the first entry >= target, or else no entry of this user key is >= target:
    // if target is past block i's last key L yet <= its index key S, then S is a shortened
    // separator whose user key is > L's and < the next block's first user key (see
    // TableBuilder.separator), so the next entry has another user key.
    const it = getIter;
    it.reset(this.cachedBlock(i) ?? this.readBlock(i, true, transient));
    it.seekEncoded(t.bytes, t.length);
    if (!it.valid() || !it.userKeyEquals(key)) {
      it.reset();
      return false;
    }
    return true;
  }

  /**
   * False only if the table certainly holds no entry for the user key: outside the
   * table's key range, or ruled out by the filter.
   */
  mayContain(key: Uint8Array): boolean {
    const p = this.properties;
    if (p.entries === 0) return false;
    if (compareBytes(key, p.smallestKey) < 0 || compareBytes(key, p.largestKey) > 0) return false;
    return this.filter === undefined || this.filter.mayContain(key);
  }

  /** The filter's answer for bloomHash(key) = hash (true when there is no filter). */
  mayContainHash(hash: number): boolean {
    return this.filter === undefined || this.filter.mayContainHash(hash);
  }

  /**
   * A new two-level iterator over the whole table (initially invalid). A bad
   * readaheadBytes (negative, not a number) is a RangeError.
   */
  iterator(options: TableIteratorOptions = {}, onClose?: () => void): TableIterator {
    const fillCache = options.fillCache ?? true;
    const readahead = options.readaheadBytes ?? 0;
    if (!(readahead >= 0)) {
      throw new RangeError(`readaheadBytes must be a number >= 0, got ${readahead}`);
    }
    if (readahead === 0) return new TableIterator(this, fillCache, onClose);
    const window = new ReadaheadWindow(
      readahead,
      options.readaheadReuse ?? false,
      options.readaheadPool,
    );
    const source: BlockSource = {
      index: this.index,
      dataBlock: (i, fill) => this.readaheadBlock(i, fill, window),
    };
    return new TableIterator(source, fillCache, () => {
      window.release();
      onClose?.();
    });
  }

  /**
   * The approximate file offset where entries >= (key, seq) begin: the offset of the data
   * block that would hold them, or the end of the data blocks.
   */
  approximateOffsetOf(key: Uint8Array, seq = MAX_SEQUENCE): number {
    const t = new KeyBuffer(key.length + 8);
    t.setInternal(key, seq, KIND_PUT);
    const i = this.index.findFirstGE(t.bytes, t.length);
    return i < this.index.count ? this.index.blockOffsets[i]! : this.dataLimit;
  }

  /** Drops this table's blocks from the block cache (when its file is deleted). */
  evictCachedBlocks(): void {
    const cache = this.cache;
    if (cache === undefined) return;
    const offsets = this.index.blockOffsets;
    for (let i = 0; i < offsets.length; i++) cache.erase(this.fileNumber, offsets[i]!);
  }

  /**
   * Data block i, from the block cache or the file (cached unless fillCache is false), for
   * a holder that keeps it (an iterator): the block is marked exposed, so its memory is
   * never reused.
   */
  dataBlock(i: number, fillCache: boolean): Block {
    const block = this.loadBlock(i, fillCache);
    block.exposed = true;
    return block;
  }

  /**
   * dataBlock for an iterator with read-ahead (TableIteratorOptions.readaheadBytes): block
   * i from the window's chunk if it holds it; else from the block cache; else, when i is
   * the block after the last one served (a forward step, or the first block of a first
   * seekToFirst), from a new chunk read at i; else by a read of its own. Marked exposed.
   */
  private readaheadBlock(i: number, fillCache: boolean, window: ReadaheadWindow): Block {
    let block: Block | undefined;
    if (!window.covers(i)) {
      block = this.cachedBlock(i);
      if (block === undefined && (i !== window.next || !this.fillWindow(window, i))) {
        block = this.readBlock(i, fillCache);
      }
    }
    block ??= this.windowBlock(window, i);
    window.next = i + 1;
    block.exposed = true;
    return block;
  }

  /** Reads the chunk starting at block i into the window; false if it cannot hold block i. */
  private fillWindow(window: ReadaheadWindow, i: number): boolean {
    const n = window.fill(this.file, this.index, i, this.dataLimit);
    if (n < 0) return false;
    this.stats.readaheadReads++;
    this.stats.blockBytesRead += n;
    return true;
  }

  /** Data block i from the window's chunk, checked as readBlockContents checks a read. */
  private windowBlock(window: ReadaheadWindow, i: number): Block {
    const offset = this.index.blockOffsets[i]!;
    const size = this.index.blockSizes[i]!;
    const frameSize = size + BLOCK_TRAILER_SIZE;
    const data = decodeBlockFrame(
      this.file.path,
      window.view(offset, frameSize),
      window.bytesRead(offset, frameSize),
      size,
      this.verify,
      "data",
      offset,
    );
    this.stats.blockReads++;
    return new Block(data, this.file.path, offset, this.fileNumber);
  }

  /** Data block i, from the block cache or the file (cached unless fillCache is false). */
  private loadBlock(i: number, fillCache: boolean): Block {
    return this.cachedBlock(i) ?? this.readBlock(i, fillCache);
  }

  /** Data block i if the block cache holds it. */
  private cachedBlock(i: number): Block | undefined {
    const cache = this.cache;
    if (cache === undefined) return undefined;
    // Fast path: the block this reader last got from the cache for slot i, if still there.
    const slots = this.slots;
    const slotted = slots?.[i];
    if (slotted !== undefined) {
      if (cache.touch(slotted)) return slotted;
      slots![i] = undefined;
    }
    const cached = cache.lookup(this.fileNumber, this.index.blockOffsets[i]!);
    if (cached !== undefined) this.slot(i, cached);
    return cached;
  }

  /**
   * Data block i read from the file, cached unless fillCache is false. `transient`: the
   * caller keeps nothing of the block past its next read on this thread; if the cache then
   * declines it (BlockCache.admits), the block is read into this thread's scratch frame,
   * which the next such read overwrites, and is not cached.
   */
  private readBlock(i: number, fillCache: boolean, transient = false): Block {
    const offset = this.index.blockOffsets[i]!;
    const size = this.index.blockSizes[i]!;
    const cache = this.cache;
    const frameSize = size + BLOCK_TRAILER_SIZE;
    if (transient && fillCache && cache !== undefined) {
      if (!cache.admits(this.fileNumber, offset, frameSize)) {
        return this.readScratchBlock(offset, size);
      }
    }
    const frame = cache?.allocFrame(frameSize);
    const block = this.readDataBlock(offset, size, frame);
    const data = block.data;
    if (cache !== undefined && frame !== undefined) {
      if (data.buffer === frame.buffer) block.pooled = true;
      else cache.freeFrame(frame.buffer); // inflated: the frame is no longer needed
      if (fillCache) {
        cache.insert(block);
        if (block.cache === cache) this.slot(i, block);
      }
    }
    return block;
  }

  /** The data block at offset, read into the scratch frame (see readBlock), not cached. */
  private readScratchBlock(offset: number, size: number): Block {
    const frameSize = size + BLOCK_TRAILER_SIZE;
    if (scratchFrame.length < frameSize) {
      scratchFrame = new Uint8Array(Math.max(frameSize, 2 * scratchFrame.length));
    }
    return this.readDataBlock(offset, size, scratchFrame.subarray(0, frameSize));
  }

  /**
   * The data block at offset (size bytes and its trailer) read from the file, into `frame`
   * when given (see readBlockContents), counted in the stats. Not cached.
   */
  private readDataBlock(offset: number, size: number, frame: Uint8Array | undefined): Block {
    const data = readBlockContents(
      this.file,
      offset,
      size,
      this.verify,
      this.dataLimit,
      "data",
      frame,
    );
    this.stats.blockReads++;
    this.stats.blockBytesRead += size + BLOCK_TRAILER_SIZE;
    return new Block(data, this.file.path, offset, this.fileNumber);
  }

  private slot(i: number, block: Block): void {
    // A block moves between the slots of two readers of one file (an evicted reader still
    // in use and its successor): the old slot lets go so it keeps no evicted block alive.
    this.slots ??= new Array<Block | undefined>(this.index.count);
    const slots = this.slots;
    const previous = block.slots;
    if (previous !== undefined && previous !== slots && previous[block.slotIndex] === block) {
      previous[block.slotIndex] = undefined;
    }
    slots[i] = block;
    block.slots = slots;
    block.slotIndex = i;
  }

  /** Closes the file (idempotent). Blocks and values handed out stay valid. */
  close(): Promise<void> {
    this.closePromise ??= this.file.close().catch((err: unknown) => {
      throw ioError("close table", err, this.file.path);
    });
    return this.closePromise;
  }
}
