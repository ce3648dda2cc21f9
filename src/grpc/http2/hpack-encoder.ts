/**
 * HPACK encoding of the header blocks the server sends, without a dynamic table: every
 * field is an indexed static entry or a literal "without indexing" (RFC 7541, 6.1 and
 * 6.2.2), its name indexed when the static table has it, strings raw (no Huffman). So the
 * encoder keeps no state that the peer's decoder must follow, and a block's bytes depend
 * only on its fields: the blocks every call sends (response headers, an OK status) are
 * encoded once.
 *
 * `tableSizeUpdate()` is the one-octet "dynamic table size update to 0" (RFC 7541, 6.3): a
 * connection puts it at the start of its first block and of the first block after the peer
 * changed SETTINGS_HEADER_TABLE_SIZE, which a decoder may require even from an encoder that
 * never uses the table.
 *
 * Names must be lowercase; names and values are latin1 strings (one char per octet) and
 * must not contain CR, LF or NUL (callers validate metadata before it gets here).
 */
import { STATIC_NAME_INDEX, STATIC_TABLE } from "./hpack-static-table.js";

export class HeaderBlockBuilder {
  private bytes: number[] = [];

  /** Appends `name: value` (an indexed entry when the static table has exactly that pair). */
  add(name: string, value: string): this {
    const index = STATIC_NAME_INDEX.get(name);
    if (index !== undefined) {
      for (let i = index; i < STATIC_TABLE.length && STATIC_TABLE[i]![0] === name; i++) {
        if (STATIC_TABLE[i]![1] === value) {
          this.integer(0x80, 7, i);
          return this;
        }
      }
      this.integer(0x00, 4, index);
    } else {
      this.bytes.push(0x00);
      this.string(name);
    }
    this.string(value);
    return this;
  }

  /** The block so far. */
  finish(): Buffer {
    return Buffer.from(this.bytes);
  }

  private integer(firstBits: number, prefixBits: number, value: number): void {
    const max = (1 << prefixBits) - 1;
    if (value < max) {
      this.bytes.push(firstBits | value);
      return;
    }
    this.bytes.push(firstBits | max);
    let rest = value - max;
    while (rest >= 0x80) {
      this.bytes.push((rest & 0x7f) | 0x80);
      rest = Math.floor(rest / 128);
    }
    this.bytes.push(rest);
  }

  private string(s: string): void {
    this.integer(0x00, 7, s.length);
    for (let i = 0; i < s.length; i++) this.bytes.push(s.charCodeAt(i) & 0xff);
  }
}

/** A block holding `fields` ([name, value] pairs, in order). */
export function encodeHeaderBlock(fields: Iterable<readonly [string, string]>): Buffer {
  const b = new HeaderBlockBuilder();
  for (const [name, value] of fields) b.add(name, value);
  return b.finish();
}

const TABLE_SIZE_UPDATE = Buffer.from([0x20]);

/** A dynamic table size update to 0 (see the module comment). */
export function tableSizeUpdate(): Buffer {
  return TABLE_SIZE_UPDATE;
}
