/**
 * MemtableEntry, what `Memtable.get` and a memtable iterator's `entry` hand out, and
 * ArenaEntry, its implementation over the arena (arena.ts).
 */
import type { ValueKind } from "../key/internal-key.js";
import { kindAt, valueLengthAt } from "./arena.js";

/**
 * A read-only view of one memtable entry. `key` and `value` are views of the memtable's
 * arena: their bytes do not change until the memtable's last reference goes (the arena is
 * append-only; see Memtable.unref). Callers must not write to them.
 */
export interface MemtableEntry {
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;
}

/**
 * A snapshot of where an entry lies in the arena. The key and value views are made on
 * first access and then kept.
 */
export class ArenaEntry implements MemtableEntry {
  readonly seq: number;
  readonly kind: ValueKind;
  private readonly buffer: ArrayBufferLike;
  private readonly keyStart: number;
  private readonly keyLen: number;
  private readonly valueLen: number;
  private keyView: Uint8Array | null = null;
  private valueView: Uint8Array | null = null;

  /** The entry whose key is at `keyStart` of `chunk` (whose buffer is `buffer`). */
  constructor(
    chunk: Uint8Array,
    buffer: ArrayBufferLike,
    keyStart: number,
    keyLen: number,
    seq: number,
  ) {
    this.seq = seq;
    this.kind = kindAt(chunk, keyStart);
    this.buffer = buffer;
    this.keyStart = keyStart;
    this.keyLen = keyLen;
    this.valueLen = valueLengthAt(chunk, keyStart);
  }

  get key(): Uint8Array {
    if (this.keyView === null)
      this.keyView = new Uint8Array(this.buffer, this.keyStart, this.keyLen);
    return this.keyView;
  }

  get value(): Uint8Array {
    if (this.valueView === null) {
      this.valueView = new Uint8Array(this.buffer, this.keyStart + this.keyLen, this.valueLen);
    }
    return this.valueView;
  }
}
