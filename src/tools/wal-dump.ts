/**
 * `wal dump`: a write-ahead log decoded into plain objects, for `kv-engine wal dump`.
 * Read-only, no lock (a live log can be dumped; its last record may then show as torn).
 *
 * The log is read in "skipCorrupted" mode, which keeps every record that checks out and
 * reports every region it could not use instead of stopping or hiding it. Each record's
 * payload is decoded as a write batch (sequence, count, operations); a payload that is not
 * a valid batch is kept with its `problem`. Damaged regions are classified as the reader
 * does (docs/format/wal.md, "Damage"): a torn tail (the end of the log after its last good
 * record: what a crash during an append leaves) or corruption followed by valid records.
 * The whole log is held in memory (a log is at most about one memtable of writes).
 *
 * A file that is no log at all is told apart from a damaged log (`notALog`): no record
 * checks out and the file ends with a table's magic number, or its first bytes are not
 * the header a log starts with (a FULL or FIRST fragment whose length fits a block); or records
 * check out but none holds a write batch (a manifest uses the same framing). A crash
 * during a fresh log's first append leaves a plausible header, so that stays a torn tail.
 */
import { BATCH_HEADER_SIZE, batchCount, batchSequence, decodeBatch } from "../batch/write-batch.js";
import { TABLE_MAGIC } from "../sstable/format.js";
import type { FileSystem, ReadableFile } from "../vfs/file-system.js";
import {
  BLOCK_SIZE,
  FRAGMENT_FIRST,
  FRAGMENT_FULL,
  fragmentVersion,
  HEADER_SIZE,
  V2_HEADER_SIZE,
  V2_TYPE_OFFSET,
} from "../wal/log-format.js";
import { type DroppedRegion, readLog } from "../wal/log-reader.js";
import { describeError } from "./store-files.js";

/** One operation of a batch. `value` is empty for a delete. */
export interface WalOp {
  seq: number;
  /** 0: delete, 1: put. */
  kind: number;
  key: Uint8Array;
  value: Uint8Array;
}

export interface WalRecord {
  /** Offset of the record's first fragment header, and just after its last fragment. */
  offset: number;
  end: number;
  /** Payload bytes (the encoded batch). */
  length: number;
  /** From the batch header (undefined when the payload is shorter than a header). */
  sequence: number | undefined;
  count: number | undefined;
  /** The batch's operations (empty when it does not decode). */
  ops: WalOp[];
  /** Why the payload is not a valid batch. */
  problem: string | undefined;
}

/** A damaged region of a log, classified. */
export interface WalDamage extends DroppedRegion {
  /**
   * "torn-tail": the unsynced end of the log (nothing valid follows, or only records that
   * do not prove it synced); "corruption": the log provably continued past it.
   */
  kind: "torn-tail" | "corruption";
}

export interface WalDump {
  path: string;
  fileSize: number;
  records: WalRecord[];
  damage: WalDamage[];
  /**
   * Where the first damage starts (a damaged region or a record holding a malformed
   * batch), undefined when the log is clean.
   */
  firstDamageOffset: number | undefined;
  /** Offset just after the last good record: where recovery would resume appending. */
  goodEndOffset: number;
  /**
   * Bytes of zeros after the last record and any damage: preallocated space, the clean
   * end of the log.
   */
  zeroTailBytes: number;
  /** Why the file is not a write-ahead log at all (see the module comment); else undefined. */
  notALog: string | undefined;
}

/**
 * True iff the file starts as a log does: a FULL or FIRST fragment header (either framing
 * version) whose length fits a block.
 */
function startsLikeALog(file: ReadableFile): boolean {
  const header = new Uint8Array(HEADER_SIZE);
  if (file.read(header, 0) < HEADER_SIZE) return false;
  const length = header[4]! | (header[5]! << 8);
  const version = fragmentVersion(header[6]!);
  const role = version === 2 ? header[6]! - V2_TYPE_OFFSET : header[6]!;
  // A torn append may have cut the fragment short: its length need only fit its block.
  const fits = (version === 2 ? V2_HEADER_SIZE : HEADER_SIZE) + length <= BLOCK_SIZE;
  return version !== 0 && (role === FRAGMENT_FULL || role === FRAGMENT_FIRST) && fits;
}

/** True iff the file ends with the magic number of a table file. */
function endsLikeATable(file: ReadableFile): boolean {
  if (file.size < TABLE_MAGIC.length) return false;
  const tail = new Uint8Array(TABLE_MAGIC.length);
  file.read(tail, file.size - tail.length);
  return tail.every((b, i) => b === TABLE_MAGIC[i]);
}

function whyNotALog(
  file: ReadableFile,
  records: WalRecord[],
  damage: WalDamage[],
): string | undefined {
  if (records.length === 0 && damage.length > 0) {
    if (endsLikeATable(file)) {
      return "no record checks out and it ends as a table file does (kv-engine sst dump reads those)";
    }
    if (!startsLikeALog(file)) {
      return "no record checks out and it does not start with a log fragment header";
    }
  }
  if (records.length > 0 && records.every((r) => r.problem !== undefined)) {
    return (
      `none of its ${records.length} records holds a write batch ` +
      "(a manifest? kv-engine manifest dump reads those)"
    );
  }
  return undefined;
}

function decodeRecord(payload: Uint8Array, offset: number, end: number): WalRecord {
  const record: WalRecord = {
    offset,
    end,
    length: payload.length,
    sequence: undefined,
    count: undefined,
    ops: [],
    problem: undefined,
  };
  if (payload.length >= BATCH_HEADER_SIZE) {
    try {
      record.sequence = batchSequence(payload);
    } catch {
      // an out-of-range sequence: decodeBatch reports it below
    }
    record.count = batchCount(payload);
  }
  try {
    decodeBatch(payload, (seq, kind, key, value) => {
      record.ops.push({ seq, kind, key, value });
    });
  } catch (err) {
    record.ops = [];
    record.problem = describeError(err);
  }
  return record;
}

/** The end of the last dropped region (0 if none). */
function dataEnd(dropped: readonly DroppedRegion[]): number {
  const last = dropped.at(-1);
  return last === undefined ? 0 : last.offset + last.bytes;
}

/** Reads the log at `path`; see the module comment. Throws only when it cannot be read. */
export async function dumpLog(fs: FileSystem, path: string): Promise<WalDump> {
  const file: ReadableFile = await fs.openReadable(path);
  try {
    const records: WalRecord[] = [];
    const report = await readLog(file, "skipCorrupted", (payload, start, end) => {
      records.push(decodeRecord(payload, start, end));
    });
    const damage: WalDamage[] = report.dropped.map((d, i) => ({
      ...d,
      kind:
        report.tornTailBytes > 0 && i === report.dropped.length - 1 ? "torn-tail" : "corruption",
    }));
    const starts = [
      ...damage.map((d) => d.offset),
      ...records.filter((r) => r.problem !== undefined).map((r) => r.offset),
    ];
    return {
      path,
      fileSize: file.size,
      records,
      damage,
      firstDamageOffset: starts.length === 0 ? undefined : Math.min(...starts),
      goodEndOffset: report.goodEndOffset,
      zeroTailBytes: file.size - Math.max(report.goodEndOffset, dataEnd(report.dropped)),
      notALog: whyNotALog(file, records, damage),
    };
  } finally {
    await file.close().catch(() => {});
  }
}
