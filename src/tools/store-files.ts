/**
 * Read-only inspection of a data directory's files, shared by `verify` and `repair`.
 * Nothing here writes: every check opens files for reading through the FileSystem
 * interface and reports what it found instead of throwing for damage. (CURRENT and the
 * manifest are read by src/version/current-file.ts and manifest-replay.ts, the code the
 * store's recovery runs.)
 *
 * - `checkTable`: opens a table (footer, index, filter, properties checksums), reads
 *   every data block with its checksum checked, checks that entries are in strictly
 *   increasing internal-key order and agree with the properties block, and returns the
 *   metadata a manifest would record for it.
 * - `checkLog`: reads a write-ahead log keeping every record that checks out, classifies
 *   damage (torn tail or mid-log), and checks that every record holds a valid batch.
 */
import { batchCount, batchSequence, validateBatch } from "../batch/write-batch.js";
import { compareBytes, KIND_DELETE } from "../key/internal-key.js";
import { TableReader } from "../sstable/table-reader.js";
import { compareBound, type FileMetadata } from "../version/file-metadata.js";
import type { FileSystem, ReadableFile } from "../vfs/file-system.js";
import { type DroppedRegion, readLog } from "../wal/log-reader.js";

const noop = (): void => {};

/** A short description of any thrown value. */
export function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What `checkTable` found. */
export type TableCheck =
  | {
      ok: true;
      /** Metadata of the table as a manifest would record it (number as given). */
      meta: FileMetadata;
      /** Smallest and largest sequence number of any entry. */
      minSeq: number;
      maxSeq: number;
      dataBlocks: number;
    }
  | { ok: false; problem: string };

/**
 * Reads the whole table `path` (numbered `number`): see the module comment. Never throws
 * for damage; returns `{ ok: false, problem }` naming the file and what is wrong.
 */
export async function checkTable(
  fs: FileSystem,
  path: string,
  number: number,
): Promise<TableCheck> {
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    return { ok: false, problem: `${path} cannot be opened: ${describeError(err)}` };
  }
  let reader: TableReader | undefined;
  try {
    reader = TableReader.open(file, number, { verifyChecksums: true });
    const props = reader.properties;
    const it = reader.iterator({ fillCache: false });
    let entries = 0;
    let tombstones = 0;
    let smallestKey: Uint8Array | undefined;
    let smallestSeq = 0;
    let largestKey = new Uint8Array(0);
    let largestSeq = 0;
    let minSeq = Number.POSITIVE_INFINITY;
    let maxSeq = 0;
    try {
      for (it.seekToFirst(); it.valid(); it.next()) {
        const key = it.key;
        const seq = it.seq;
        if (smallestKey !== undefined && compareBound(largestKey, largestSeq, key, seq) >= 0) {
          return {
            ok: false,
            problem: `${path}: entry ${entries} is out of order (not after the one before it)`,
          };
        }
        if (smallestKey === undefined) {
          smallestKey = Uint8Array.from(key);
          smallestSeq = seq;
        }
        largestKey = Uint8Array.from(key);
        largestSeq = seq;
        if (seq < minSeq) minSeq = seq;
        if (seq > maxSeq) maxSeq = seq;
        if (it.kind === KIND_DELETE) tombstones++;
        entries++;
      }
    } finally {
      it.close();
    }
    if (smallestKey === undefined) return { ok: false, problem: `${path}: the table is empty` };
    const mismatch: string[] = [];
    if (props.entries !== entries) mismatch.push(`entries ${props.entries} vs ${entries} read`);
    if (props.tombstones !== tombstones) {
      mismatch.push(`tombstones ${props.tombstones} vs ${tombstones} read`);
    }
    if (
      compareBytes(props.smallestKey, smallestKey) !== 0 ||
      props.smallestKeySeq !== smallestSeq
    ) {
      mismatch.push("smallest key");
    }
    if (compareBytes(props.largestKey, largestKey) !== 0 || props.largestKeySeq !== largestSeq) {
      mismatch.push("largest key");
    }
    if (mismatch.length > 0) {
      return {
        ok: false,
        problem: `${path}: properties disagree with the entries (${mismatch.join(", ")})`,
      };
    }
    return {
      ok: true,
      meta: {
        number,
        size: reader.fileSize,
        smallestKey,
        smallestSeq,
        largestKey,
        largestSeq,
        entries,
        tombstones,
      },
      minSeq,
      maxSeq,
      dataBlocks: props.dataBlocks,
    };
  } catch (err) {
    return {
      ok: false,
      problem: describeError(err).includes(path)
        ? describeError(err)
        : `${path}: ${describeError(err)}`,
    };
  } finally {
    if (reader !== undefined) await reader.close().catch(noop);
    else await file.close().catch(noop);
  }
}

/** What `checkLog` found. */
export interface LogCheck {
  path: string;
  /** False when the file could not be read at all (`problem` says why). */
  readable: boolean;
  problem?: string;
  /** Payloads (write batches) of every record that checks out, in file order. */
  records: Uint8Array[];
  /** Entries in those batches. */
  entries: number;
  /** Lowest and highest sequence number in them (0 when there are none). */
  minSeq: number;
  maxSeq: number;
  /** A torn tail (the end of the log after its last good record): what a crash leaves. */
  tornTail: DroppedRegion | undefined;
  /** Damage followed by valid records, and records whose batch does not decode. */
  damage: DroppedRegion[];
}

/** Reads a whole log in skipCorrupted mode and classifies what it finds. Never throws for damage. */
export async function checkLog(fs: FileSystem, path: string): Promise<LogCheck> {
  const out: LogCheck = {
    path,
    readable: true,
    records: [],
    entries: 0,
    minSeq: 0,
    maxSeq: 0,
    tornTail: undefined,
    damage: [],
  };
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    out.readable = false;
    out.problem = `${path} cannot be opened: ${describeError(err)}`;
    return out;
  }
  try {
    let minSeq = Number.POSITIVE_INFINITY;
    const report = await readLog(file, "skipCorrupted", (payload, start, end) => {
      try {
        validateBatch(payload);
      } catch (err) {
        out.damage.push({
          offset: start,
          bytes: end - start,
          reason: `record holds a malformed batch: ${describeError(err)}`,
        });
        return;
      }
      const first = batchSequence(payload);
      const last = first + batchCount(payload) - 1;
      if (first < minSeq) minSeq = first;
      if (last > out.maxSeq) out.maxSeq = last;
      out.entries += batchCount(payload);
      out.records.push(payload);
    });
    out.minSeq = out.records.length === 0 ? 0 : minSeq;
    const regions = [...report.dropped];
    if (report.tornTailBytes > 0) out.tornTail = regions.pop();
    out.damage.push(...regions);
    out.damage.sort((a, b) => a.offset - b.offset);
  } catch (err) {
    out.readable = false;
    out.problem = `${path}: ${describeError(err)}`;
  } finally {
    await file.close().catch(noop);
  }
  return out;
}

/** True iff the metadata of two descriptions of one table agree in every field. */
export function sameMetadata(a: FileMetadata, b: FileMetadata): boolean {
  return (
    a.number === b.number &&
    a.size === b.size &&
    a.entries === b.entries &&
    a.tombstones === b.tombstones &&
    a.smallestSeq === b.smallestSeq &&
    a.largestSeq === b.largestSeq &&
    compareBytes(a.smallestKey, b.smallestKey) === 0 &&
    compareBytes(a.largestKey, b.largestKey) === 0
  );
}
