/**
 * Constants of the write-ahead log's record framing (log format versions 1 and 2).
 * The format is specified in docs/format/wal.md; the writer is log-writer.ts and the
 * reader log-reader.ts.
 *
 * Every value here is stored on disk or decides where bytes go on disk: do not change any
 * of them. A change is a new log format version (see docs/format/wal.md, "Versioning").
 */

/**
 * Newest version of the framing described in docs/format/wal.md: the one the store's
 * write-ahead log is written in. The reader reads every version up to it.
 */
export const LOG_FORMAT_VERSION = 2;

/** The framing versions a LogWriter can write. */
export type LogFormatVersion = 1 | 2;

/** The log is a sequence of blocks of this many bytes (32 KiB). Do not change. */
export const BLOCK_SIZE = 32768;

/**
 * Version 1 fragment header: masked CRC32C (4 bytes LE), payload length (2 bytes LE),
 * type (1 byte). Do not change.
 */
export const HEADER_SIZE = 7;

/**
 * Version 2 fragment header: the version 1 header, then synced-end (6 bytes LE): the file
 * offset up to which the log was known durable (fdatasync completed) when the fragment
 * was framed, never past the fragment's own first byte. Do not change.
 */
export const V2_HEADER_SIZE = 13;

/** Bytes of the synced-end field of a version 2 header (a 48-bit offset). */
export const SYNCED_END_SIZE = V2_HEADER_SIZE - HEADER_SIZE;

/** Largest synced-end a version 2 header can hold (2^48 - 1). */
export const MAX_SYNCED_END = 2 ** 48 - 1;

/** Most payload bytes one version 1 fragment can carry (a fragment never crosses a block). */
export const MAX_FRAGMENT_PAYLOAD = BLOCK_SIZE - HEADER_SIZE;

/** Most payload bytes one version 2 fragment can carry. */
export const MAX_V2_FRAGMENT_PAYLOAD = BLOCK_SIZE - V2_HEADER_SIZE;

/**
 * Fragment types. Do not change: stored on disk. 0 is never written (an all-zero header
 * is the end of the log, see docs/format/wal.md) and is invalid, like any value above 9.
 * Types 1..4 are version 1 fragments (7-byte header), 5..8 the same roles in version 2
 * (13-byte header with synced-end), 9 the version 2 sync mark.
 */
/** The whole record in one fragment. */
export const FRAGMENT_FULL = 1;
/** The first fragment of a record that spans blocks. */
export const FRAGMENT_FIRST = 2;
/** An inner fragment of a record that spans more than two blocks. */
export const FRAGMENT_MIDDLE = 3;
/** The last fragment of a record that spans blocks. */
export const FRAGMENT_LAST = 4;
/** Version 2 FULL, FIRST, MIDDLE, LAST: the version 1 type plus this. */
export const V2_TYPE_OFFSET = 4;
export const FRAGMENT_V2_FULL = FRAGMENT_FULL + V2_TYPE_OFFSET;
export const FRAGMENT_V2_FIRST = FRAGMENT_FIRST + V2_TYPE_OFFSET;
export const FRAGMENT_V2_MIDDLE = FRAGMENT_MIDDLE + V2_TYPE_OFFSET;
export const FRAGMENT_V2_LAST = FRAGMENT_LAST + V2_TYPE_OFFSET;
/**
 * Version 2 only: a sync mark, no part of any record, written (with length 0) when a log
 * is closed after its last sync. Its synced-end, its own offset, proves every record
 * before it durable.
 */
export const FRAGMENT_V2_MARK = 9;
/** The role of a sync mark among FULL..LAST (the type minus V2_TYPE_OFFSET). */
export const FRAGMENT_MARK = FRAGMENT_V2_MARK - V2_TYPE_OFFSET;

export type FragmentType =
  | typeof FRAGMENT_FULL
  | typeof FRAGMENT_FIRST
  | typeof FRAGMENT_MIDDLE
  | typeof FRAGMENT_LAST;

/** The framing version of a fragment type byte: 1, 2, or 0 for an invalid type. */
export function fragmentVersion(type: number): 0 | 1 | 2 {
  if (type >= FRAGMENT_FULL && type <= FRAGMENT_LAST) return 1;
  if (type >= FRAGMENT_V2_FULL && type <= FRAGMENT_V2_MARK) return 2;
  return 0;
}

/** Name of a fragment type, for messages ("FULL", ..., "v2 FULL", ..., or "type N"). */
export function fragmentTypeName(type: number): string {
  const version = fragmentVersion(type);
  const role = version === 2 ? type - V2_TYPE_OFFSET : type;
  const prefix = version === 2 ? "v2 " : "";
  switch (role) {
    case FRAGMENT_FULL:
      return `${prefix}FULL`;
    case FRAGMENT_FIRST:
      return `${prefix}FIRST`;
    case FRAGMENT_MIDDLE:
      return `${prefix}MIDDLE`;
    case FRAGMENT_LAST:
      return `${prefix}LAST`;
    case FRAGMENT_MARK:
      return `${prefix}SYNC MARK`;
    default:
      return `type ${type}`;
  }
}
