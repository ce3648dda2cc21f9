/**
 * TableIterator: the two-level iterator over a table: a position in the table's index
 * (which data block) and a BlockIterator over that block. Forward and reverse; a block
 * with no entry in the wanted direction is skipped to the next (or previous) block.
 *
 * Blocks come from the table's BlockSource: the block cache or a read from the file (a
 * scan may ask not to fill the cache). Errors (CORRUPTION, IO_ERROR) leave the iterator
 * invalid and are thrown from the positioning call.
 *
 * `key` is a view valid until the iterator moves (InternalIterator contract); `value` is a
 * view of an immutable block and stays valid as long as the caller keeps it.
 */
import type { InternalIterator } from "../key/internal-iterator.js";
import { KIND_DELETE, KIND_PUT, type ValueKind } from "../key/internal-key.js";
import { type Block, BlockIterator } from "./block.js";
import { compareInternalRange, KeyBuffer } from "./key-bytes.js";
import type { TableIndex } from "./table-index.js";

/** Where a TableIterator gets its index and data blocks (a TableReader). */
export interface BlockSource {
  readonly index: TableIndex;
  /** Data block i (0 <= i < index.count); with fillCache false a miss is not cached. */
  dataBlock(i: number, fillCache: boolean): Block;
}

export class TableIterator implements InternalIterator {
  private readonly data = new BlockIterator();
  /** Index of the data block `data` is on; -1 for none. */
  private blockIndex = -1;
  private readonly target = new KeyBuffer();
  private closed = false;

  /** onClose runs once, at the first `close()`. */
  constructor(
    private readonly source: BlockSource,
    private readonly fillCache = true,
    private readonly onClose?: () => void,
  ) {}

  valid(): boolean {
    return this.data.valid();
  }

  seekToFirst(): void {
    if (!this.loadBlock(0)) return;
    this.data.seekToFirst();
    this.skipEmptyForward();
  }

  seekToLast(): void {
    if (!this.loadBlock(this.source.index.count - 1)) return;
    this.data.seekToLast();
    this.skipEmptyBackward();
  }

  seek(key: Uint8Array, seq: number): void {
    const t = this.target;
    t.setInternal(key, seq, KIND_PUT);
    this.seekEncoded(t.bytes, t.length);
  }

  seekForPrev(key: Uint8Array, seq: number): void {
    const t = this.target;
    t.setInternal(key, seq, KIND_DELETE);
    this.seekEncoded(t.bytes, t.length);
    if (!this.valid()) {
      this.seekToLast();
    } else if (
      compareInternalRange(this.data.keyBytes, 0, this.data.keyLength, t.bytes, 0, t.length) > 0
    ) {
      this.prev();
    }
  }

  /** Positions on the first entry >= the encoded internal key target[0, tlen). */
  seekEncoded(target: Uint8Array, tlen: number): void {
    if (!this.loadBlock(this.source.index.findFirstGE(target, tlen))) return;
    this.data.seekEncoded(target, tlen);
    this.skipEmptyForward();
  }

  next(): void {
    this.data.next();
    this.skipEmptyForward();
  }

  prev(): void {
    this.data.prev();
    this.skipEmptyBackward();
  }

  get key(): Uint8Array {
    return this.data.key;
  }

  get seq(): number {
    return this.data.seq;
  }

  get kind(): ValueKind {
    return this.data.kind;
  }

  get value(): Uint8Array {
    return this.data.value;
  }

  /** Encoded internal key of the current entry (a view valid until the iterator moves). */
  get internalKey(): Uint8Array {
    return this.data.internalKey;
  }

  close(): void {
    this.data.reset();
    this.blockIndex = -1;
    if (!this.closed) {
      this.closed = true;
      this.onClose?.();
    }
  }

  /** Puts `data` on block i (invalid); false, with nothing loaded, when i is out of range. */
  private loadBlock(i: number): boolean {
    if (this.closed) throw new Error("TableIterator used after close");
    if (i < 0 || i >= this.source.index.count) {
      this.data.reset();
      this.blockIndex = -1;
      return false;
    }
    if (i !== this.blockIndex) {
      try {
        this.data.reset(this.source.dataBlock(i, this.fillCache));
      } catch (err) {
        this.data.reset();
        this.blockIndex = -1;
        throw err;
      }
      this.blockIndex = i;
    }
    return true;
  }

  private skipEmptyForward(): void {
    while (!this.data.valid()) {
      if (!this.loadBlock(this.blockIndex + 1)) return;
      this.data.seekToFirst();
    }
  }

  private skipEmptyBackward(): void {
    while (!this.data.valid()) {
      if (this.blockIndex <= 0 || !this.loadBlock(this.blockIndex - 1)) {
        this.data.reset();
        this.blockIndex = -1;
        return;
      }
      this.data.seekToLast();
    }
  }
}
