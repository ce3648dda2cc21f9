/**
 * Writing a memtable out as a level-0 table from its image (memtable-image.ts): on the
 * compaction worker thread (worker.ts), or on the main thread (inline flushes). The
 * builder works synchronously, so the loop yields to the event loop every YIELD_EVERY
 * entries: on the main thread, writers, reads and timers keep running while an inline
 * flush is in progress.
 *
 * Durability order (docs/design.md, "Flush"): write the table, fsync it, fsync the
 * directory; only then may a manifest edit name it.
 */
import { type MemtableImage, MemtableImageIterator } from "../memtable/memtable-image.js";
import { TableBuilder, type TableOptions } from "../sstable/table-builder.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { FileSystem } from "../vfs/file-system.js";
import { YIELD_EVERY, yieldToEventLoop } from "./event-loop-yield.js";
import { tableMetadata } from "./output-writer.js";

/**
 * Writes every entry of `image` (in its order, the internal-key order) into a new table
 * file `path` (numbered `number`), syncs it and the directory, and returns its metadata.
 * Keys and values are copied straight from the arena chunks into the table's blocks (no
 * view per entry). REQUIRES the image is not empty and its memtable stays referenced
 * meanwhile. On failure the partial file is left for the obsolete-file sweep. `onBuilt` is
 * called once the table's bytes are written, before its fsync (the worker lets compactions
 * go on from there).
 */
export async function writeLevel0Table(
  fs: FileSystem,
  dir: string,
  path: string,
  number: number,
  image: MemtableImage,
  options: TableOptions,
  onBuilt?: () => void,
): Promise<FileMetadata> {
  if (image.positions.length === 0) throw new Error("writeLevel0Table: no entries");
  const file = await fs.createWritable(path);
  let ok = false;
  try {
    const builder = new TableBuilder(file, options);
    const it = new MemtableImageIterator(image);
    for (;;) {
      addEntries(builder, it, YIELD_EVERY);
      if (!it.valid()) break;
      await yieldToEventLoop();
    }
    const props = builder.finish();
    // The CPU work is done; what is left waits for the device.
    onBuilt?.();
    await file.sync();
    ok = true;
    return tableMetadata(number, props);
  } finally {
    await file.close().catch((err: unknown) => {
      if (ok) throw err;
    });
    if (ok) await fs.syncDir(dir);
  }
}

/**
 * Adds at most `limit` entries of `it` to `builder`, from its position on; leaves `it` on
 * the first entry not added. The per-entry loop lives here, not in writeLevel0Table: V8
 * optimizes that async function's loop while it runs (on-stack replacement) without type
 * feedback for the code after the loop, and threw the optimized code away when the loop
 * ended (at each of the first flushes of a fresh thread); this function has no such tail.
 */
function addEntries(builder: TableBuilder, it: MemtableImageIterator, limit: number): void {
  for (let n = 0; n < limit && it.valid(); n++, it.next()) {
    builder.addFrom(
      it.bytes,
      it.keyStart,
      it.keyLength,
      it.seq,
      it.kind,
      it.bytes,
      it.valueStart,
      it.valueLength,
    );
  }
}
