/**
 * Minimal in-memory files for the log tests, so they depend on nothing but the VFS
 * interface: a WritableFile that appends to a growable byte array and a ReadableFile over
 * a byte array. Both count what they are asked to do.
 */

import type { ReadableFile, WritableFile } from "../../src/vfs/file-system.js";

export class ByteWritableFile implements WritableFile {
  readonly path: string;
  size = 0;
  /** Physical length: at least `size`; more after `preallocate` (zeros). */
  physicalSize = 0;
  private data = new Uint8Array(1024);
  appendCalls = 0;
  datasyncCalls = 0;
  closed = false;
  /** Arguments of every `preallocate` call. */
  readonly preallocations: number[] = [];
  /** When set, the next append throws this (once). */
  failNextAppend: Error | undefined;

  constructor(path = "test.log") {
    this.path = path;
  }

  append(bytes: Uint8Array): void {
    if (this.closed) throw new Error("append after close");
    if (this.failNextAppend !== undefined) {
      const err = this.failNextAppend;
      this.failNextAppend = undefined;
      throw err;
    }
    this.appendCalls++;
    this.reserve(this.size + bytes.length);
    this.data.set(bytes, this.size);
    this.size += bytes.length;
    if (this.size > this.physicalSize) this.physicalSize = this.size;
  }

  preallocate(length: number): void {
    this.preallocations.push(length);
    if (length <= this.physicalSize) return;
    this.reserve(length);
    this.data.fill(0, this.physicalSize, length);
    this.physicalSize = length;
  }

  async truncate(length: number): Promise<void> {
    this.reserve(length);
    if (length > this.physicalSize) this.data.fill(0, this.physicalSize, length);
    this.size = length;
    this.physicalSize = length;
  }

  async datasync(): Promise<void> {
    this.datasyncCalls++;
  }

  datasyncSync(): void {
    this.datasyncCalls++;
  }

  async sync(): Promise<void> {
    this.datasyncCalls++;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** A copy of the logical content [0, size). */
  contents(): Uint8Array {
    return this.data.slice(0, this.size);
  }

  /** A copy of the physical content, preallocated zeros included. */
  physicalContents(): Uint8Array {
    return this.data.slice(0, this.physicalSize);
  }

  private reserve(length: number): void {
    if (length <= this.data.length) return;
    let n = this.data.length * 2;
    while (n < length) n *= 2;
    const grown = new Uint8Array(n);
    grown.set(this.data);
    this.data = grown;
  }
}

export class ByteReadableFile implements ReadableFile {
  readonly path: string;
  readonly size: number;
  private readonly bytes: Uint8Array;
  /** Every read: its position and the length asked for. */
  readonly reads: Array<{ position: number; length: number }> = [];

  constructor(bytes: Uint8Array, path = "test.log") {
    this.bytes = bytes;
    this.size = bytes.length;
    this.path = path;
  }

  read(dst: Uint8Array, position: number): number {
    this.reads.push({ position, length: dst.length });
    const n = Math.max(0, Math.min(dst.length, this.bytes.length - position));
    dst.set(this.bytes.subarray(position, position + n));
    return n;
  }

  async close(): Promise<void> {}
}
