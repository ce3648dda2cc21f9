/**
 * Constants of the write-ahead log's record framing (log format version 1).
 * The format is specified in docs/format/wal.md; the writer is log-writer.ts and the
 * reader log-reader.ts.
 *
 * Every value here is stored on disk or decides where bytes go on disk: do not change any
 * of them. A change is a new log format version (see docs/format/wal.md, "Versioning").
 */

/** Version of the framing described in docs/format/wal.md. */
export const LOG_FORMAT_VERSION = 1;

/** The log is a sequence of blocks of this many bytes (32 KiB). Do not change. */
export const BLOCK_SIZE = 32768;

/**
 * Fragment header: masked CRC32C (4 bytes LE), payload length (2 bytes LE), type (1 byte).
 * Do not change.
 */
export const HEADER_SIZE = 7;

/** Most payload bytes one fragment can carry (a fragment never crosses a block). */
export const MAX_FRAGMENT_PAYLOAD = BLOCK_SIZE - HEADER_SIZE;

/**
 * Fragment types. Do not change: stored on disk. 0 is never written (an all-zero header
 * is the end of the log, see docs/format/wal.md) and is invalid, like any value above 4.
 */
/** The whole record in one fragment. */
export const FRAGMENT_FULL = 1;
/** The first fragment of a record that spans blocks. */
export const FRAGMENT_FIRST = 2;
/** An inner fragment of a record that spans more than two blocks. */
export const FRAGMENT_MIDDLE = 3;
/** The last fragment of a record that spans blocks. */
export const FRAGMENT_LAST = 4;

export type FragmentType =
  | typeof FRAGMENT_FULL
  | typeof FRAGMENT_FIRST
  | typeof FRAGMENT_MIDDLE
  | typeof FRAGMENT_LAST;

/** Name of a fragment type, for messages ("FULL", ..., or "type N"). */
export function fragmentTypeName(type: number): string {
  switch (type) {
    case FRAGMENT_FULL:
      return "FULL";
    case FRAGMENT_FIRST:
      return "FIRST";
    case FRAGMENT_MIDDLE:
      return "MIDDLE";
    case FRAGMENT_LAST:
      return "LAST";
    default:
      return `type ${type}`;
  }
}
