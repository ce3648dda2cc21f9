/**
 * The fragment walk of the log reader: goes through a log file block by block (format:
 * docs/format/wal.md, versions 1 and 2) and reports each valid fragment and each place
 * where no valid fragment is, with no notion of records or recovery modes (log-reader.ts
 * builds those on top). The walk is a pure function of the file's bytes, so walking from
 * any block boundary visits exactly what a walk from the start visits in those blocks.
 *
 * Reading: one 32 KiB block at a time through `ReadableFile.read` into one reused buffer.
 * A fragment's length is checked against the bytes left in its block (and file) before
 * anything is computed from it, so a damaged length can neither reach past its block nor
 * make the reader allocate anything.
 *
 * A fragment is *valid* when its header is complete (7 bytes for types 1..4, 13 for types
 * 5..8), its length fits in its block, its masked CRC matches, its type is 1..8 and, for
 * version 2, its synced-end does not pass its own offset. After anything else the walk
 * looks for the first later offset in the same block where a chain of valid fragments runs
 * to the block's end, and failing that goes on at the next block boundary.
 *
 * Block trailers: fewer than 7 bytes at the end of a full block are skipped unread; so are
 * fewer than 13 right after a version 2 fragment (a version 2 writer starts no fragment
 * where its 13-byte header does not fit).
 */

import { ioError } from "../errors.js";
import { crc32c, crc32cExtend, unmaskCrc } from "../util/crc32c.js";
import type { ReadableFile } from "../vfs/file-system.js";
import { BLOCK_SIZE, fragmentVersion, HEADER_SIZE, V2_HEADER_SIZE } from "./log-format.js";

/** What the walk reports. Calls come in file order; either may throw to stop the walk. */
export interface FragmentVisitor {
  /**
   * A valid fragment: header at file offset `offset`, ending at `end`; its payload is
   * `block[payloadStart, payloadEnd)`, a reused buffer valid only during the call.
   * `syncedEnd` is the version 2 field (0 for a version 1 fragment).
   */
  fragment(
    offset: number,
    end: number,
    type: number,
    syncedEnd: number,
    block: Uint8Array,
    payloadStart: number,
    payloadEnd: number,
  ): void;
  /**
   * No valid fragment starts at `offset`. `zeros`: an all-zero header (or all-zero bytes
   * too few for a header before the end of the file). `truncated`: the file ends inside
   * the fragment (what an interrupted append leaves).
   */
  problem(offset: number, reason: string, zeros: boolean, truncated: boolean): void;
}

/** Shared with the visitor while the walk runs. */
export interface WalkState {
  /** The file's size; lowered when a read finds the file shorter than at open. */
  fileSize: number;
  /** Offset just after the last non-zero byte read so far. */
  lastNonZeroEnd: number;
}

/** Walks `file` from block `fromBlock` to its end; see the module comment. */
export function walkFragments(
  file: ReadableFile,
  fromBlock: number,
  visitor: FragmentVisitor,
  state: WalkState,
): void {
  const path = file.path;
  const block = new Uint8Array(BLOCK_SIZE);
  for (
    let blockStart = fromBlock * BLOCK_SIZE;
    blockStart < state.fileSize;
    blockStart += BLOCK_SIZE
  ) {
    const want = Math.min(BLOCK_SIZE, state.fileSize - blockStart);
    let n: number;
    try {
      n = file.read(block.subarray(0, want), blockStart);
    } catch (err) {
      throw ioError(`read log ${path} at offset ${blockStart}`, err, path);
    }
    if (n < want) state.fileSize = blockStart + n; // the file shrank since it was opened
    for (let i = n; i > 0; i--) {
      if (block[i - 1] !== 0) {
        if (blockStart + i > state.lastNonZeroEnd) state.lastNonZeroEnd = blockStart + i;
        break;
      }
    }

    let p = 0;
    /** Block offset just after the last valid version 2 fragment (-1: not right here). */
    let v2End = -1;
    while (p < n) {
      const offset = blockStart + p;
      const left = n - p;
      if (n === BLOCK_SIZE && p === v2End && left < V2_HEADER_SIZE) break; // v2 trailer
      if (left < HEADER_SIZE) {
        if (n === BLOCK_SIZE) break; // the block's trailer: skipped unread
        // Fewer than 7 bytes before the end of the file.
        if (isZero(block, p, n))
          visitor.problem(offset, `zero-filled region at offset ${offset}`, true, false);
        else
          visitor.problem(
            offset,
            `truncated fragment header (${left} bytes) at end of file`,
            false,
            true,
          );
        break;
      }

      const length = block[p + 4]! | (block[p + 5]! << 8);
      const type = block[p + 6]!;
      const version = fragmentVersion(type);
      const h = version === 2 ? V2_HEADER_SIZE : HEADER_SIZE;
      let problem = true;
      if (isZero(block, p, p + HEADER_SIZE)) {
        visitor.problem(offset, `zero-filled region at offset ${offset}`, true, false);
      } else if (left < h) {
        if (n < BLOCK_SIZE) {
          visitor.problem(
            offset,
            `truncated fragment header (${left} bytes) at end of file`,
            false,
            true,
          );
        } else {
          visitor.problem(
            offset,
            `fragment at offset ${offset}: its ${h}-byte header exceeds the ${left} bytes left in its block`,
            false,
            false,
          );
        }
      } else if (length > left - h) {
        const pastEnd = offset + h + length > state.fileSize;
        // A length that runs past the end of the file is what an interrupted append leaves,
        // unless the bytes that are there check out under the real length: then the length
        // field itself was damaged.
        const lengthDamaged = pastEnd && checksOutWithLength(block, p, h, n - p - h);
        const reason = lengthDamaged
          ? `damaged length field in fragment at offset ${offset}`
          : pastEnd
            ? `truncated fragment at offset ${offset}: length ${length} runs past the end of file`
            : `fragment at offset ${offset}: length ${length} exceeds the ` +
              `${left - h} bytes left in its block`;
        visitor.problem(offset, reason, false, pastEnd && !lengthDamaged);
      } else if (!fragmentChecksOut(block, p, h, length)) {
        visitor.problem(offset, `checksum mismatch in fragment at offset ${offset}`, false, false);
      } else if (version === 0) {
        visitor.problem(offset, `unknown fragment type ${type} at offset ${offset}`, false, false);
      } else if (version === 2 && readSyncedEnd(block, p) > offset) {
        visitor.problem(
          offset,
          `fragment at offset ${offset} claims the log synced through offset ` +
            `${readSyncedEnd(block, p)}, past its own start`,
          false,
          false,
        );
      } else {
        problem = false;
      }
      if (problem) {
        // Look for valid log data later in this block: records after damage in the same
        // block are proof (or not) that the damage is not a torn tail, and skipCorrupted
        // keeps them.
        const q = resync(block, blockStart, p + 1, n);
        if (q < 0) break;
        p = q;
        v2End = -1;
        continue;
      }

      const payloadStart = p + h;
      const payloadEnd = payloadStart + length;
      visitor.fragment(
        offset,
        blockStart + payloadEnd,
        type,
        version === 2 ? readSyncedEnd(block, p) : 0,
        block,
        payloadStart,
        payloadEnd,
      );
      p = payloadEnd;
      v2End = version === 2 ? p : -1;
    }
  }
}

/**
 * The framing version (1 or 2) of a valid fragment at offset 0 of `file`, or undefined
 * when none starts there (an empty file, zeros, damage). Reads one block.
 */
export function firstFragmentVersion(file: ReadableFile): 1 | 2 | undefined {
  const found = Symbol("found");
  let version: 1 | 2 | undefined;
  try {
    walkFragments(
      file,
      0,
      {
        fragment(offset, _end, type) {
          if (offset === 0) version = fragmentVersion(type) === 2 ? 2 : 1;
          throw found;
        },
        problem() {
          throw found;
        },
      },
      { fileSize: Math.min(file.size, BLOCK_SIZE), lastNonZeroEnd: 0 },
    );
  } catch (err) {
    if (err !== found) throw err;
  }
  return version;
}

/** The synced-end field of the version 2 header at p (48 bits, little-endian). */
export function readSyncedEnd(bytes: Uint8Array, p: number): number {
  const low =
    (bytes[p + 7]! | (bytes[p + 8]! << 8) | (bytes[p + 9]! << 16) | (bytes[p + 10]! << 24)) >>> 0;
  const high = bytes[p + 11]! | (bytes[p + 12]! << 8);
  return high * 0x1_0000_0000 + low;
}

/**
 * True iff the fragment at p (an `h`-byte header complete, `length` payload bytes in the
 * block) has a matching CRC.
 */
function fragmentChecksOut(block: Uint8Array, p: number, h: number, length: number): boolean {
  const stored =
    (block[p]! | (block[p + 1]! << 8) | (block[p + 2]! << 16) | (block[p + 3]! << 24)) >>> 0;
  return unmaskCrc(stored) === crc32c(block, p + 4, p + h + length);
}

/** True iff the fragment at p checks out when its length field is taken to be `length`. */
function checksOutWithLength(block: Uint8Array, p: number, h: number, length: number): boolean {
  if (length < 0 || length > 0xffff) return false;
  const header = block.slice(p + 4, p + h);
  header[0] = length & 0xff;
  header[1] = length >>> 8;
  const stored =
    (block[p]! | (block[p + 1]! << 8) | (block[p + 2]! << 16) | (block[p + 3]! << 24)) >>> 0;
  const crc = crc32cExtend(crc32c(header), block, p + h, p + h + length);
  return unmaskCrc(stored) === crc;
}

/**
 * The first offset q in [from, n) of the block where a chain of valid fragments starts
 * and runs to the block's end (its zero trailer, the end of the file, or zeros to the end
 * of the block), or -1. Requiring the whole chain makes a false match (bytes inside a
 * payload that happen to look like a fragment) vanishingly unlikely.
 */
function resync(block: Uint8Array, blockStart: number, from: number, n: number): number {
  for (let q = from; q + HEADER_SIZE <= n; q++) {
    if (fragmentVersion(block[q + 6]!) === 0) continue;
    if (chainChecksOut(block, blockStart, q, n)) return q;
  }
  return -1;
}

function chainChecksOut(block: Uint8Array, blockStart: number, q: number, n: number): boolean {
  let p = q;
  let fragments = 0;
  let v2End = -1;
  for (;;) {
    const left = n - p;
    if (left === 0) return fragments > 0;
    if (left < HEADER_SIZE || (p === v2End && left < V2_HEADER_SIZE)) {
      return fragments > 0 && (n < BLOCK_SIZE || isZero(block, p, n));
    }
    if (isZero(block, p, p + HEADER_SIZE)) return fragments > 0 && isZero(block, p, n);
    const length = block[p + 4]! | (block[p + 5]! << 8);
    const version = fragmentVersion(block[p + 6]!);
    if (version === 0) return false;
    const h = version === 2 ? V2_HEADER_SIZE : HEADER_SIZE;
    if (left < h || length > left - h) return fragments > 0 && n < BLOCK_SIZE; // torn at EOF
    if (!fragmentChecksOut(block, p, h, length)) return false;
    if (version === 2 && readSyncedEnd(block, p) > blockStart + p) return false;
    fragments++;
    p += h + length;
    v2End = version === 2 ? p : -1;
  }
}

/** True iff bytes[from, to) are all zero. */
export function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}
