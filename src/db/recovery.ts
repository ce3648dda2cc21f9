/**
 * Recovery at open: replays the write-ahead logs, oldest first, into a fresh memtable.
 * The logs hold whole write batches (one per record), so a batch is either replayed whole
 * or not at all. What the log reader dropped (a torn tail, or damage it was told to skip)
 * is collected into a report the store exposes as `recovery`.
 *
 * Proof across logs: the store syncs a log before any record goes into a newer one
 * (memtable-flushes.ts switchMemtable; store-open.ts syncs every log it does not reuse).
 * So a version 2 log followed by a log that starts with a readable record was durable
 * whole, and the reader is told so (`syncedEnd: Infinity`): damage anywhere in it is
 * damage to synced data, never a torn tail. Version 1 logs are read as before.
 */

import { validateBatch, visitBatch } from "../batch/write-batch.js";
import { KvError } from "../errors.js";
import { Memtable } from "../memtable/memtable.js";
import { logFilePath } from "../version/file-names.js";
import type { FileSystem } from "../vfs/file-system.js";
import { firstFragmentVersion } from "../wal/fragment-walk.js";
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
   * Framing version of the last good record of the newest log read (undefined: it has
   * none). A log holding version 1 records is not appended to (src/db/open-log.ts).
   */
  lastLogFormat: 1 | 2 | undefined;
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
  let lastLogFormat: 1 | 2 | undefined;
  let stoppedInLog: number | undefined;
  const proven = await provenWhole(fs, dir, logNumbers);
  for (const [i, number] of logNumbers.entries()) {
    const path = logFilePath(dir, number);
    const file = await fs.openReadable(path);
    try {
      const syncedEnd = proven[i] === true ? Number.POSITIVE_INFINITY : 0;
      const result = await readLog(
        file,
        mode,
        (payload, offset) => {
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
        },
        { syncedEnd },
      );
      report.logs.push(number);
      report.tornTailBytes += result.tornTailBytes;
      if (result.tornTailBytes > 0) report.tornTails++;
      for (const d of result.dropped) report.dropped.push({ file: path, ...d });
      lastLogGoodEnd = result.goodEndOffset;
      lastLogFormat = result.formatVersion;
      if (result.stoppedAt !== undefined) stoppedInLog = number;
    } finally {
      await file.close();
    }
    if (stoppedInLog !== undefined) break;
  }
  return { memtable, lastSequence, lastLogGoodEnd, lastLogFormat, stoppedInLog, report };
}

/**
 * For each log, whether it is known durable whole: it starts with a version 2 record and
 * a later log starts with a readable record (see the module comment). Reads one block of
 * each log.
 */
async function provenWhole(
  fs: FileSystem,
  dir: string,
  logNumbers: readonly number[],
): Promise<boolean[]> {
  const firsts: Array<1 | 2 | undefined> = [];
  for (const number of logNumbers) {
    const file = await fs.openReadable(logFilePath(dir, number));
    try {
      firsts.push(firstFragmentVersion(file));
    } finally {
      await file.close();
    }
  }
  const proven: boolean[] = new Array<boolean>(firsts.length).fill(false);
  let laterRecord = false;
  for (let i = firsts.length - 1; i >= 0; i--) {
    proven[i] = laterRecord && firsts[i] === 2;
    if (firsts[i] !== undefined) laterRecord = true;
  }
  return proven;
}
