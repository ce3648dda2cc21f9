/**
 * Writing a memtable out as a level-0 table: from the memtable itself (inline flushes), or
 * from its image on the compaction worker thread (worker.ts). The builder works
 * synchronously, so the loop yields to the event loop every YIELD_EVERY entries: on the
 * main thread, writers, reads and timers keep running while an inline flush is in progress.
 *
 * Durability order (docs/design.md, "Flush"): write the table, fsync it, fsync the
 * directory; only then may a manifest edit name it.
 */
import { KIND_DELETE, type ValueKind } from "../key/internal-key.js";
import { TableBuilder, type TableOptions } from "../sstable/table-builder.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { FileSystem } from "../vfs/file-system.js";
import { YIELD_EVERY, yieldToEventLoop } from "./event-loop-yield.js";

/**
 * Sorted entries to write: a memtable iterator, or a MemtableImageIterator. Keys and values
 * must stay valid after the cursor moves (both sources' do: they are views of an arena).
 */
export interface Level0Source {
  seekToFirst(): void;
  valid(): boolean;
  next(): void;
  readonly key: Uint8Array;
  readonly seq: number;
  readonly kind: ValueKind;
  readonly value: Uint8Array;
}

/**
 * Writes every entry of `it` (from the first, in internal-key order) into a new table file
 * `path` (numbered `number`), syncs it and the directory, and returns its metadata.
 * REQUIRES the source is not empty and does not change meanwhile. On failure the partial
 * file is left for the obsolete-file sweep. `onBuilt` is called once the table's bytes
 * are written, before its fsync (the worker lets compactions go on from there).
 */
export async function writeLevel0Table(
  fs: FileSystem,
  dir: string,
  path: string,
  number: number,
  it: Level0Source,
  options: TableOptions,
  onBuilt?: () => void,
): Promise<FileMetadata> {
  const file = await fs.createWritable(path);
  let ok = false;
  try {
    const builder = new TableBuilder(file, options);
    let n = 0;
    let tombstones = 0;
    let smallestKey: Uint8Array | undefined;
    let largestKey: Uint8Array = new Uint8Array(0);
    let smallestSeq = 0;
    let largestSeq = 0;
    for (it.seekToFirst(); it.valid(); it.next()) {
      // The views stay valid after the iterator moves (Level0Source).
      const key = it.key;
      const seq = it.seq;
      const kind = it.kind;
      builder.add(key, seq, kind, it.value);
      if (smallestKey === undefined) {
        smallestKey = key;
        smallestSeq = seq;
      }
      largestKey = key;
      largestSeq = seq;
      if (kind === KIND_DELETE) tombstones++;
      if (++n % YIELD_EVERY === 0) await yieldToEventLoop();
    }
    if (smallestKey === undefined) throw new Error("writeLevel0Table: no entries");
    const props = builder.finish();
    // The CPU work is done; what is left waits for the device.
    onBuilt?.();
    await file.sync();
    ok = true;
    return {
      number,
      size: props.fileSize,
      smallestKey: Uint8Array.from(smallestKey),
      smallestSeq,
      largestKey: Uint8Array.from(largestKey),
      largestSeq,
      entries: n,
      tombstones,
    };
  } finally {
    await file.close().catch((err: unknown) => {
      if (ok) throw err;
    });
    if (ok) await fs.syncDir(dir);
  }
}
