/**
 * The codecs of data blocks (docs/format/sstable.md, "Block trailer"): how a block's
 * contents are stored under each compression type, and back.
 *
 * - type 1, deflate: raw deflate (RFC 1951), node:zlib.
 * - type 2, lz4: the uncompressed length as a u32 (little-endian), then one LZ4 block
 *   (the LZ4 block format, no frame), lz4-napi (lz4_flex; loaded on first use).
 *
 * `compressBlock` returns the stored body only when it saves at least 1/8 of the bytes
 * (else the block is stored as is, type 0). `decompressBlock` throws CORRUPTION naming the
 * file and block for a body that does not decode, or whose lz4 length is impossible.
 */
import { createRequire } from "node:module";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { getFixed32 } from "../util/coding.js";
import {
  COMPRESSION_DEFLATE,
  COMPRESSION_LZ4,
  type CompressionName,
  type CompressionType,
  corruption,
} from "./format.js";

interface Lz4 {
  compressSync(data: Buffer): Buffer;
  uncompressSync(data: Uint8Array): Buffer;
}

let lz4Module: Lz4 | undefined;

/** lz4-napi, loaded synchronously on first use (block reads are synchronous). */
function lz4(): Lz4 {
  lz4Module ??= createRequire(import.meta.url)("lz4-napi") as Lz4;
  return lz4Module;
}

/** LZ4 expands at most ~255 times (a match of 255+ bytes costs at least one byte). */
const LZ4_MAX_RATIO = 255;
const LZ4_LENGTH_BYTES = 4;

/** Trailer type of each compression option. */
export const COMPRESSION_TYPE_OF: Readonly<
  Record<Exclude<CompressionName, "none">, CompressionType>
> = { deflate: COMPRESSION_DEFLATE, lz4: COMPRESSION_LZ4 };

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}

/**
 * `contents` stored with codec `name`, or undefined when that does not save at least 1/8
 * of its bytes (the block is then stored as is).
 */
export function compressBlock(
  name: Exclude<CompressionName, "none">,
  contents: Uint8Array,
): Uint8Array | undefined {
  const body =
    name === "deflate" ? deflateRawSync(contents) : lz4().compressSync(asBuffer(contents));
  return body.length <= contents.length - contents.length / 8 ? body : undefined;
}

/** Only the bytes of `out`, not the larger buffer it may be a view of. */
function exact(out: Buffer): Uint8Array {
  return out.buffer.byteLength > out.length + 64
    ? new Uint8Array(out)
    : new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/**
 * The contents of a block stored as `body` with compressed `type` (deflate or lz4).
 * Throws CORRUPTION naming `path` and `where` when it does not decode.
 */
export function decompressBlock(
  path: string,
  type: typeof COMPRESSION_DEFLATE | typeof COMPRESSION_LZ4,
  body: Uint8Array,
  where: string,
): Uint8Array {
  try {
    if (type === COMPRESSION_DEFLATE) return exact(inflateRawSync(body));
    // A damaged length (unchecked when verifyChecksums is off) must not allocate gigabytes.
    if (body.length < LZ4_LENGTH_BYTES) throw new Error("lz4 body shorter than its length");
    const length = getFixed32(body, 0);
    if (length > (body.length - LZ4_LENGTH_BYTES) * LZ4_MAX_RATIO + 16) {
      throw new Error(`lz4 length ${length} is impossible for ${body.length} stored bytes`);
    }
    const out = lz4().uncompressSync(body);
    if (out.length !== length) throw new Error(`lz4 gave ${out.length} bytes, not ${length}`);
    return exact(out);
  } catch (err) {
    throw corruption(path, `${where}: cannot decompress: ${(err as Error).message}`, err);
  }
}
