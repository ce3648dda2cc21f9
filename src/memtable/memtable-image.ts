/**
 * MemtableImageIterator: a forward cursor over a MemtableImage (memtable.ts), with the
 * accessors a table writer needs. It runs wherever the image is, typically on the
 * compaction worker thread building a flush's level-0 table. Keys and values are views of
 * the image's buffers, valid for as long as the image is.
 */
import type { ValueKind } from "../key/internal-key.js";
import {
  imageChunkIndex,
  imageKeyStart,
  imageValueLength,
  type MemtableImage,
} from "./memtable.js";

export class MemtableImageIterator {
  private readonly chunks: Uint8Array[];
  private at = 0;

  constructor(private readonly image: MemtableImage) {
    this.chunks = image.buffers.map((b) => new Uint8Array(b));
  }

  valid(): boolean {
    return this.at < this.image.positions.length;
  }

  seekToFirst(): void {
    this.at = 0;
  }

  /** REQUIRES valid(). */
  next(): void {
    this.at++;
  }

  get key(): Uint8Array {
    const pos = this.image.positions[this.at]!;
    const chunk = this.chunks[imageChunkIndex(pos)]!;
    const start = imageKeyStart(pos);
    return chunk.subarray(start, start + this.image.keyLengths[this.at]!);
  }

  get seq(): number {
    return this.image.seqs[this.at]!;
  }

  get kind(): ValueKind {
    const pos = this.image.positions[this.at]!;
    return this.chunks[imageChunkIndex(pos)]![imageKeyStart(pos) - 5] as ValueKind;
  }

  get value(): Uint8Array {
    const pos = this.image.positions[this.at]!;
    const chunk = this.chunks[imageChunkIndex(pos)]!;
    const start = imageKeyStart(pos) + this.image.keyLengths[this.at]!;
    return chunk.subarray(start, start + imageValueLength(chunk, imageKeyStart(pos)));
  }
}
