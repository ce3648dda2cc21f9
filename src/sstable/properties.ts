/**
 * Table properties: facts about a table gathered while it is built, stored in its
 * properties block (docs/format/sstable.md, "Properties block") and read once at open.
 *
 * Encoding: a sequence of fields, each `tag:varint` then its value, where
 * tag = field number × 2 + wire type; wire type 0: the value is a varint; wire type 1: the
 * value is `length:varint` then that many bytes. Fields are written in field-number order,
 * each once; a reader skips fields it does not know (by their wire type) so fields can be
 * added without a format version bump, and takes a missing field as 0 (or empty).
 */
import { getVarint, putVarint, type VarintResult, varintLength } from "../util/coding.js";
import { type CompressionName, corruption } from "./format.js";

export interface TableProperties {
  /** Table format version (TABLE_FORMAT_VERSION when written by this code). */
  readonly formatVersion: number;
  /** Entries (puts and tombstones). */
  readonly entries: number;
  /** Deletion entries (tombstones), at most `entries`. */
  readonly tombstones: number;
  /** User key of the first (smallest) entry; empty when the table has no entries. */
  readonly smallestKey: Uint8Array;
  /** Sequence number of the first entry: with smallestKey, the table's smallest bound. */
  readonly smallestKeySeq: number;
  /** User key of the last (largest) entry; empty when the table has no entries. */
  readonly largestKey: Uint8Array;
  /** Sequence number of the last entry: with largestKey, the table's largest bound. */
  readonly largestKeySeq: number;
  /** Smallest sequence number of any entry (0 when there are none). */
  readonly smallestSeq: number;
  /** Largest sequence number of any entry (0 when there are none). */
  readonly largestSeq: number;
  /** Sum of the user-key lengths of all entries (without trailers or prefix compression). */
  readonly rawKeyBytes: number;
  /** Sum of the value lengths of all entries. */
  readonly rawValueBytes: number;
  /** Number of data blocks. */
  readonly dataBlocks: number;
  /** Data blocks stored compressed (compression shrank them by at least 12.5 %). */
  readonly compressedDataBlocks: number;
  /** The compression option the table was written with. */
  readonly compression: CompressionName;
}

// Field numbers. Do not change or reuse: stored on disk.
const F_FORMAT_VERSION = 1;
const F_ENTRIES = 2;
const F_TOMBSTONES = 3;
const F_SMALLEST_KEY = 4;
const F_LARGEST_KEY = 5;
const F_SMALLEST_KEY_SEQ = 6;
const F_LARGEST_KEY_SEQ = 7;
const F_SMALLEST_SEQ = 8;
const F_LARGEST_SEQ = 9;
const F_RAW_KEY_BYTES = 10;
const F_RAW_VALUE_BYTES = 11;
const F_DATA_BLOCKS = 12;
const F_COMPRESSED_DATA_BLOCKS = 13;
const F_COMPRESSION = 14;

const WIRE_VARINT = 0;
const WIRE_BYTES = 1;

/** Compression option codes in field 14. Do not change: stored on disk. */
const COMPRESSION_CODES: readonly CompressionName[] = ["none", "deflate", "lz4"];

type Field = readonly [number, number | Uint8Array];

function fieldsOf(p: TableProperties): Field[] {
  return [
    [F_FORMAT_VERSION, p.formatVersion],
    [F_ENTRIES, p.entries],
    [F_TOMBSTONES, p.tombstones],
    [F_SMALLEST_KEY, p.smallestKey],
    [F_LARGEST_KEY, p.largestKey],
    [F_SMALLEST_KEY_SEQ, p.smallestKeySeq],
    [F_LARGEST_KEY_SEQ, p.largestKeySeq],
    [F_SMALLEST_SEQ, p.smallestSeq],
    [F_LARGEST_SEQ, p.largestSeq],
    [F_RAW_KEY_BYTES, p.rawKeyBytes],
    [F_RAW_VALUE_BYTES, p.rawValueBytes],
    [F_DATA_BLOCKS, p.dataBlocks],
    [F_COMPRESSED_DATA_BLOCKS, p.compressedDataBlocks],
    [F_COMPRESSION, COMPRESSION_CODES.indexOf(p.compression)],
  ];
}

/** The properties block contents. */
export function encodeProperties(p: TableProperties): Uint8Array {
  const fields = fieldsOf(p);
  let size = 0;
  for (const [field, v] of fields) {
    size += varintLength(field * 2 + 1);
    size += typeof v === "number" ? varintLength(v) : varintLength(v.length) + v.length;
  }
  const out = new Uint8Array(size);
  let o = 0;
  for (const [field, v] of fields) {
    if (typeof v === "number") {
      o = putVarint(out, o, field * 2 + WIRE_VARINT);
      o = putVarint(out, o, v);
    } else {
      o = putVarint(out, o, field * 2 + WIRE_BYTES);
      o = putVarint(out, o, v.length);
      out.set(v, o);
      o += v.length;
    }
  }
  return out;
}

/** Decodes a properties block; throws CORRUPTION naming `file` when it is malformed. */
export function decodeProperties(bytes: Uint8Array, file: string): TableProperties {
  const nums = new Map<number, number>();
  const blobs = new Map<number, Uint8Array>();
  const r: VarintResult = { value: 0, offset: 0 };
  let o = 0;
  try {
    while (o < bytes.length) {
      getVarint(bytes, o, r);
      const tag = r.value;
      getVarint(bytes, r.offset, r);
      const field = Math.floor(tag / 2);
      const wire = tag % 2;
      if (wire === WIRE_VARINT) {
        nums.set(field, r.value);
        o = r.offset;
      } else {
        const end = r.offset + r.value;
        if (end > bytes.length) throw new RangeError(`field ${field} runs past the block`);
        blobs.set(field, bytes.slice(r.offset, end));
        o = end;
      }
    }
  } catch (err) {
    throw corruption(file, `bad properties block: ${(err as Error).message}`, err);
  }
  const num = (f: number): number => nums.get(f) ?? 0;
  const compression = COMPRESSION_CODES[num(F_COMPRESSION)];
  if (compression === undefined) {
    throw corruption(file, `properties: unknown compression code ${num(F_COMPRESSION)}`);
  }
  const props: TableProperties = {
    formatVersion: num(F_FORMAT_VERSION),
    entries: num(F_ENTRIES),
    tombstones: num(F_TOMBSTONES),
    smallestKey: blobs.get(F_SMALLEST_KEY) ?? new Uint8Array(0),
    smallestKeySeq: num(F_SMALLEST_KEY_SEQ),
    largestKey: blobs.get(F_LARGEST_KEY) ?? new Uint8Array(0),
    largestKeySeq: num(F_LARGEST_KEY_SEQ),
    smallestSeq: num(F_SMALLEST_SEQ),
    largestSeq: num(F_LARGEST_SEQ),
    rawKeyBytes: num(F_RAW_KEY_BYTES),
    rawValueBytes: num(F_RAW_VALUE_BYTES),
    dataBlocks: num(F_DATA_BLOCKS),
    compressedDataBlocks: num(F_COMPRESSED_DATA_BLOCKS),
    compression,
  };
  if (props.tombstones > props.entries) {
    throw corruption(file, `properties: ${props.tombstones} tombstones > ${props.entries} entries`);
  }
  return props;
}
