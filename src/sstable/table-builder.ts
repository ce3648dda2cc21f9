/**
 * TableBuilder: writes one SSTable (docs/format/sstable.md) to a WritableFile, streaming.
 *
 * Legal call order: `add*` (or `addFrom*`) then `finish` | `abandon`. After `finish` or
 * `abandon` (or an I/O error, after which only `abandon` makes sense), every call but
 * `abandon` throws.
 *
 * Memory stays bounded whatever the table size: the data block being filled (it is
 * appended to the file as soon as it reaches `blockSize`), the index entries (one short key
 * per data block) and the 32-bit filter hashes of the distinct user keys (4 bytes per key,
 * not the keys). That working memory comes from the thread's free list (builder-memory.ts)
 * and goes back to it at `finish` and `abandon`, for the next builder.
 *
 * `finish` writes the filter, properties and index blocks and the footer; it neither syncs
 * nor closes the file: the caller does `file.sync()` (then `close()`), and deletes the file
 * after `abandon` or a failure. Bytes go to the file with `append` (synchronous): blocks
 * are gathered in a WRITE_BUFFER_BYTES buffer and appended together (one write call per
 * 4 KiB block cost more than the copy), so until `finish` returns the file may lag behind
 * what was added.
 */
import { ioError, KvError } from "../errors.js";
import {
  formatInternalKey,
  INTERNAL_KEY_TRAILER,
  KIND_DELETE,
  KIND_PUT,
  MAX_SEQUENCE,
  type ValueKind,
} from "../key/internal-key.js";
import { putVarint } from "../util/coding.js";
import type { WritableFile } from "../vfs/file-system.js";
import type { BlockBuilder } from "./block-builder.js";
import { COMPRESSION_TYPE_OF, compressBlock } from "./block-codec.js";
import type { BloomFilterBuilder } from "./bloom.js";
import { bloomHashRange } from "./bloom.js";
import {
  type BuilderMemory,
  giveBuilderMemory,
  takeBuilderMemory,
  WRITE_BUFFER_BYTES,
} from "./builder-memory.js";
import {
  BLOCK_TRAILER_SIZE,
  type BlockHandle,
  COMPRESSION_NONE,
  type CompressionType,
  encodeFooter,
  TABLE_FORMAT_VERSION,
  writeBlockTrailer,
} from "./format.js";
import { compareInternalRange, type KeyBuffer, putTrailer } from "./key-bytes.js";
import { encodeProperties, type TableProperties } from "./properties.js";
import {
  type ResolvedTableOptions,
  resolveTableOptions,
  type TableOptions,
} from "./table-options.js";

export type { TableOptions } from "./table-options.js";

/** What `finish` returns: the properties stored in the table, and the file's size. */
export type TableBuildResult = TableProperties & { readonly fileSize: number };

/** Blocks must fit the 32-bit size field of the footer. */
const MAX_BLOCK_SIZE = 0xffff_ffff;

type State = "building" | "finished" | "abandoned" | "failed";

function userKeyOf(k: KeyBuffer): Uint8Array {
  return k.bytes.subarray(0, k.length - INTERNAL_KEY_TRAILER);
}

function seqOf(k: KeyBuffer): number {
  const b = k.bytes;
  const o = k.length - 7;
  const lo = (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
  return (b[o + 4]! | (b[o + 5]! << 8) | (b[o + 6]! << 16)) * 0x1_0000_0000 + lo;
}

export class TableBuilder {
  private readonly opts: ResolvedTableOptions;
  /** Working memory, given back (and not touched again) at finish or abandon. */
  private mem: BuilderMemory | undefined;
  private readonly dataBlock: BlockBuilder;
  private readonly indexBlock: BlockBuilder;
  private readonly bloom: BloomFilterBuilder | undefined;
  /** Encoded internal key of the last entry added. */
  private last: KeyBuffer;
  /** Scratch for the entry being added (swapped with `last`). */
  private cur: KeyBuffer;
  /** Scratch for index keys. */
  private readonly indexKey: KeyBuffer;
  private readonly handleBuf = new Uint8Array(20);
  /** Framed blocks not yet appended: writeBuffer[0, writeLength). */
  private readonly writeBuffer: Uint8Array;
  private writeLength = 0;
  /** File offset of the next block. */
  private offset: number;
  /** A data block was written and its index entry waits for the next key (separator). */
  private pendingIndex = false;
  private pendingOffset = 0;
  private pendingSize = 0;
  private state: State = "building";

  private entryCount = 0;
  private tombstones = 0;
  private rawKeyBytes = 0;
  private rawValueBytes = 0;
  private smallestSeq = 0;
  private largestSeq = 0;
  private smallestKey: Uint8Array = new Uint8Array(0);
  private smallestKeySeq = 0;
  private dataBlocks = 0;
  private compressedDataBlocks = 0;

  /** Writes the table from the file's current size on (normally a new, empty file). */
  constructor(
    readonly file: WritableFile,
    options?: TableOptions,
  ) {
    this.opts = resolveTableOptions(options);
    this.offset = file.size;
    const mem = takeBuilderMemory(this.opts.restartInterval, this.opts.bloomBitsPerKey);
    this.mem = mem;
    this.dataBlock = mem.dataBlock;
    this.indexBlock = mem.indexBlock;
    this.bloom = mem.bloom;
    this.last = mem.last;
    this.cur = mem.cur;
    this.indexKey = mem.indexKey;
    this.writeBuffer = mem.writeBuffer;
  }

  /** Entries added so far. */
  get entries(): number {
    return this.entryCount;
  }

  /**
   * Bytes written so far plus the block being filled (uncompressed): what the file would
   * about measure if finished now, without filter, properties, index and footer.
   */
  get estimatedSize(): number {
    if (this.mem === undefined || this.dataBlock.empty) return this.offset;
    return this.offset + this.dataBlock.estimatedSize;
  }

  /**
   * Adds an entry. REQUIRES strictly increasing internal-key order: user key ascending,
   * then sequence descending, then kind descending (throws INVALID_ARGUMENT otherwise, and
   * for a sequence outside [0, MAX_SEQUENCE] or an unknown kind). Copies key and value.
   */
  add(key: Uint8Array, seq: number, kind: ValueKind, value: Uint8Array): void {
    this.addFrom(key, 0, key.length, seq, kind, value, 0, value.length);
  }

  /**
   * `add` of the user key keySrc[keyStart, keyStart + keyLength) and the value
   * valueSrc[valueStart, valueStart + valueLength): the same table bytes, without views of
   * the ranges (a flush adds its entries straight from the memtable's arena chunks).
   */
  addFrom(
    keySrc: Uint8Array,
    keyStart: number,
    keyLength: number,
    seq: number,
    kind: ValueKind,
    valueSrc: Uint8Array,
    valueStart: number,
    valueLength: number,
  ): void {
    if (this.state !== "building") this.checkBuilding("add");
    if (!Number.isSafeInteger(seq) || seq < 0 || seq > MAX_SEQUENCE) {
      throw new KvError("INVALID_ARGUMENT", `table add: bad sequence number ${seq}`);
    }
    if (kind !== KIND_PUT && kind !== KIND_DELETE) {
      throw new KvError("INVALID_ARGUMENT", `table add: unknown kind ${String(kind)}`);
    }
    const last = this.last;
    const kn = keyLength;
    // One scan decides the order check, whether the user key is new, and the prefix the
    // data block shares with the previous key. Keys that differ before the shorter one ends
    // (every new user key but a prefix extension) take this path; the rest, addSlow.
    let shared = 0;
    if (this.entryCount > 0) {
      const lb = last.bytes;
      const ln = last.length - INTERNAL_KEY_TRAILER;
      const n = kn < ln ? kn : ln;
      while (shared < n && lb[shared] === keySrc[keyStart + shared]) shared++;
      if (shared === n) {
        this.addSlow(keySrc, keyStart, kn, seq, kind, valueSrc, valueStart, valueLength);
        return;
      }
      if (keySrc[keyStart + shared]! < lb[shared]!) {
        this.throwOutOfOrder(keySrc.subarray(keyStart, keyStart + kn), seq, kind);
      }
    }
    if (this.pendingIndex) {
      this.cur.setInternalFrom(keySrc, keyStart, kn, seq, kind);
      this.separator(last, this.cur);
      this.addIndexEntry();
    }
    this.bloom?.addHash(bloomHashRange(keySrc, keyStart, kn));
    // last := the internal key of this entry; its first `shared` bytes are already there.
    last.reserve(kn + INTERNAL_KEY_TRAILER, shared);
    const lb = last.bytes;
    for (let i = shared; i < kn; i++) lb[i] = keySrc[keyStart + i]!;
    putTrailer(lb, kn, seq, kind);
    last.length = kn + INTERNAL_KEY_TRAILER;
    this.dataBlock.addShared(lb, last.length, shared, valueSrc, valueStart, valueLength);
    this.added(lb, kn, seq, kind, valueLength);
  }

  /**
   * `addFrom` for a key whose user key equals the previous one or extends it: compares
   * whole internal keys (the trailer decides), and the shared prefix may reach into the
   * trailer.
   */
  private addSlow(
    keySrc: Uint8Array,
    keyStart: number,
    kn: number,
    seq: number,
    kind: ValueKind,
    valueSrc: Uint8Array,
    valueStart: number,
    valueLength: number,
  ): void {
    const cur = this.cur;
    const last = this.last;
    cur.setInternalFrom(keySrc, keyStart, kn, seq, kind);
    const c = compareInternalRange(cur.bytes, 0, cur.length, last.bytes, 0, last.length);
    if (c <= 0) this.throwOutOfOrder(keySrc.subarray(keyStart, keyStart + kn), seq, kind);
    const newUserKey = last.length !== cur.length;
    if (this.pendingIndex) {
      this.separator(last, cur);
      this.addIndexEntry();
    }
    if (newUserKey) this.bloom?.addHash(bloomHashRange(keySrc, keyStart, kn));
    const a = cur.bytes;
    const b = last.bytes;
    const n = cur.length < last.length ? cur.length : last.length;
    let shared = 0;
    while (shared < n && a[shared] === b[shared]) shared++;
    this.cur = last;
    this.last = cur;
    this.dataBlock.addShared(cur.bytes, cur.length, shared, valueSrc, valueStart, valueLength);
    this.added(cur.bytes, kn, seq, kind, valueLength);
  }

  /**
   * Bookkeeping after an entry went into the data block (its user key is key[0, kn), the
   * encoded `last`); cuts the block when full.
   */
  private added(key: Uint8Array, kn: number, seq: number, kind: ValueKind, vn: number): void {
    if (this.entryCount === 0) {
      this.smallestKey = key.slice(0, kn);
      this.smallestKeySeq = seq;
      this.smallestSeq = seq;
      this.largestSeq = seq;
    } else {
      if (seq < this.smallestSeq) this.smallestSeq = seq;
      if (seq > this.largestSeq) this.largestSeq = seq;
    }
    this.entryCount++;
    if (kind === KIND_DELETE) this.tombstones++;
    this.rawKeyBytes += kn;
    this.rawValueBytes += vn;
    if (this.dataBlock.estimatedSize >= this.opts.blockSize) this.flushDataBlock();
  }

  private throwOutOfOrder(key: Uint8Array, seq: number, kind: ValueKind): never {
    const last = this.last;
    throw new KvError(
      "INVALID_ARGUMENT",
      `table add: ${formatInternalKey(key, seq, kind)} is not after ` +
        `${formatInternalKey(userKeyOf(last), seqOf(last), last.bytes[last.length - INTERNAL_KEY_TRAILER]!)}` +
        ` in internal-key order`,
    );
  }

  /**
   * Writes the last data block, the filter, properties and index blocks and the footer.
   * Returns the stored properties and the file size. Does not sync or close the file.
   */
  finish(): TableBuildResult {
    this.checkBuilding("finish");
    try {
      if (!this.dataBlock.empty) this.flushDataBlock();
      if (this.pendingIndex) {
        this.successor(this.last);
        this.addIndexEntry();
      }
      const filter: BlockHandle =
        this.bloom === undefined ? { offset: 0, size: 0 } : this.writeBlock(this.filter(), false);
      const last = this.last;
      const properties: TableProperties = {
        formatVersion: TABLE_FORMAT_VERSION,
        entries: this.entryCount,
        tombstones: this.tombstones,
        smallestKey: this.smallestKey,
        smallestKeySeq: this.smallestKeySeq,
        largestKey: this.entryCount > 0 ? userKeyOf(last).slice() : new Uint8Array(0),
        largestKeySeq: this.entryCount > 0 ? seqOf(last) : 0,
        smallestSeq: this.smallestSeq,
        largestSeq: this.largestSeq,
        rawKeyBytes: this.rawKeyBytes,
        rawValueBytes: this.rawValueBytes,
        dataBlocks: this.dataBlocks,
        compressedDataBlocks: this.compressedDataBlocks,
        compression: this.opts.compression,
      };
      const props = this.writeBlock(encodeProperties(properties), false);
      const index = this.writeBlock(this.indexBlock.finish(), false);
      const footer = encodeFooter({
        index,
        filter,
        properties: props,
        formatVersion: TABLE_FORMAT_VERSION,
      });
      if (this.writeLength + footer.length > WRITE_BUFFER_BYTES) this.flushWrites();
      this.writeBuffer.set(footer, this.writeLength);
      this.writeLength += footer.length;
      this.flushWrites();
      this.offset += footer.length;
      this.state = "finished";
      this.releaseMemory();
      return { ...properties, fileSize: this.offset };
    } catch (err) {
      this.state = "failed";
      throw err;
    }
  }

  /** Gives up on the table: nothing more is written. The caller deletes the file. */
  abandon(): void {
    if (this.state === "finished") throw new Error("TableBuilder.abandon after finish");
    this.state = "abandoned";
    this.releaseMemory();
  }

  /** Gives the working memory back to the thread's free list (once). */
  private releaseMemory(): void {
    const mem = this.mem;
    if (mem === undefined) return;
    this.mem = undefined;
    // addSlow swaps the two key buffers.
    mem.last = this.last;
    mem.cur = this.cur;
    giveBuilderMemory(mem);
  }

  /** The filter block's bytes, built in the memory's filter buffer (grown as needed). */
  private filter(): Uint8Array {
    const bloom = this.bloom!;
    const mem = this.mem!;
    const need = bloom.filterBytes;
    if (mem.filter.length < need) mem.filter = new Uint8Array(need + (need >>> 2));
    return bloom.finish(mem.filter);
  }

  private checkBuilding(what: string): void {
    if (this.state !== "building") {
      throw new Error(`TableBuilder.${what} after the table was ${this.state}`);
    }
  }

  private flushDataBlock(): void {
    const handle = this.writeBlock(this.dataBlock.finish(), true);
    this.dataBlock.reset();
    this.dataBlocks++;
    this.pendingIndex = true;
    this.pendingOffset = handle.offset;
    this.pendingSize = handle.size;
  }

  /** Adds the index entry (indexKey -> pending handle). */
  private addIndexEntry(): void {
    let o = putVarint(this.handleBuf, 0, this.pendingOffset);
    o = putVarint(this.handleBuf, o, this.pendingSize);
    this.indexBlock.add(this.indexKey.view(), this.handleBuf.subarray(0, o));
    this.pendingIndex = false;
  }

  /**
   * Sets indexKey to a short key k with start <= k < limit (LevelDB's
   * FindShortestSeparator): when the user keys differ at byte i and start[i] + 1 <
   * limit[i], the user key start[0, i] ‖ start[i] + 1 with the trailer (MAX_SEQUENCE, PUT),
   * the smallest internal key of that user key; else start itself.
   */
  private separator(start: KeyBuffer, limit: KeyBuffer): void {
    const s = start.bytes;
    const l = limit.bytes;
    const sLen = start.length - INTERNAL_KEY_TRAILER;
    const lLen = limit.length - INTERNAL_KEY_TRAILER;
    const n = sLen < lLen ? sLen : lLen;
    let i = 0;
    while (i < n && s[i] === l[i]) i++;
    if (i < n) {
      const b = s[i]!;
      if (b < 0xff && b + 1 < l[i]! && i + 1 < sLen) {
        this.shortened(s, i);
        return;
      }
    }
    this.indexKey.setBytes(s, 0, start.length);
  }

  /**
   * Sets indexKey to a short key >= every key with start's user key (LevelDB's
   * FindShortSuccessor): the user key cut after its first byte below 0xff, that byte plus
   * one, with the trailer (MAX_SEQUENCE, PUT); else start itself.
   */
  private successor(start: KeyBuffer): void {
    const s = start.bytes;
    const sLen = start.length - INTERNAL_KEY_TRAILER;
    for (let i = 0; i < sLen; i++) {
      if (s[i] !== 0xff) {
        if (i + 1 < sLen) {
          this.shortened(s, i);
          return;
        }
        break;
      }
    }
    this.indexKey.setBytes(s, 0, start.length);
  }

  /** indexKey = s[0, i) ‖ s[i] + 1 ‖ trailer(MAX_SEQUENCE, PUT). */
  private shortened(s: Uint8Array, i: number): void {
    const k = this.indexKey;
    k.reserve(i + 1 + INTERNAL_KEY_TRAILER, 0);
    k.bytes.set(s.subarray(0, i + 1));
    k.bytes[i] = s[i]! + 1;
    putTrailer(k.bytes, i + 1, MAX_SEQUENCE, KIND_PUT);
    k.length = i + 1 + INTERNAL_KEY_TRAILER;
  }

  /**
   * Appends contents with its trailer; data blocks (`compressible`) are compressed first
   * when compression is on and it saves at least 1/8 of the bytes (block-codec.ts).
   */
  private writeBlock(contents: Uint8Array, compressible: boolean): BlockHandle {
    let body = contents;
    let type: CompressionType = COMPRESSION_NONE;
    const codec = this.opts.compression;
    if (compressible && codec !== "none") {
      const compressed = compressBlock(codec, contents);
      if (compressed !== undefined) {
        body = compressed;
        type = COMPRESSION_TYPE_OF[codec];
        this.compressedDataBlocks++;
      }
    }
    const n = body.length;
    if (n > MAX_BLOCK_SIZE) {
      throw new KvError("INVALID_ARGUMENT", `table block of ${n} bytes exceeds 4 GiB`);
    }
    const framed = n + BLOCK_TRAILER_SIZE;
    if (this.writeLength + framed > WRITE_BUFFER_BYTES) this.flushWrites();
    if (framed <= WRITE_BUFFER_BYTES) {
      const frame = this.writeBuffer.subarray(this.writeLength, this.writeLength + framed);
      frame.set(body);
      writeBlockTrailer(frame, n, type);
      this.writeLength += framed;
    } else {
      const mem = this.mem!;
      if (mem.frame.length < framed) {
        mem.frame = new Uint8Array(Math.max(framed, mem.frame.length * 2));
      }
      const frame = mem.frame;
      frame.set(body);
      writeBlockTrailer(frame, n, type);
      this.append(frame.subarray(0, framed));
    }
    const handle = { offset: this.offset, size: n };
    this.offset += n + BLOCK_TRAILER_SIZE;
    return handle;
  }

  /** Appends the gathered blocks. */
  private flushWrites(): void {
    if (this.writeLength === 0) return;
    const n = this.writeLength;
    this.writeLength = 0;
    this.append(this.writeBuffer.subarray(0, n));
  }

  private append(bytes: Uint8Array): void {
    try {
      this.file.append(bytes);
    } catch (err) {
      this.state = "failed";
      throw ioError("write table", err, this.file.path);
    }
  }
}
