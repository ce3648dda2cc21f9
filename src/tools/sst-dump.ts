/**
 * `sst dump`: a table file decoded into plain objects, for `kv-engine sst dump`. Read-only
 * (files opened for reading through the FileSystem interface, no lock: a table never
 * changes once written, so a live store's tables can be dumped).
 *
 * `openTableDump` opens the table (footer, index, filter and properties blocks, each
 * checksum checked: damage there throws KvError CORRUPTION naming the file) and reads every
 * data block once for the summary: per block its handle, compression, entry count, first
 * and last key, and the index key that points at it. A data block that cannot be read
 * (checksum, decompression, malformed) does not stop the dump: its `problem` says why and
 * it is listed in `problems`. `entries()` then walks the readable blocks again, entry by
 * entry, so a dump of every entry never holds more than one block in memory.
 */
import {
  internalKeyKind,
  internalKeySeq,
  internalKeyUserKey,
  KIND_DELETE,
} from "../key/internal-key.js";
import { BlockIterator } from "../sstable/block.js";
import { BLOCK_TRAILER_SIZE, type BlockHandle } from "../sstable/format.js";
import type { TableProperties } from "../sstable/properties.js";
import { TableReader } from "../sstable/table-reader.js";
import { parseFileName } from "../version/file-names.js";
import { baseName, type FileSystem } from "../vfs/file-system.js";
import { describeError } from "./store-files.js";

/** An internal key taken apart: user key (a copy), sequence number, kind (0 DEL, 1 PUT). */
export interface DumpKey {
  key: Uint8Array;
  seq: number;
  kind: number;
}

/** One entry of a table. `value` is empty for a tombstone. */
export interface DumpEntry extends DumpKey {
  value: Uint8Array;
  /** The data block holding it. */
  block: number;
}

export interface DumpBlock {
  index: number;
  /** Offset of the block in the file and its size on disk (without the 5-byte trailer). */
  offset: number;
  size: number;
  /** From the block's trailer: "none", "deflate", "lz4" or "type N". */
  compression: string;
  /** The index entry's key for this block: at or after its last key (maybe shortened). */
  indexKey: DumpKey;
  /** Entries, first and last key; undefined when the block could not be read. */
  entries: number | undefined;
  firstKey: DumpKey | undefined;
  lastKey: DumpKey | undefined;
  /** Why the block could not be read. */
  problem: string | undefined;
}

export interface DumpFilter {
  /** Bytes of the filter block. */
  bytes: number;
  bits: number;
  probes: number;
  /** Bits per distinct user key (undefined when a block could not be read). */
  bitsPerKey: number | undefined;
  /** The expected false-positive rate (1 - e^(-k n / m))^k for those keys. */
  falsePositiveRate: number | undefined;
}

export interface TableSummary {
  path: string;
  fileSize: number;
  /** The number in the file's name, when it is named like a table (NNNNNN.sst). */
  fileNumber: number | undefined;
  footer: {
    formatVersion: number;
    index: BlockHandle;
    /** Undefined when the table has no filter. */
    filter: BlockHandle | undefined;
    properties: BlockHandle;
  };
  properties: TableProperties;
  filter: DumpFilter | undefined;
  blocks: DumpBlock[];
  /** Distinct user keys in the readable blocks. */
  distinctKeys: number;
  /** What could not be read, one line each, naming the file and block. */
  problems: string[];
}

export interface TableDump {
  readonly summary: TableSummary;
  /** Every entry of the readable blocks, in table order (keys are copies; values views). */
  entries(): Generator<DumpEntry>;
  /** Closes the file; `entries` must not be used after it. */
  close(): Promise<void>;
}

function keyOf(ikey: Uint8Array): DumpKey {
  return {
    key: Uint8Array.from(internalKeyUserKey(ikey)),
    seq: internalKeySeq(ikey),
    kind: internalKeyKind(ikey),
  };
}

function compressionName(type: number | undefined): string {
  if (type === 0) return "none";
  if (type === 1) return "deflate";
  if (type === 2) return "lz4";
  return `type ${type ?? "?"}`;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

/** Opens the table at `path` and reads its summary; see the module comment. */
export async function openTableDump(fs: FileSystem, path: string): Promise<TableDump> {
  const file = await fs.openReadable(path);
  let reader: TableReader;
  const parsed = parseFileName(baseName(path));
  const fileNumber = parsed?.type === "table" ? parsed.number : undefined;
  try {
    reader = TableReader.open(file, fileNumber ?? 0, { verifyChecksums: true });
  } catch (err) {
    await file.close().catch(() => {});
    throw err;
  }
  const blocks: DumpBlock[] = [];
  const problems: string[] = [];
  const index = reader.index;
  const trailer = new Uint8Array(1);
  let distinct = 0;
  let previousKey: Uint8Array | undefined;
  const readable: boolean[] = [];
  for (let i = 0; i < index.count; i++) {
    const offset = index.blockOffsets[i]!;
    const size = index.blockSizes[i]!;
    const n = file.read(trailer, offset + size);
    const info: DumpBlock = {
      index: i,
      offset,
      size,
      compression: compressionName(n === 1 ? trailer[0] : undefined),
      indexKey: keyOf(index.key(i)),
      entries: undefined,
      firstKey: undefined,
      lastKey: undefined,
      problem: undefined,
    };
    blocks.push(info);
    let it: BlockIterator;
    try {
      it = new BlockIterator(reader.dataBlock(i, false));
      let count = 0;
      for (it.seekToFirst(); it.valid(); it.next()) {
        const key = it.key;
        if (previousKey === undefined || !sameBytes(previousKey, key)) {
          distinct++;
          previousKey = Uint8Array.from(key);
        }
        if (count === 0) info.firstKey = keyOf(it.internalKey);
        info.lastKey = keyOf(it.internalKey);
        count++;
      }
      info.entries = count;
      readable[i] = true;
      it.reset();
    } catch (err) {
      info.problem = describeError(err);
      problems.push(
        `${path}: data block ${i} at offset ${offset} (${size + BLOCK_TRAILER_SIZE} bytes): ${info.problem}`,
      );
    }
  }
  const footer = reader.footer;
  const shape = reader.filterShape;
  let filter: DumpFilter | undefined;
  if (shape !== undefined) {
    const complete = problems.length === 0 && distinct > 0;
    filter = {
      bytes: footer.filter.size,
      bits: shape.bits,
      probes: shape.probes,
      bitsPerKey: complete ? shape.bits / distinct : undefined,
      falsePositiveRate: complete
        ? (1 - Math.exp((-shape.probes * distinct) / shape.bits)) ** shape.probes
        : undefined,
    };
  }
  const summary: TableSummary = {
    path,
    fileSize: reader.fileSize,
    fileNumber,
    footer: {
      formatVersion: footer.formatVersion,
      index: footer.index,
      filter: footer.filter.size > 0 ? footer.filter : undefined,
      properties: footer.properties,
    },
    properties: reader.properties,
    filter,
    blocks,
    distinctKeys: distinct,
    problems,
  };
  return {
    summary,
    *entries(): Generator<DumpEntry> {
      for (let i = 0; i < index.count; i++) {
        if (readable[i] !== true) continue;
        const it = new BlockIterator(reader.dataBlock(i, false));
        for (it.seekToFirst(); it.valid(); it.next()) {
          const { key, seq, kind } = keyOf(it.internalKey);
          const value = kind === KIND_DELETE ? new Uint8Array(0) : it.value;
          yield { key, seq, kind, value, block: i };
        }
      }
    },
    close: () => reader.close(),
  };
}
