/**
 * Write-ahead log reader: reads a whole log file (format: docs/format/wal.md, log format
 * versions 1 and 2) and hands back every complete record payload, classifying any damage
 * as a torn (unsynced) tail or as damage inside the log and acting on it according to the
 * recovery mode. The block walk itself (fragment checks, trailers, resynchronisation) is
 * fragment-walk.ts; this module assembles records and classifies.
 *
 * Classification (docs/format/wal.md, "Reading"):
 * - An all-zero header (or fewer than 7 bytes left in the file, all zero) starts a
 *   candidate end of log. If every byte after it is zero it is the clean end (preallocated
 *   space), never damage. Zeros while a record is still open cut that record: damage.
 * - Any other invalid fragment is damage; so are sequencing errors (MIDDLE/LAST without
 *   FIRST, FIRST/FULL while a record is open). Damage that hits an open record starts at
 *   that record's first fragment.
 * - Damage starting at offset P is *inside the log* (mid-log corruption, damage to synced
 *   data) when proof follows that the log continued past it: a valid version 1 fragment
 *   anywhere after it (version 1 appends reach the disk in order), a valid version 2
 *   fragment after it whose synced-end is past P (it was framed after a datasync through
 *   P completed), or the caller's `syncedEnd` past P. Otherwise it is the *torn tail*: the
 *   unsynced end of the log, which a power loss may leave with holes before later
 *   records; it is dropped with every record after it, and its size runs to the last
 *   non-zero byte of the file.
 *
 * Records reach `onRecord` as they are read, before damage further on is classified: if
 * readLog throws, the caller must discard what it got. When version 2 records follow
 * damage without proving it, the reader looks ahead (a second walk from the damage's
 * block) for a proof before it returns any of them.
 */

import { KvError } from "../errors.js";
import type { ReadableFile } from "../vfs/file-system.js";
import { type FragmentVisitor, type WalkState, walkFragments } from "./fragment-walk.js";
import {
  BLOCK_SIZE,
  FRAGMENT_FIRST,
  FRAGMENT_FULL,
  FRAGMENT_LAST,
  FRAGMENT_MARK,
  FRAGMENT_MIDDLE,
  fragmentTypeName,
  fragmentVersion,
  V2_TYPE_OFFSET,
} from "./log-format.js";

/**
 * What to do with damage (docs/format/wal.md, "Recovery modes"):
 * - "tolerateTornTail" (default): drop a torn tail silently; throw CORRUPTION on damage
 *   inside the log.
 * - "absoluteConsistency": throw CORRUPTION on any damage, torn tail included (zeros after
 *   the last record are not damage).
 * - "skipCorrupted": drop every damaged region, keep every record that checks out before
 *   the torn tail.
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
   * Offset just after the last record returned, or the version 2 sync mark after it (0 if
   * none): cut the file here before appending again, so nothing of a torn record can end
   * up between old and new records.
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
  /** Framing version of the last record returned: 1, 2, or undefined when none was. */
  formatVersion: 1 | 2 | undefined;
}

/** Thrown inside readLogSync to stop at the first damage (pointInTime). */
const STOP = Symbol("stop");
/** Thrown inside readLogSync when the pending damage is the unsynced tail. */
const TAIL = Symbol("tail");

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

export interface ReadLogOptions {
  /**
   * Accept only truncation (the file ending inside the last record) or zeros as a torn
   * tail; a complete last fragment whose checksum fails is CORRUPTION. For logs whose
   * every record was synced before anything relied on it (the manifest), where a bit flip
   * in the last record must not silently drop an acknowledged edit.
   */
  strictTail?: boolean;
  /**
   * The caller's proof that the file is durable before this offset (Infinity: the whole
   * file), as if a record claimed it: damage before it is never a torn tail. The store
   * passes Infinity for a log followed by a newer log holding a record (a log is synced
   * before the next one is written). Default 0.
   */
  syncedEnd?: number;
}

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

/**
 * The version 2 proofs after some offset: every valid fragment from a block on, with the
 * offset it proves durable (Infinity for a version 1 fragment). Found by a second walk.
 */
class Proofs {
  readonly fromBlock: number;
  private readonly offsets: number[] = [];
  private readonly claims: number[] = [];
  /** suffixMax[i]: the largest claim at index i or later. */
  private readonly suffixMax: number[] = [];
  readonly lastNonZeroEnd: number;

  constructor(file: ReadableFile, fileSize: number, fromBlock: number) {
    this.fromBlock = fromBlock;
    const state: WalkState = { fileSize, lastNonZeroEnd: 0 };
    const offsets = this.offsets;
    const claims = this.claims;
    walkFragments(
      file,
      fromBlock,
      {
        fragment(offset, _end, type, syncedEnd) {
          offsets.push(offset);
          claims.push(fragmentVersion(type) === 1 ? Number.POSITIVE_INFINITY : syncedEnd);
        },
        problem() {},
      },
      state,
    );
    this.lastNonZeroEnd = state.lastNonZeroEnd;
    let max = Number.NEGATIVE_INFINITY;
    for (let i = claims.length - 1; i >= 0; i--) {
      if (claims[i]! > max) max = claims[i]!;
      this.suffixMax[i] = max;
    }
  }

  /** The first fragment after `offset` proving `offset` durable, or undefined. */
  after(offset: number): { offset: number; claim: number } | undefined {
    let lo = 0;
    let hi = this.offsets.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.offsets[mid]! > offset) hi = mid;
      else lo = mid + 1;
    }
    if (lo >= this.offsets.length || this.suffixMax[lo]! <= offset) return undefined;
    for (let i = lo; ; i++) {
      if (this.claims[i]! > offset) return { offset: this.offsets[i]!, claim: this.claims[i]! };
    }
  }
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
  const callerSyncedEnd = options.syncedEnd ?? 0;
  const state: WalkState = { fileSize: file.size, lastNonZeroEnd: 0 };

  // The record being assembled from FIRST/MIDDLE fragments.
  let recordStart = -1;
  let recordVersion: 1 | 2 = 1;
  let scratch = new Uint8Array(0);
  let scratchLength = 0;

  let damage: Damage | undefined;
  /** Set when the pending damage turned out to be the unsynced tail (TAIL). */
  let unsyncedTail = false;
  let proofs: Proofs | undefined;

  const report: LogReadReport = {
    goodEndOffset: 0,
    records: 0,
    tornTailBytes: 0,
    dropped: [],
    stoppedAt: undefined,
    formatVersion: undefined,
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

  /**
   * Damage `d` is inside the log and a valid fragment starts at `end`: drop, stop or
   * throw as the mode says. `proof` says why it is not the tail, for the message.
   */
  const closeMidLog = (d: Damage, end: number, proof: string): void => {
    damage = undefined;
    const bytes = end - d.offset;
    const reason = d.reason;
    if (mode === "pointInTime") {
      drop(d.offset, Math.max(state.lastNonZeroEnd, state.fileSize) - d.offset, reason);
      report.stoppedAt = d.offset;
      throw STOP;
    }
    if (mode !== "skipCorrupted") {
      throw new KvError(
        "CORRUPTION",
        `${path}: log corrupted at offset ${d.offset}: ${reason}; ${bytes} bytes up to offset ` +
          `${end} would be dropped, and ${proof} ` +
          `(recovery mode ${mode}; "skipCorrupted" would skip them)`,
        { file: path },
      );
    }
    drop(d.offset, bytes, reason);
  };

  /**
   * A valid fragment of framing `version` claiming `syncedEnd` starts at `offset` while
   * damage `d` is pending: damage inside the log if anything proves the log went on past
   * it, else the unsynced tail (TAIL).
   */
  const resolveDamage = (d: Damage, offset: number, version: 1 | 2, syncedEnd: number): void => {
    if (version === 1) {
      closeMidLog(d, offset, "valid log data follows them");
    } else if (callerSyncedEnd > d.offset) {
      closeMidLog(d, offset, callerProof());
    } else if (syncedEnd > d.offset) {
      closeMidLog(
        d,
        offset,
        `the record at offset ${offset} was written after the log was synced through offset ${syncedEnd}`,
      );
    } else {
      if (proofs === undefined || Math.floor(d.offset / BLOCK_SIZE) < proofs.fromBlock) {
        proofs = new Proofs(file, state.fileSize, Math.floor(d.offset / BLOCK_SIZE));
      }
      const proof = proofs.after(d.offset);
      if (proof === undefined) {
        unsyncedTail = true;
        throw TAIL;
      }
      closeMidLog(
        d,
        offset,
        proof.claim === Number.POSITIVE_INFINITY
          ? `valid log data follows them (at offset ${proof.offset})`
          : `the record at offset ${proof.offset} was written after the log was synced through offset ${proof.claim}`,
      );
    }
  };

  /** Why the caller's syncedEnd proves damage synced, for messages. */
  const callerProof = (): string =>
    callerSyncedEnd === Number.POSITIVE_INFINITY
      ? "the whole log was synced (a newer log holds records)"
      : `the log was synced through offset ${callerSyncedEnd}`;

  const emit = (payload: Uint8Array, start: number, end: number, version: 1 | 2): void => {
    report.records++;
    report.goodEndOffset = end;
    report.formatVersion = version;
    onRecord(payload, start, end);
  };

  const appendScratch = (block: Uint8Array, from: number, to: number): void => {
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

  const visitor: FragmentVisitor = {
    problem(offset, reason, zeros, truncated) {
      noteDamage(offset, reason, zeros, truncated);
    },
    fragment(offset, end, type, syncedEnd, block, payloadStart, payloadEnd) {
      const version = fragmentVersion(type) === 2 ? 2 : 1;
      const role = version === 2 ? type - V2_TYPE_OFFSET : type;
      if (
        recordStart >= 0 &&
        (role === FRAGMENT_FULL || role === FRAGMENT_FIRST || role === FRAGMENT_MARK)
      ) {
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
      if (damage !== undefined) resolveDamage(damage, offset, version, syncedEnd);

      switch (role) {
        case FRAGMENT_MARK:
          // No record: the log is good through it (its claim is what matters).
          report.goodEndOffset = end;
          break;
        case FRAGMENT_FULL:
          emit(block.slice(payloadStart, payloadEnd), offset, end, version);
          break;
        case FRAGMENT_FIRST:
          recordStart = offset;
          recordVersion = version;
          scratchLength = 0;
          appendScratch(block, payloadStart, payloadEnd);
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
            appendScratch(block, payloadStart, payloadEnd);
            if (role === FRAGMENT_LAST) {
              const start = recordStart;
              recordStart = -1;
              emit(scratch.slice(0, scratchLength), start, end, recordVersion);
              scratchLength = 0;
            }
          }
          break;
      }
    },
  };

  try {
    walkFragments(file, 0, visitor, state);
  } catch (err) {
    if (err === STOP) return report;
    if (err !== TAIL) throw err;
  }

  let lastNonZeroEnd = state.lastNonZeroEnd;
  if (unsyncedTail) {
    // Everything from the damage on is the tail, the records after it included.
    lastNonZeroEnd = Math.max(lastNonZeroEnd, proofs!.lastNonZeroEnd);
    recordStart = -1;
    const d = damage!;
    d.reason =
      `${d.reason}; no record after it proves the log synced past offset ${d.offset} ` +
      "(an unsynced tail)";
  } else if (recordStart >= 0) {
    // An open record implies no pending damage (noteDamage closes the record).
    damage = {
      offset: recordStart,
      reason: `record starting at offset ${recordStart} has no LAST fragment before the end of file`,
      zeros: false,
      truncated: true,
    };
  }
  const tail = damage;
  const cleanEnd =
    tail !== undefined && !unsyncedTail && tail.zeros && lastNonZeroEnd <= tail.offset;
  if (tail !== undefined && !cleanEnd) {
    const bytes = Math.max(0, lastNonZeroEnd - tail.offset);
    const reason =
      tail.zeros && !unsyncedTail
        ? `non-zero bytes (no valid fragment) after the ${tail.reason}`
        : tail.reason;
    if (tail.offset < callerSyncedEnd) {
      // Not a tail: the caller knows these bytes were synced.
      if (mode === "pointInTime") {
        drop(tail.offset, Math.max(lastNonZeroEnd, state.fileSize) - tail.offset, reason);
        report.stoppedAt = tail.offset;
        return report;
      }
      if (mode !== "skipCorrupted") {
        throw new KvError(
          "CORRUPTION",
          `${path}: log corrupted at offset ${tail.offset}: ${reason}; ${bytes} bytes would be ` +
            `dropped, and ${callerProof()} ` +
            `(recovery mode ${mode}; "skipCorrupted" would skip them)`,
          { file: path },
        );
      }
      drop(tail.offset, bytes, reason);
      return report;
    }
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
