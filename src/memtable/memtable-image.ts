/**
 * A memtable image: a memtable's entries in internal-key order as plain data that can
 * cross to a worker thread (made by Memtable.image, written there as a level-0 table), and
 * MemtableImageIterator, a forward cursor over one that gives a table writer each entry as
 * ranges of an arena chunk.
 *
 * Entry i is at arena position positions[i] (see arena.ts: chunk index and offset, the
 * layout [kind][value length][key][value]) in buffers[chunk index], its key keyLengths[i]
 * bytes long, its sequence seqs[i]. All of it is shared memory: the chunks are the arena's
 * SharedArrayBuffers, and the three index arrays view one shared buffer from the arena
 * pool (16 bytes per entry), so postMessage shares them without a copy. An image is valid
 * while its memtable is referenced (a released arena's buffers are reused).
 */
import { KIND_PUT, type ValueKind } from "../key/internal-key.js";
import { chunkIndexOf, keyStartOf, kindAt, NO_BYTES, valueLengthAt } from "./arena.js";
import type { Tree } from "./btree.js";

export interface MemtableImage {
  readonly buffers: ArrayBufferLike[];
  readonly positions: Int32Array;
  readonly keyLengths: Int32Array;
  readonly seqs: Float64Array;
}

/** Bytes per entry of an image's index: seq (float64), position and key length (int32). */
const IMAGE_ENTRY_BYTES = 16;
/**
 * Image index buffers are whole multiples of this, so that memtables of about the same
 * number of entries reuse each other's from the pool (which matches exact sizes).
 */
const IMAGE_BUFFER_UNIT = 64 << 10;

/**
 * The image of `tree`, which holds `count` entries. REQUIRES the tree receives no insert
 * while the image is in use (the image does not follow later adds).
 */
export function makeImage(tree: Tree, count: number): MemtableImage {
  const n = count;
  const bytes =
    Math.max(1, Math.ceil((n * IMAGE_ENTRY_BYTES) / IMAGE_BUFFER_UNIT)) * IMAGE_BUFFER_UNIT;
  const buffer = tree.arena.imageBuffer(bytes);
  const seqs = new Float64Array(buffer, 0, n);
  const positions = new Int32Array(buffer, 8 * n, n);
  const keyLengths = new Int32Array(buffer, 12 * n, n);
  const at = tree.fillImage(seqs, positions, keyLengths);
  if (at !== n) throw new Error(`memtable image: ${at} entries in the leaves, ${n} counted`);
  return { buffers: [...tree.arena.buffers], positions, keyLengths, seqs };
}

/**
 * A forward cursor over an image. At each valid position the current entry is described by
 * plain fields, so that a table writer copies its bytes straight from the arena chunk
 * without a view per entry: the key is bytes[keyStart, keyStart + keyLength), the value
 * bytes[valueStart, valueStart + valueLength). `key` and `value` make such views (for
 * callers that want them).
 */
export class MemtableImageIterator {
  private readonly chunks: Uint8Array[];
  private at = 0;
  // The current entry (set on every move; meaningless when not valid()). `bytes` is the
  // arena chunk holding it.
  bytes: Uint8Array = NO_BYTES;
  keyStart = 0;
  keyLength = 0;
  valueStart = 0;
  valueLength = 0;
  seq = 0;
  kind: ValueKind = KIND_PUT;

  constructor(private readonly image: MemtableImage) {
    this.chunks = image.buffers.map((b) => new Uint8Array(b));
    this.load();
  }

  valid(): boolean {
    return this.at < this.image.positions.length;
  }

  seekToFirst(): void {
    this.at = 0;
    this.load();
  }

  /** REQUIRES valid(). */
  next(): void {
    this.at++;
    this.load();
  }

  get key(): Uint8Array {
    return this.bytes.subarray(this.keyStart, this.keyStart + this.keyLength);
  }

  get value(): Uint8Array {
    return this.bytes.subarray(this.valueStart, this.valueStart + this.valueLength);
  }

  /** Sets the fields to the entry at `at`, if there is one. */
  private load(): void {
    const at = this.at;
    const image = this.image;
    if (at >= image.positions.length) return;
    const pos = image.positions[at]!;
    const chunk = this.chunks[chunkIndexOf(pos)]!;
    const keyStart = keyStartOf(pos);
    const keyLength = image.keyLengths[at]!;
    this.bytes = chunk;
    this.keyStart = keyStart;
    this.keyLength = keyLength;
    this.valueStart = keyStart + keyLength;
    this.valueLength = valueLengthAt(chunk, keyStart);
    this.seq = image.seqs[at]!;
    this.kind = kindAt(chunk, keyStart);
  }
}
