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
 */
import { BATCH_HEADER_SIZE, batchCount, batchSequence, decodeBatch } from "../batch/write-batch.js";
import type { FileSystem, ReadableFile } from "../vfs/file-system.js";
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
  /** "torn-tail": nothing valid follows; "corruption": valid records follow it. */
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
    };
  } finally {
    await file.close().catch(() => {});
  }
}
