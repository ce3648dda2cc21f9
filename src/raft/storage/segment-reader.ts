/**
 * Reads one segment file of the Raft log: every record whose framing checks out (WAL
 * reader in skipCorrupted mode, so that records after damage are seen too), decoded, with
 * its offsets; the first damage; and the highest durable offset any record claims. Whether
 * the damage is an unsynced tail or damage to synced data is decided by recovery.ts, which
 * also knows what the next segment's header says (docs/format/raft-log.md, "Recovery").
 */

import { ioError, KvError } from "../../errors.js";
import { type FileSystem, joinPath, type ReadableFile } from "../../vfs/file-system.js";
import { readLogSync } from "../../wal/log-reader.js";
import {
  decodeLogRecord,
  type HeaderRecord,
  type LogRecord,
  logRecordVersion,
  RAFT_LOG_FORMAT_VERSION,
} from "./log-record.js";

/** A decoded record and where it lies in its segment. */
export interface PlacedRecord {
  readonly start: number;
  readonly end: number;
  readonly record: LogRecord;
}

export interface SegmentDamage {
  /** Where the damage starts: the start of the record it hit. */
  readonly offset: number;
  readonly reason: string;
}

export interface ReadSegment {
  readonly name: string;
  readonly seq: number;
  /** Bytes in the file (preallocated zeros included). */
  readonly size: number;
  /** Every decodable record whose framing checks out, in file order, also after damage. */
  readonly records: readonly PlacedRecord[];
  /** The first damage: a dropped region of the framing, or a record that does not decode. */
  readonly damage: SegmentDamage | undefined;
  /** Bytes of the regions the framing dropped. */
  readonly droppedBytes: number;
  /** The highest `syncedEnd` any record claims: bytes before it were synced. */
  readonly maxClaim: number;
  /** The segment's header: its first record, at offset 0, of kind header, with its seq. */
  readonly header: HeaderRecord | undefined;
}

export async function readSegment(
  fs: FileSystem,
  dir: string,
  name: string,
  seq: number,
): Promise<ReadSegment> {
  const path = joinPath(dir, name);
  let file: ReadableFile;
  try {
    file = await fs.openReadable(path);
  } catch (err) {
    throw ioError(`open raft log segment ${path}`, err, path);
  }
  const records: PlacedRecord[] = [];
  let bad: SegmentDamage | undefined;
  let maxClaim = 0;
  try {
    const report = readLogSync(file, "skipCorrupted", (payload, start, end) => {
      const version = logRecordVersion(payload);
      if (version !== undefined && version > RAFT_LOG_FORMAT_VERSION) {
        throw new KvError(
          "CORRUPTION",
          `${path}: record at offset ${start} has raft log format version ${version}; this ` +
            `version reads ${RAFT_LOG_FORMAT_VERSION} (was the log written by a newer KV Engine?)`,
          { file: path },
        );
      }
      let record: LogRecord;
      try {
        record = decodeLogRecord(payload);
      } catch (err) {
        bad ??= {
          offset: start,
          reason: `record at offset ${start} does not decode: ${String((err as Error).message)}`,
        };
        return;
      }
      if (record.syncedEnd > start) {
        bad ??= {
          offset: start,
          reason: `record at offset ${start} claims ${record.syncedEnd} bytes synced before it`,
        };
        return;
      }
      if (record.syncedEnd > maxClaim) maxClaim = record.syncedEnd;
      records.push({ start, end, record });
    });
    const firstDropped = report.dropped[0];
    let damage: SegmentDamage | undefined = firstDropped && {
      offset: firstDropped.offset,
      reason: firstDropped.reason,
    };
    if (bad !== undefined && (damage === undefined || bad.offset < damage.offset)) damage = bad;
    const first = records[0];
    const header =
      first !== undefined &&
      first.start === 0 &&
      first.record.kind === "header" &&
      first.record.seq === seq
        ? first.record
        : undefined;
    let droppedBytes = 0;
    for (const d of report.dropped) droppedBytes += d.bytes;
    return {
      name,
      seq,
      size: file.size,
      records,
      damage,
      droppedBytes,
      maxClaim,
      header,
    };
  } finally {
    await file.close().catch(() => {});
  }
}
