/**
 * Write-ahead log reader: reads a whole log file (format: docs/format/wal.md, log format
 * version 1) and hands back every complete record payload, classifying any damage as a
 * torn tail or mid-log corruption and acting on it according to the recovery mode.
 *
 * Reading: one 32 KiB block at a time through `ReadableFile.read` into one reused buffer.
 * A fragment's length is checked against the bytes left in its block (and file) before
 * anything is computed or allocated from it, so a damaged length can neither reach past
 * its block nor make the reader allocate more than the file holds.
 *
 * Classification (docs/format/wal.md, "Damage"):
 * - A fragment is *valid* when its header is complete, its length fits in its block, its
 *   masked CRC matches and its type is 1..4.
 * - An all-zero header (or fewer than 7 bytes left in the file, all zero) starts a
 *   candidate end of log. If every byte after it is zero it is the clean end (preallocated
 *   space), never damage. Zeros while a record is still open cut that record: damage.
 * - Any other invalid fragment is damage; the reader drops the rest of its block and tries
 *   the next block boundary. Sequencing errors (MIDDLE/LAST without FIRST, FIRST/FULL while
 *   a record is open) are damage too; their framing is intact, so reading goes on with the
 *   next fragment.
 * - Damage (from the start of the record it hit) is *mid-log corruption* when a valid
 *   fragment starts anywhere after it: proof that the log continues. Otherwise it is a
 *   *torn tail*: its size runs to the last non-zero byte of the file.
 *
 * Records reach `onRecord` as they are read, before damage further on is classified: if
 * readLog throws, the caller must discard what it got.
 */

import { ioError, KvError } from "../errors.js";
import { crc32c, crc32cExtend, unmaskCrc } from "../util/crc32c.js";
import type { ReadableFile } from "../vfs/file-system.js";
import {
  BLOCK_SIZE,
  FRAGMENT_FIRST,
  FRAGMENT_FULL,
  FRAGMENT_LAST,
  FRAGMENT_MIDDLE,
  fragmentTypeName,
  HEADER_SIZE,
} from "./log-format.js";

/**
 * What to do with damage (docs/format/wal.md, "Recovery modes"):
 * - "tolerateTornTail" (default): drop a torn tail silently; throw CORRUPTION on mid-log
 *   corruption.
 * - "absoluteConsistency": throw CORRUPTION on any damage, torn tail included (zeros after
 *   the last record are not damage).
 * - "skipCorrupted": drop every damaged region, keep every record that checks out.
 * - "pointInTime": stop at the first damage, wherever it is, and drop everything from there
 *   on (`stoppedAt`): a prefix of the records, for a log whose tail need not survive (an
 *   unsynced store whose writes another log can replay).
 */
export type WalRecoveryMode =
  | "tolerateTornTail"
  | "absoluteConsistency"
  | "skipCorrupted"
  | "pointInTime";

export const WAL_RECOVERY_MODES: readonly WalRecoveryMode[] = [
  "tolerateTornTail",
  "absoluteConsistency",
  "skipCorrupted",
  "pointInTime",
];

/** A region of the file whose bytes were not returned as records. */
export interface DroppedRegion {
  /** File offset where the region starts (the start of the record the damage hit). */
  offset: number;
  /** Length of the region (a torn tail: up to the last non-zero byte of the file). */
  bytes: number;
  /** Why, e.g. "checksum mismatch in fragment at offset 32768". */
  reason: string;
}

export interface LogReadReport {
  /**
   * Offset just after the last record returned (0 if none): cut the file here before
   * appending again, so nothing of a torn record can end up between old and new records.
   */
  goodEndOffset: number;
  /** Number of records passed to onRecord. */
  records: number;
  /** Bytes of the torn tail that was dropped (0 if none); trailing zeros not counted. */
  tornTailBytes: number;
  /**
   * Every dropped region in file order: the torn tail (if any) and, in skipCorrupted mode,
   * the mid-log regions skipped. Adjacent regions are merged.
   */
  dropped: DroppedRegion[];
  /**
   * pointInTime only: the offset of the damage where reading stopped, when valid log data
   * followed it (it was dropped with everything after it, as one region in `dropped`).
   */
  stoppedAt: number | undefined;
}

/** Thrown inside readLogSync to stop at the first damage (pointInTime). */
const STOP = Symbol("stop");

/**
 * Receives one complete record. `payload` is a fresh copy the callee may keep.
 * `startOffset` is the file offset of its first fragment's header, `endOffset` the offset
 * just after its last fragment.
 */
export type LogRecordCallback = (
  payload: Uint8Array,
  startOffset: number,
  endOffset: number,
) => void;

/** Reads a whole log; see the module comment and docs/format/wal.md. */
export async function readLog(
  file: ReadableFile,
  mode: WalRecoveryMode,
  onRecord: LogRecordCallback,
  options: ReadLogOptions = {},
): Promise<LogReadReport> {
  return readLogSync(file, mode, onRecord, options);
}

interface Damage {
  offset: number;
  reason: string;
  /** A candidate clean end: an all-zero header with no record open. */
  zeros: boolean;
  /** The file ends inside a fragment or record (what an interrupted append leaves). */
  truncated: boolean;
}

export interface ReadLogOptions {
  /**
   * Accept only truncation (the file ending inside the last record) or zeros as a torn
   * tail; a complete last fragment whose checksum fails is CORRUPTION. For logs whose
   * every record was synced before anything relied on it (the manifest), where a bit flip
   * in the last record must not silently drop an acknowledged edit.
   */
  strictTail?: boolean;
}

/** Synchronous form of readLog (the reads are synchronous anyway). */
export function readLogSync(
  file: ReadableFile,
  mode: WalRecoveryMode,
  onRecord: LogRecordCallback,
  options: ReadLogOptions = {},
): LogReadReport {
  if (!WAL_RECOVERY_MODES.includes(mode)) {
    throw new KvError("INVALID_ARGUMENT", `unknown WAL recovery mode ${JSON.stringify(mode)}`, {
      file: file.path,
    });
  }
  const path = file.path;
  let fileSize = file.size;
  const block = new Uint8Array(BLOCK_SIZE);

  // The record being assembled from FIRST/MIDDLE fragments.
  let recordStart = -1;
  let scratch = new Uint8Array(0);
  let scratchLength = 0;

  let damage: Damage | undefined;
  /** Offset just after the last non-zero byte read so far. */
  let lastNonZeroEnd = 0;

  const report: LogReadReport = {
    goodEndOffset: 0,
    records: 0,
    tornTailBytes: 0,
    dropped: [],
    stoppedAt: undefined,
  };

  const drop = (offset: number, bytes: number, reason: string): void => {
    const last = report.dropped[report.dropped.length - 1];
    if (last !== undefined && last.offset + last.bytes === offset) {
      last.bytes += bytes; // e.g. orphaned fragments after damage: one region, first reason
    } else {
      report.dropped.push({ offset, bytes, reason });
    }
  };

  /** Damage at `offset`: the open record (if any) is lost with it. */
  const noteDamage = (offset: number, reason: string, zeros: boolean, truncated = false): void => {
    if (recordStart >= 0) {
      reason = `${reason}, inside the record starting at offset ${recordStart}`;
      offset = recordStart;
      truncated ||= zeros;
      zeros = false;
      recordStart = -1;
      scratchLength = 0;
    }
    if (damage === undefined) damage = { offset, reason, zeros, truncated };
  };

  /** A valid fragment starts at `end`: the pending damage is mid-log corruption. */
  const closeMidLog = (d: Damage, end: number): void => {
    damage = undefined;
    const bytes = end - d.offset;
    const reason = d.reason;
    if (mode === "pointInTime") {
      drop(d.offset, Math.max(lastNonZeroEnd, fileSize) - d.offset, reason);
      report.stoppedAt = d.offset;
      throw STOP;
    }
    if (mode !== "skipCorrupted") {
      throw new KvError(
        "CORRUPTION",
        `${path}: log corrupted at offset ${d.offset}: ${reason}; ${bytes} bytes up to offset ` +
          `${end} would be dropped, and valid log data follows them ` +
          `(recovery mode ${mode}; "skipCorrupted" would skip them)`,
        { file: path },
      );
    }
    drop(d.offset, bytes, reason);
  };

  const emit = (payload: Uint8Array, start: number, end: number): void => {
    report.records++;
    report.goodEndOffset = end;
    onRecord(payload, start, end);
  };

  const appendScratch = (from: number, to: number): void => {
    const need = scratchLength + (to - from);
    if (need > scratch.length) {
      let size = scratch.length === 0 ? BLOCK_SIZE : scratch.length * 2;
      while (size < need) size *= 2;
      const grown = new Uint8Array(size);
      grown.set(scratch.subarray(0, scratchLength));
      scratch = grown;
    }
    scratch.set(block.subarray(from, to), scratchLength);
    scratchLength = need;
  };

  try {
    for (let blockStart = 0; blockStart < fileSize; blockStart += BLOCK_SIZE) {
      const want = Math.min(BLOCK_SIZE, fileSize - blockStart);
      let n: number;
      try {
        n = file.read(block.subarray(0, want), blockStart);
      } catch (err) {
        throw ioError(`read log ${path} at offset ${blockStart}`, err, path);
      }
      if (n < want) fileSize = blockStart + n; // the file shrank since it was opened
      for (let i = n; i > 0; i--) {
        if (block[i - 1] !== 0) {
          lastNonZeroEnd = blockStart + i;
          break;
        }
      }

      let p = 0;
      while (p < n) {
        const offset = blockStart + p;
        const left = n - p;
        if (left < HEADER_SIZE) {
          if (n === BLOCK_SIZE) break; // the block's trailer: skipped unread
          // Fewer than 7 bytes before the end of the file.
          if (isZero(block, p, n))
            noteDamage(offset, `zero-filled region at offset ${offset}`, true);
          else
            noteDamage(
              offset,
              `truncated fragment header (${left} bytes) at end of file`,
              false,
              true,
            );
          break;
        }

        const length = block[p + 4]! | (block[p + 5]! << 8);
        const type = block[p + 6]!;
        let problem: string | undefined;
        if (isZero(block, p, p + HEADER_SIZE)) {
          noteDamage(offset, `zero-filled region at offset ${offset}`, true);
          problem = "zeros";
        } else if (length > left - HEADER_SIZE) {
          const pastEnd = offset + HEADER_SIZE + length > fileSize;
          // A length that runs past the end of the file is what an interrupted append leaves,
          // unless the bytes that are there check out under the real length: then the length
          // field itself was damaged.
          const lengthDamaged = pastEnd && checksOutWithLength(block, p, n - p - HEADER_SIZE);
          const reason = lengthDamaged
            ? `damaged length field in fragment at offset ${offset}`
            : pastEnd
              ? `truncated fragment at offset ${offset}: length ${length} runs past the end of file`
              : `fragment at offset ${offset}: length ${length} exceeds the ` +
                `${left - HEADER_SIZE} bytes left in its block`;
          noteDamage(offset, reason, false, pastEnd && !lengthDamaged);
          problem = reason;
        } else if (!fragmentChecksOut(block, p, length)) {
          noteDamage(offset, `checksum mismatch in fragment at offset ${offset}`, false);
          problem = "crc";
        } else if (type < FRAGMENT_FULL || type > FRAGMENT_LAST) {
          noteDamage(offset, `unknown fragment type ${type} at offset ${offset}`, false);
          problem = "type";
        }
        if (problem !== undefined) {
          // Look for valid log data later in this block: records after damage in the same
          // block prove the damage is not a torn tail (and skipCorrupted keeps them).
          const q = resync(block, p + 1, n);
          if (q < 0) break;
          p = q;
          continue;
        }

        // A valid fragment.
        const payloadStart = p + HEADER_SIZE;
        const payloadEnd = payloadStart + length;
        const end = blockStart + payloadEnd;
        if (recordStart >= 0 && (type === FRAGMENT_FULL || type === FRAGMENT_FIRST)) {
          // Only reachable with no pending damage: noteDamage closes the open record.
          damage = {
            offset: recordStart,
            reason:
              `record starting at offset ${recordStart} has no LAST fragment ` +
              `(a ${fragmentTypeName(type)} fragment follows at offset ${offset})`,
            zeros: false,
            truncated: false,
          };
          recordStart = -1;
          scratchLength = 0;
        }
        if (damage !== undefined) closeMidLog(damage, offset);

        switch (type) {
          case FRAGMENT_FULL:
            emit(block.slice(payloadStart, payloadEnd), offset, end);
            break;
          case FRAGMENT_FIRST:
            recordStart = offset;
            scratchLength = 0;
            appendScratch(payloadStart, payloadEnd);
            break;
          case FRAGMENT_MIDDLE:
          case FRAGMENT_LAST:
            if (recordStart < 0) {
              // Orphan: the record's FIRST fragment was lost (or never written).
              noteDamage(
                offset,
                `${fragmentTypeName(type)} fragment at offset ${offset} without a FIRST fragment`,
                false,
              );
            } else {
              appendScratch(payloadStart, payloadEnd);
              if (type === FRAGMENT_LAST) {
                const start = recordStart;
                recordStart = -1;
                emit(scratch.slice(0, scratchLength), start, end);
                scratchLength = 0;
              }
            }
            break;
        }
        p = payloadEnd;
      }
    }
  } catch (err) {
    if (err !== STOP) throw err;
    return report;
  }

  if (recordStart >= 0) {
    // An open record implies no pending damage (noteDamage closes the record).
    damage = {
      offset: recordStart,
      reason: `record starting at offset ${recordStart} has no LAST fragment before the end of file`,
      zeros: false,
      truncated: true,
    };
  }
  const tail = damage;
  if (tail !== undefined && !(tail.zeros && lastNonZeroEnd <= tail.offset)) {
    const bytes = Math.max(0, lastNonZeroEnd - tail.offset);
    const reason = tail.zeros
      ? `non-zero bytes (no valid fragment) after the ${tail.reason}`
      : tail.reason;
    if (
      mode === "absoluteConsistency" ||
      (options.strictTail === true && !tail.truncated && !tail.zeros)
    ) {
      throw new KvError(
        "CORRUPTION",
        `${path}: torn log tail at offset ${tail.offset}: ${reason}; ${bytes} bytes would be ` +
          `dropped (recovery mode absoluteConsistency drops nothing)`,
        { file: path },
      );
    }
    report.tornTailBytes = bytes;
    drop(tail.offset, bytes, reason);
  }
  return report;
}

/** True iff the fragment at p (header complete, `length` payload bytes in the block) has a matching CRC. */
function fragmentChecksOut(block: Uint8Array, p: number, length: number): boolean {
  const stored =
    (block[p]! | (block[p + 1]! << 8) | (block[p + 2]! << 16) | (block[p + 3]! << 24)) >>> 0;
  return unmaskCrc(stored) === crc32c(block, p + 4, p + HEADER_SIZE + length);
}

/** True iff the fragment at p checks out when its length field is taken to be `length`. */
function checksOutWithLength(block: Uint8Array, p: number, length: number): boolean {
  if (length < 0 || length > 0xffff) return false;
  const header = new Uint8Array([length & 0xff, length >>> 8, block[p + 6]!]);
  const stored =
    (block[p]! | (block[p + 1]! << 8) | (block[p + 2]! << 16) | (block[p + 3]! << 24)) >>> 0;
  const crc = crc32cExtend(crc32c(header), block, p + HEADER_SIZE, p + HEADER_SIZE + length);
  return unmaskCrc(stored) === crc;
}

/**
 * The first offset q in [from, n) of the block where a chain of valid fragments starts
 * and runs to the block's end (its zero trailer, the end of the file, or zeros to the end
 * of the block), or -1. Requiring the whole chain makes a false match (bytes inside a
 * payload that happen to look like a fragment) vanishingly unlikely.
 */
function resync(block: Uint8Array, from: number, n: number): number {
  for (let q = from; q + HEADER_SIZE <= n; q++) {
    const type = block[q + 6]!;
    if (type < FRAGMENT_FULL || type > FRAGMENT_LAST) continue;
    if (chainChecksOut(block, q, n)) return q;
  }
  return -1;
}

function chainChecksOut(block: Uint8Array, q: number, n: number): boolean {
  let p = q;
  let fragments = 0;
  for (;;) {
    const left = n - p;
    if (left === 0) return fragments > 0;
    if (left < HEADER_SIZE) return fragments > 0 && (n < BLOCK_SIZE || isZero(block, p, n));
    if (isZero(block, p, p + HEADER_SIZE)) return fragments > 0 && isZero(block, p, n);
    const length = block[p + 4]! | (block[p + 5]! << 8);
    const type = block[p + 6]!;
    if (type < FRAGMENT_FULL || type > FRAGMENT_LAST) return false;
    if (length > left - HEADER_SIZE) return fragments > 0 && n < BLOCK_SIZE; // torn at EOF
    if (!fragmentChecksOut(block, p, length)) return false;
    fragments++;
    p += HEADER_SIZE + length;
  }
}

/** True iff bytes[from, to) are all zero. */
function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}
