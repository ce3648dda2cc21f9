/** Shared helpers of the compaction tests: writing and reading tables, a reference model. */

import { tableMetadata } from "../../src/compaction/output-writer.js";
import {
  compareInternal,
  KIND_DELETE,
  KIND_PUT,
  MAX_SEQUENCE,
  type ValueKind,
} from "../../src/key/internal-key.js";
import { TableBuilder } from "../../src/sstable/table-builder.js";
import type { TableOptions } from "../../src/sstable/table-options.js";
import { TableReader } from "../../src/sstable/table-reader.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { tableFilePath } from "../../src/version/file-names.js";
import type { Version } from "../../src/version/version.js";
import type { FileSystem } from "../../src/vfs/file-system.js";
import { bytes, text } from "../support/bytes.js";

/** The tests' seeded PRNG (src/util/random.ts). */
export { rng } from "../support/random.js";

export interface Entry {
  readonly key: string;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: string;
}

export const DIR = "/db";

export { bytes, text };

export function put(key: string, seq: number, value = `${key}@${seq}`): Entry {
  return { key, seq, kind: KIND_PUT, value };
}

export function del(key: string, seq: number): Entry {
  return { key, seq, kind: KIND_DELETE, value: "" };
}

export function compareEntries(a: Entry, b: Entry): number {
  return compareInternal(bytes(a.key), a.seq, a.kind, bytes(b.key), b.seq, b.kind);
}

/** `apple#12,PUT` style text of entries, for readable assertions. */
export function show(entries: readonly Entry[]): string[] {
  return entries.map((e) => `${e.key}#${e.seq}${e.kind === KIND_DELETE ? ",DEL" : ""}`);
}

/** Writes `entries` (any order; sorted here) as table `number` in `dir`. */
export async function writeTable(
  fs: FileSystem,
  dir: string,
  number: number,
  entries: readonly Entry[],
  options: TableOptions = {},
): Promise<FileMetadata> {
  const sorted = [...entries].sort(compareEntries);
  const file = await fs.createWritable(tableFilePath(dir, number));
  const builder = new TableBuilder(file, options);
  for (const e of sorted) builder.add(bytes(e.key), e.seq, e.kind, bytes(e.value));
  const props = builder.finish();
  await file.sync();
  await file.close();
  return tableMetadata(number, props);
}

/** Every entry of table `number`, in order. */
export async function readTable(fs: FileSystem, dir: string, number: number): Promise<Entry[]> {
  const file = await fs.openReadable(tableFilePath(dir, number));
  const reader = TableReader.open(file, number);
  const it = reader.iterator({ fillCache: false });
  const out: Entry[] = [];
  for (it.seekToFirst(); it.valid(); it.next()) {
    out.push({ key: text(it.key), seq: it.seq, kind: it.kind, value: text(it.value) });
  }
  it.close();
  await reader.close();
  return out;
}

/**
 * What a get of `key` at `seq` returns through the version's read order (first candidate
 * file holding an entry <= seq wins): the value, or undefined for deleted/absent.
 * `contents` maps file numbers to their entries.
 */
export function getThroughVersion(
  version: Version,
  contents: ReadonlyMap<number, readonly Entry[]>,
  key: string,
  seq: number = MAX_SEQUENCE,
): string | undefined {
  let found: Entry | undefined;
  version.forEachCandidate(
    bytes(key),
    (file) => {
      const entries = contents.get(file.number);
      if (entries === undefined) throw new Error(`no contents for file ${file.number}`);
      let best: Entry | undefined;
      for (const e of entries) {
        if (e.key === key && e.seq <= seq && (best === undefined || e.seq > best.seq)) best = e;
      }
      found = best;
      return best !== undefined;
    },
    seq,
  );
  const e = found as Entry | undefined;
  return e === undefined || e.kind === KIND_DELETE ? undefined : e.value;
}

/** The model answer: the newest entry with sequence <= seq among all entries. */
export function modelGet(
  entries: readonly Entry[],
  key: string,
  seq: number = MAX_SEQUENCE,
): string | undefined {
  let best: Entry | undefined;
  for (const e of entries) {
    if (e.key === key && e.seq <= seq && (best === undefined || e.seq > best.seq)) best = e;
  }
  return best === undefined || best.kind === KIND_DELETE ? undefined : best.value;
}

/** A file's metadata without a table behind it (picker tests). */
export function meta(
  number: number,
  smallest: string,
  largest: string,
  size = 1000,
  seqs: { smallestSeq?: number; largestSeq?: number } = {},
): FileMetadata {
  return {
    number,
    size,
    smallestKey: bytes(smallest),
    smallestSeq: seqs.smallestSeq ?? 10,
    largestKey: bytes(largest),
    largestSeq: seqs.largestSeq ?? 5,
    entries: 10,
    tombstones: 0,
  };
}
