/**
 * Shared helpers of the SSTable tests: entries with a reference model, building a table in
 * a MemoryFileSystem, and opening it.
 */

import type { InternalIterator } from "../../src/key/internal-iterator.js";
import {
  compareInternal,
  formatInternalKey,
  KIND_DELETE,
  KIND_PUT,
  type ValueKind,
} from "../../src/key/internal-key.js";
import type { BlockCache } from "../../src/sstable/block-cache.js";
import { TableBuilder, type TableBuildResult } from "../../src/sstable/table-builder.js";
import type { TableOptions } from "../../src/sstable/table-options.js";
import { TableReader } from "../../src/sstable/table-reader.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

/** The tests' seeded PRNG (src/util/random.ts). */
export { rng } from "../support/random.js";

export interface Entry {
  key: Uint8Array;
  seq: number;
  kind: ValueKind;
  value: Uint8Array;
}

export function bytes(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, "latin1"));
}

export function text(b: Uint8Array): string {
  return Buffer.from(b).toString("latin1");
}

export function hex(b: Uint8Array): string {
  return Buffer.from(b).toString("hex");
}

export function compareEntries(a: Entry, b: Entry): number {
  return compareInternal(a.key, a.seq, a.kind, b.key, b.seq, b.kind);
}

export function describe(e: { key: Uint8Array; seq: number; kind: number }): string {
  return formatInternalKey(e.key, e.seq, e.kind);
}

export function randomBytes(r: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

/**
 * Random user keys, unique and sorted: binary keys of 0-24 bytes, many sharing prefixes
 * (some extend another key, some differ from it in the last byte), and 0xff runs.
 */
export function randomUserKeys(r: () => number, n: number): Uint8Array[] {
  const seen = new Map<string, Uint8Array>();
  const all: Uint8Array[] = [];
  while (seen.size < n) {
    let k: Uint8Array;
    const choice = r();
    const base = all.length > 0 ? all[Math.floor(r() * all.length)]! : undefined;
    if (base !== undefined && choice < 0.3) {
      // extend an existing key
      k = new Uint8Array(base.length + 1 + Math.floor(r() * 4));
      k.set(base);
      for (let i = base.length; i < k.length; i++) k[i] = Math.floor(r() * 256);
    } else if (base !== undefined && base.length > 0 && choice < 0.5) {
      // same prefix, different last byte
      k = base.slice();
      k[k.length - 1] = Math.floor(r() * 256);
    } else if (choice < 0.55) {
      k = new Uint8Array(1 + Math.floor(r() * 6)).fill(0xff);
    } else {
      k = randomBytes(r, Math.floor(r() * 25));
    }
    const id = hex(k);
    if (!seen.has(id)) {
      seen.set(id, k);
      all.push(k);
    }
  }
  return all.sort((a, b) => Buffer.compare(a, b));
}

/**
 * Entries for the given user keys: each key gets 1-4 versions with distinct sequence
 * numbers (newest first in the result), about a fifth of them tombstones, values of
 * 0-maxValue random bytes (empty for tombstones and sometimes for puts). Sorted in
 * internal-key order.
 */
export function versionedEntries(
  r: () => number,
  keys: readonly Uint8Array[],
  maxValue = 40,
  maxSeq = 1_000_000,
): Entry[] {
  const out: Entry[] = [];
  for (const key of keys) {
    const versions = 1 + Math.floor(r() * 4);
    const seqs = new Set<number>();
    while (seqs.size < versions) seqs.add(1 + Math.floor(r() * maxSeq));
    for (const seq of [...seqs].sort((a, b) => b - a)) {
      const kind: ValueKind = r() < 0.2 ? KIND_DELETE : KIND_PUT;
      const len = kind === KIND_DELETE || r() < 0.05 ? 0 : Math.floor(r() * (maxValue + 1));
      out.push({ key, seq, kind, value: randomBytes(r, len) });
    }
  }
  return out.sort(compareEntries);
}

export interface BuiltTable {
  fs: MemoryFileSystem;
  path: string;
  result: TableBuildResult;
  /** The file's bytes. */
  bytes: Uint8Array;
}

/** Writes entries (already in order) to a new table file in a MemoryFileSystem. */
export async function buildTable(
  entries: readonly Entry[],
  options?: TableOptions,
  fs: MemoryFileSystem = new MemoryFileSystem(),
  path = "db/000001.sst",
): Promise<BuiltTable> {
  await fs.mkdir("db");
  const file = await fs.createWritable(path);
  const builder = new TableBuilder(file, options);
  for (const e of entries) builder.add(e.key, e.seq, e.kind, e.value);
  const result = builder.finish();
  await file.sync();
  await file.close();
  return { fs, path, result, bytes: fs.readFile(path) };
}

/** Opens a table file of a MemoryFileSystem. */
export async function openTable(
  fs: MemoryFileSystem,
  path: string,
  options: { blockCache?: BlockCache; verifyChecksums?: boolean; fileNumber?: number } = {},
): Promise<TableReader> {
  const file = await fs.openReadable(path);
  try {
    return TableReader.open(file, options.fileNumber ?? 1, options);
  } catch (err) {
    await file.close();
    throw err;
  }
}

/** Opens a table from raw bytes (written to a fresh MemoryFileSystem). */
export async function openBytes(
  data: Uint8Array,
  options: { blockCache?: BlockCache; verifyChecksums?: boolean } = {},
): Promise<TableReader> {
  const fs = new MemoryFileSystem();
  await fs.mkdir("db");
  fs.writeFile("db/000001.sst", data);
  return openTable(fs, "db/000001.sst", options);
}

/** Every entry of an iterator from its first to its last. */
export function scanForward(it: InternalIterator): Entry[] {
  const out: Entry[] = [];
  for (it.seekToFirst(); it.valid(); it.next()) {
    out.push({ key: it.key.slice(), seq: it.seq, kind: it.kind, value: it.value.slice() });
  }
  return out;
}

/** Every entry of an iterator from its last to its first. */
export function scanBackward(it: InternalIterator): Entry[] {
  const out: Entry[] = [];
  for (it.seekToLast(); it.valid(); it.prev()) {
    out.push({ key: it.key.slice(), seq: it.seq, kind: it.kind, value: it.value.slice() });
  }
  return out;
}

/** The current entry of a valid iterator as a string, or "<invalid>". */
export function at(it: InternalIterator): string {
  return it.valid() ? `${describe(it)}=${hex(it.value)}` : "<invalid>";
}

/** The entry as the same kind of string. */
export function show(e: Entry | undefined): string {
  return e === undefined ? "<invalid>" : `${describe(e)}=${hex(e.value)}`;
}

/** Index of the first entry >= (key, seq, highest kind), entries.length if none. */
export function lowerBound(entries: readonly Entry[], key: Uint8Array, seq: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const e = entries[mid]!;
    if (compareInternal(e.key, e.seq, e.kind, key, seq, KIND_PUT) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the last entry <= (key, seq, lowest kind), -1 if none. */
export function upperBoundForPrev(entries: readonly Entry[], key: Uint8Array, seq: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const e = entries[mid]!;
    if (compareInternal(e.key, e.seq, e.kind, key, seq, KIND_DELETE) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** The model's answer to get(key, seq): newest entry of key with sequence <= seq. */
export function modelGet(
  entries: readonly Entry[],
  key: Uint8Array,
  seq: number,
): Entry | undefined {
  const i = lowerBound(entries, key, seq);
  const e = entries[i];
  return e !== undefined && Buffer.compare(e.key, key) === 0 ? e : undefined;
}
