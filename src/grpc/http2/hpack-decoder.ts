/**
 * HPACK decoding (RFC 7541) of the header blocks a client sends: the decoder's half of the
 * connection's compression state (the dynamic table), fed one complete header block at a
 * time, in the order the blocks arrived.
 *
 * Contract:
 * - `decode` appends the block's fields to `out` as alternating names and values (latin1
 *   strings: one char per octet) and returns DECODED, OVERSIZED or FAILED.
 * - OVERSIZED: the decoded list (RFC 9113's size: name + value + 32 per field) exceeds
 *   `maxListSize`. The block is still decoded to its end, so the dynamic table stays in
 *   step with the peer's, but fields past the limit are not materialized (a block can
 *   reference a large table entry many times; the work is bounded by the block's size).
 * - FAILED: the block is not valid HPACK (a COMPRESSION_ERROR, fatal to the connection:
 *   the table may be out of step). The decoder must not be used again.
 * - A dynamic table size update is accepted only at the start of a block and only up to
 *   `maxTableSize` (the SETTINGS_HEADER_TABLE_SIZE this side advertised).
 */
import { huffmanDecode } from "./hpack-huffman.js";
import { STATIC_TABLE, STATIC_TABLE_LENGTH } from "./hpack-static-table.js";

export const DECODED = 0;
export const OVERSIZED = 1;
export const FAILED = 2;
export type DecodeResult = typeof DECODED | typeof OVERSIZED | typeof FAILED;

/** Per-entry overhead of the table size (RFC 7541, section 4.1). */
const ENTRY_OVERHEAD = 32;
/** Integers beyond this are refused (no legitimate length or index comes near). */
const MAX_INTEGER = 2 ** 28;

/** The cursor between blocks (one shared empty array, not one per decoded block). */
const NO_BLOCK = new Uint8Array(0);

export class HpackDecoder {
  /** Dynamic table as a ring: the newest entry at `head`, older ones after it. */
  private names: string[];
  private values: string[];
  private head = 0;
  private count = 0;
  private size = 0;
  /** The current maximum size (as last set by a size update), at most maxTableSize. */
  private capacity: number;
  // Cursor over the block being decoded.
  private buf: Uint8Array = NO_BLOCK;
  private at = 0;
  private end = 0;

  constructor(readonly maxTableSize = 4096) {
    this.capacity = maxTableSize;
    const slots = Math.floor(maxTableSize / ENTRY_OVERHEAD) + 1;
    this.names = new Array<string>(slots).fill("");
    this.values = new Array<string>(slots).fill("");
  }

  /** Entries in the dynamic table (for tests). */
  get tableLength(): number {
    return this.count;
  }

  decode(
    block: Uint8Array,
    start: number,
    end: number,
    out: string[],
    maxListSize: number,
  ): DecodeResult {
    this.buf = block;
    this.at = start;
    this.end = end;
    let listSize = 0;
    let sawField = false;
    while (this.at < this.end) {
      const first = block[this.at]!;
      let name: string;
      let value: string;
      if (first >= 0x80) {
        const index = this.integer(7);
        if (index <= 0) return FAILED;
        const nameOf = this.nameAt(index);
        if (nameOf === undefined) return FAILED;
        name = nameOf;
        value = this.valueAt(index);
      } else if (first >= 0x40 || first < 0x20) {
        // 01: incremental indexing (6-bit index); 0001 / 0000: never / without (4-bit).
        const indexing = first >= 0x40;
        const index = this.integer(indexing ? 6 : 4);
        if (index < 0) return FAILED;
        if (index === 0) {
          const literal = this.string();
          if (literal === undefined) return FAILED;
          name = literal;
        } else {
          const nameOf = this.nameAt(index);
          if (nameOf === undefined) return FAILED;
          name = nameOf;
        }
        const literal = this.string();
        if (literal === undefined) return FAILED;
        value = literal;
        if (indexing) this.insert(name, value);
      } else {
        // 001: dynamic table size update, only before the first field of a block.
        if (sawField) return FAILED;
        const size = this.integer(5);
        if (size < 0 || size > this.maxTableSize) return FAILED;
        this.capacity = size;
        this.evictTo(size);
        continue;
      }
      sawField = true;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize <= maxListSize) out.push(name, value);
    }
    this.buf = NO_BLOCK;
    return listSize > maxListSize ? OVERSIZED : DECODED;
  }

  /** An integer with an n-bit prefix (RFC 7541, 5.1); -1 when truncated or too large. */
  private integer(prefixBits: number): number {
    const mask = (1 << prefixBits) - 1;
    let value = this.buf[this.at++]! & mask;
    if (value < mask) return value;
    let scale = 1;
    for (;;) {
      if (this.at >= this.end) return -1;
      const b = this.buf[this.at++]!;
      value += (b & 0x7f) * scale;
      if (value > MAX_INTEGER) return -1;
      if (b < 0x80) return value;
      scale *= 128;
    }
  }

  /** A string literal (RFC 7541, 5.2); undefined when truncated or badly coded. */
  private string(): string | undefined {
    if (this.at >= this.end) return undefined;
    const huffman = this.buf[this.at]! >= 0x80;
    const length = this.integer(7);
    if (length < 0 || length > this.end - this.at) return undefined;
    const start = this.at;
    this.at += length;
    if (huffman) return huffmanDecode(this.buf, start, this.at);
    return latin1(this.buf, start, this.at);
  }

  private nameAt(index: number): string | undefined {
    if (index <= STATIC_TABLE_LENGTH) return STATIC_TABLE[index]![0];
    const i = index - STATIC_TABLE_LENGTH - 1;
    if (i >= this.count) return undefined;
    return this.names[(this.head + i) % this.names.length]!;
  }

  /** REQUIRES: nameAt(index) !== undefined. */
  private valueAt(index: number): string {
    if (index <= STATIC_TABLE_LENGTH) return STATIC_TABLE[index]![1];
    return this.values[(this.head + index - STATIC_TABLE_LENGTH - 1) % this.values.length]!;
  }

  private insert(name: string, value: string): void {
    const entrySize = name.length + value.length + ENTRY_OVERHEAD;
    if (entrySize > this.capacity) {
      // An entry larger than the table empties it and is not added (RFC 7541, 4.4).
      this.evictTo(0);
      return;
    }
    this.evictTo(this.capacity - entrySize);
    const slots = this.names.length;
    this.head = (this.head + slots - 1) % slots;
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.count++;
    this.size += entrySize;
  }

  private evictTo(limit: number): void {
    const slots = this.names.length;
    while (this.size > limit && this.count > 0) {
      const last = (this.head + this.count - 1) % slots;
      this.size -= this.names[last]!.length + this.values[last]!.length + ENTRY_OVERHEAD;
      this.names[last] = "";
      this.values[last] = "";
      this.count--;
    }
  }
}

function latin1(buf: Uint8Array, start: number, end: number): string {
  if (end - start < 32) {
    let s = "";
    for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]!);
    return s;
  }
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("latin1");
}
