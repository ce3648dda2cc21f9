/**
 * Salvage of a damaged table for `repair` (as LevelDB's RepairDB does): every data block
 * that still checks out (its checksum and its entries' framing, in key order after the
 * blocks kept before it) is kept, entry by entry; the damaged blocks are lost. The kept
 * entries are written, through compaction's OutputWriter, as one new table, which then
 * replaces the damaged one under the same file number (so it keeps its place in level 0's
 * newest-first order; its keys lie within the damaged table's range, so it fits its level
 * too). The original stays available: the caller archives it into `lost/` first.
 *
 * A table whose footer, index or properties block is damaged cannot be salvaged here (the
 * block boundaries are unknown): it is lost whole, and archived.
 */
import { OutputWriter } from "../compaction/output-writer.js";
import type { ValueKind } from "../key/internal-key.js";
import { BlockIterator } from "../sstable/block.js";
import type { TableOptions } from "../sstable/table-builder.js";
import { TableReader } from "../sstable/table-reader.js";
import { compareBound, type FileMetadata } from "../version/file-metadata.js";
import type { FileSystem, ReadableFile } from "../vfs/file-system.js";
import { describeError } from "./store-files.js";

const noop = (): void => {};

interface Entry {
  key: Uint8Array;
  seq: number;
  kind: ValueKind;
  value: Uint8Array;
}

/** What the intact blocks of a damaged table hold. */
export interface TableSalvage {
  /** Entries of the intact blocks, in internal-key order. */
  entries: Entry[];
  /** Data blocks in the table, and those lost (damaged, or out of order). */
  blocks: number;
  blocksLost: number;
  /** Entries the table held by its properties block (so `entries - salvaged` were lost). */
  entriesInTable: number;
  /** Why the first lost block was lost. */
  firstProblem: string | undefined;
}

/**
 * Reads every intact data block of the table `path` (see the module comment). Returns
 * undefined when the table cannot be opened at all (footer, index or properties damaged).
 */
export async function readIntactBlocks(
  fs: FileSystem,
  path: string,
  number: number,
): Promise<TableSalvage | undefined> {
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch {
    return undefined;
  }
  let reader: TableReader;
  try {
    reader = TableReader.open(file, number, { verifyChecksums: true, skipFilter: true });
  } catch {
    await file.close().catch(noop);
    return undefined;
  }
  try {
    const out: TableSalvage = {
      entries: [],
      blocks: reader.index.count,
      blocksLost: 0,
      entriesInTable: reader.properties.entries,
      firstProblem: undefined,
    };
    const it = new BlockIterator();
    for (let i = 0; i < reader.index.count; i++) {
      const kept: Entry[] = [];
      let last = out.entries.at(-1);
      try {
        it.reset(reader.dataBlock(i, false));
        for (it.seekToFirst(); it.valid(); it.next()) {
          if (last !== undefined && compareBound(last.key, last.seq, it.key, it.seq) >= 0) {
            throw new Error(`data block ${i}: an entry out of order`);
          }
          last = {
            key: Uint8Array.from(it.key),
            seq: it.seq,
            kind: it.kind,
            value: Uint8Array.from(it.value),
          };
          kept.push(last);
        }
        for (const e of kept) out.entries.push(e);
      } catch (err) {
        out.blocksLost++;
        out.firstProblem ??= describeError(err);
      } finally {
        it.reset();
      }
    }
    return out;
  } finally {
    await reader.close().catch(noop);
  }
}

/**
 * Writes `entries` (in internal-key order, at least one) as one table numbered by
 * `newNumber()`, synced, its name made durable; returns its metadata.
 */
export async function writeSalvagedTable(
  fs: FileSystem,
  dir: string,
  entries: readonly Entry[],
  newNumber: () => number,
  tableOptions: TableOptions,
): Promise<FileMetadata> {
  const out = new OutputWriter(fs, {
    dir,
    tableOptions,
    targetFileSize: Number.MAX_SAFE_INTEGER,
    grandparents: [],
    maxGrandparentOverlapBytes: 0,
    nextNumber: newNumber,
    label: "salvaged table",
  });
  try {
    for (const e of entries) {
      const added = out.add(e.key, e.seq, e.kind, e.value);
      if (added !== undefined) await added;
    }
    await out.finish();
    await out.syncDirectory("sync directory after salvaging a table");
  } catch (err) {
    await out.discard();
    throw err;
  }
  const meta = out.outputs[0];
  if (meta === undefined || out.outputs.length !== 1) {
    throw new Error(`salvage wrote ${out.outputs.length} tables`);
  }
  return meta;
}
