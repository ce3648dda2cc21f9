/**
 * Recovery at open: replays the write-ahead logs, oldest first, into a fresh memtable.
 * The logs hold whole write batches (one per record), so a batch is either replayed whole
 * or not at all. What the log reader dropped (a torn tail, or damage it was told to skip)
 * is collected into a report the store exposes as `recovery`.
 */

import { validateBatch, visitBatch } from "../batch/write-batch.js";
import { KvError } from "../errors.js";
import { Memtable } from "../memtable/memtable.js";
import { logFilePath } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import {
  type DroppedRegion as LogRegion,
  readLog,
  type WalRecoveryMode,
} from "../wal/log-reader.js";

/** A region of a log that recovery did not replay: the log reader's region, and its file. */
export interface DroppedRegion extends LogRegion {
  file: string;
}

/** What recovery found; exposed as `store.recovery`. */
export interface RecoveryReport {
  /** Logs replayed, by file number. */
  logs: number[];
  /** Write batches replayed. */
  batches: number;
  /** Entries (puts and deletes) replayed. */
  entries: number;
  /** Bytes of torn tails dropped silently (a crash during an append leaves one). */
  tornTailBytes: number;
  /** Logs that ended in a torn tail (each such tail is the last of its log's `dropped`). */
  tornTails: number;
  /**
   * Regions not replayed, in file order: the torn tails and, only in the skipCorrupted
   * mode, damaged regions skipped before a log's end.
   */
  dropped: DroppedRegion[];
}

export interface RecoveredState {
  memtable: Memtable;
  lastSequence: number;
  /** Offset just after the last good record of the newest log (where appends resume). */
  lastLogGoodEnd: number;
  /**
   * pointInTime only: the log in which replay stopped at damage (`lastLogGoodEnd` is then
   * its good end); the logs after it were not replayed and must be removed.
   */
  stoppedInLog: number | undefined;
  report: RecoveryReport;
}

export async function replayLogs(
  fs: FileSystem,
  dir: string,
  logNumbers: readonly number[],
  mode: WalRecoveryMode,
): Promise<RecoveredState> {
  const memtable = new Memtable();
  const report: RecoveryReport = {
    logs: [],
    batches: 0,
    entries: 0,
    tornTailBytes: 0,
    tornTails: 0,
    dropped: [],
  };
  let lastSequence = 0;
  let lastLogGoodEnd = 0;
  let stoppedInLog: number | undefined;
  for (const number of logNumbers) {
    const path = logFilePath(dir, number);
    const file = await fs.openReadable(path);
    try {
      const result = await readLog(file, mode, (payload, offset) => {
        try {
          validateBatch(payload);
        } catch (err) {
          // A record whose checksum matched but whose batch does not decode is not a
          // torn write: something wrote bad data. Never guess; report it.
          throw new KvError(
            "CORRUPTION",
            `${path}: record at offset ${offset} holds a malformed batch: ${(err as Error).message}`,
            { file: path, cause: err },
          );
        }
        visitBatch(payload, (seq, kind, rep, keyStart, keyLength, valueStart, valueLength) => {
          memtable.addFrom(seq, kind, rep, keyStart, keyLength, valueStart, valueLength);
          if (seq > lastSequence) lastSequence = seq;
          report.entries++;
        });
        report.batches++;
      });
      report.logs.push(number);
      report.tornTailBytes += result.tornTailBytes;
      if (result.tornTailBytes > 0) report.tornTails++;
      for (const d of result.dropped) report.dropped.push({ file: path, ...d });
      lastLogGoodEnd = result.goodEndOffset;
      if (result.stoppedAt !== undefined) stoppedInLog = number;
    } finally {
      await file.close();
    }
    if (stoppedInLog !== undefined) break;
  }
  return { memtable, lastSequence, lastLogGoodEnd, stoppedInLog, report };
}
