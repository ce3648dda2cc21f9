/**
 * SSTable format constants, block handles, block trailers and the footer. The byte layout
 * is specified in docs/format/sstable.md (format version 1); change it only together with
 * that document and TABLE_FORMAT_VERSION.
 *
 * File layout: data blocks, then the filter block (optional), the properties block, the
 * index block, and the fixed-size footer. Every block is followed by a 5-byte trailer:
 * compression type (1 byte) and the masked CRC32C (u32 LE) of the block bytes and the type.
 */
import { KvError } from "../errors.js";
import { getFixed32, getFixed64, putFixed32, putFixed64 } from "../util/coding.js";
import { crc32c, maskCrc, unmaskCrc } from "../util/crc32c.js";

/**
 * The table format this code writes. Version 2 added block type 2 (lz4); a version 1
 * table is read alike (it holds types 0 and 1 only).
 */
export const TABLE_FORMAT_VERSION = 2;
/** The oldest table format this code reads. */
export const MIN_TABLE_FORMAT_VERSION = 1;

/** Bytes after every block: compression type (1) + masked CRC32C (4). */
export const BLOCK_TRAILER_SIZE = 5;

/** Block stored as is. Do not change: stored on disk. */
export const COMPRESSION_NONE = 0;
/** Block stored as raw deflate (RFC 1951, node:zlib deflateRawSync). Stored on disk. */
export const COMPRESSION_DEFLATE = 1;
/** Block stored as u32 length + LZ4 block (block-codec.ts). Format version 2. Stored on disk. */
export const COMPRESSION_LZ4 = 2;
export type CompressionType =
  | typeof COMPRESSION_NONE
  | typeof COMPRESSION_DEFLATE
  | typeof COMPRESSION_LZ4;

/** Names of the compression options, indexed by CompressionType. */
export type CompressionName = "none" | "deflate" | "lz4";

/**
 * The last 8 bytes of every table file: the first 8 bytes of SHA-256 of the ASCII string
 * "kv-engine sstable" (`printf 'kv-engine sstable' | sha256sum`), stored in this order.
 */
export const TABLE_MAGIC: Uint8Array = Uint8Array.of(
  0x14,
  0xdf,
  0x9d,
  0x9b,
  0x65,
  0x92,
  0x78,
  0xdf,
);

/** Bytes of an encoded handle in the footer: fixed64 offset + fixed32 size. */
export const FOOTER_HANDLE_SIZE = 12;
/** Offset of the footer CRC within the footer (it covers the bytes before it). */
export const FOOTER_CRC_OFFSET = 3 * FOOTER_HANDLE_SIZE + 4;
/** Footer size: 3 handles, format version, CRC, magic. */
export const FOOTER_SIZE = FOOTER_CRC_OFFSET + 4 + TABLE_MAGIC.length;

/** Where a block lies in the file: its first byte and its size without the trailer. */
export interface BlockHandle {
  readonly offset: number;
  readonly size: number;
}

export interface Footer {
  readonly index: BlockHandle;
  /** size 0: the table has no filter. */
  readonly filter: BlockHandle;
  readonly properties: BlockHandle;
  readonly formatVersion: number;
}

/** A CORRUPTION error naming the file. */
export function corruption(file: string, message: string, cause?: unknown): KvError {
  return new KvError(
    "CORRUPTION",
    `${file}: ${message}`,
    cause === undefined ? { file } : { file, cause },
  );
}

/**
 * The stored checksum of a block: maskCrc(crc32c(block bytes ‖ type byte)), computed over
 * frame[0, size + 1) where frame[size] is the type byte.
 */
export function blockChecksum(frame: Uint8Array, size: number): number {
  return maskCrc(crc32c(frame, 0, size + 1));
}

/**
 * Fills the trailer of a block laid out in frame[0, size): type at frame[size], checksum
 * at frame[size + 1, size + 5). REQUIRES frame.length >= size + BLOCK_TRAILER_SIZE.
 */
export function writeBlockTrailer(frame: Uint8Array, size: number, type: CompressionType): void {
  frame[size] = type;
  putFixed32(frame, size + 1, blockChecksum(frame, size));
}

/** True iff the trailer at frame[size, size + 5) matches the block bytes before it. */
export function blockTrailerMatches(frame: Uint8Array, size: number): boolean {
  return unmaskCrc(getFixed32(frame, size + 1)) === crc32c(frame, 0, size + 1);
}

/** The footer's bytes (FOOTER_SIZE of them). */
export function encodeFooter(footer: Footer): Uint8Array {
  const out = new Uint8Array(FOOTER_SIZE);
  const handles = [footer.index, footer.filter, footer.properties];
  for (let i = 0; i < handles.length; i++) {
    const h = handles[i]!;
    putFixed64(out, i * FOOTER_HANDLE_SIZE, h.offset);
    putFixed32(out, i * FOOTER_HANDLE_SIZE + 8, h.size);
  }
  putFixed32(out, FOOTER_CRC_OFFSET - 4, footer.formatVersion);
  putFixed32(out, FOOTER_CRC_OFFSET, maskCrc(crc32c(out, 0, FOOTER_CRC_OFFSET)));
  out.set(TABLE_MAGIC, FOOTER_CRC_OFFSET + 4);
  return out;
}

/**
 * Decodes and checks the footer of a table of `fileSize` bytes: magic, CRC, format version,
 * and that every handle (block and trailer) lies before the footer; the index and
 * properties blocks must be present. Throws CORRUPTION naming `file` otherwise.
 */
export function decodeFooter(bytes: Uint8Array, fileSize: number, file: string): Footer {
  if (bytes.length !== FOOTER_SIZE) {
    throw corruption(file, `footer must be ${FOOTER_SIZE} bytes, got ${bytes.length}`);
  }
  for (let i = 0; i < TABLE_MAGIC.length; i++) {
    if (bytes[FOOTER_CRC_OFFSET + 4 + i] !== TABLE_MAGIC[i]) {
      throw corruption(file, "bad magic number: not a table file, or its end is damaged");
    }
  }
  const stored = unmaskCrc(getFixed32(bytes, FOOTER_CRC_OFFSET));
  if (stored !== crc32c(bytes, 0, FOOTER_CRC_OFFSET)) {
    throw corruption(file, "footer checksum mismatch");
  }
  const formatVersion = getFixed32(bytes, FOOTER_CRC_OFFSET - 4);
  if (formatVersion < MIN_TABLE_FORMAT_VERSION || formatVersion > TABLE_FORMAT_VERSION) {
    throw corruption(
      file,
      `unsupported table format version ${formatVersion} (this build reads ${MIN_TABLE_FORMAT_VERSION} to ${TABLE_FORMAT_VERSION})`,
    );
  }
  const footerOffset = fileSize - FOOTER_SIZE;
  const handle = (i: number, name: string, required: boolean): BlockHandle => {
    let offset: number;
    try {
      offset = getFixed64(bytes, i * FOOTER_HANDLE_SIZE);
    } catch (err) {
      throw corruption(file, `${name} block offset out of range`, err);
    }
    const size = getFixed32(bytes, i * FOOTER_HANDLE_SIZE + 8);
    if (required && size === 0) throw corruption(file, `${name} block is missing`);
    if (size > 0 && offset + size + BLOCK_TRAILER_SIZE > footerOffset) {
      throw corruption(
        file,
        `${name} block handle (offset ${offset}, size ${size}) overlaps the footer at ${footerOffset}`,
      );
    }
    return { offset, size };
  };
  return {
    index: handle(0, "index", true),
    filter: handle(1, "filter", false),
    properties: handle(2, "properties", true),
    formatVersion,
  };
}
