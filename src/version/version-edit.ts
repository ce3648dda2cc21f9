/**
 * VersionEdit: the difference between two versions (files deleted and added per level)
 * plus the counters recovery needs. The manifest is a log of encoded edits
 * (docs/format/manifest.md): its first edit is a snapshot of a whole version, each later
 * one a change to the version before it.
 *
 * Encoding (manifest format version 1): a sequence of fields, each a varint tag followed
 * by the tag's fields, ended by the END tag (0), which must be the last byte:
 *
 *   edit  := field* END
 *   field := FORMAT_VERSION v | COMPARATOR len bytes | LOG_NUMBER n | NEXT_FILE_NUMBER n
 *          | LAST_SEQUENCE n | DELETED_FILE level number
 *          | NEW_FILE level number size entries tombstones
 *                     smallestKeyLen smallestKey smallestSeq largestKeyLen largestKey largestSeq
 *
 * every number a LEB128 varint below 2^53. The END tag makes every truncation of an edit
 * detectable, even one that falls between two fields.
 *
 * The decoder throws KvError CORRUPTION naming the file for: an unknown tag, a length past
 * the bytes left (checked before anything is sliced), a varint that is truncated or above
 * 2^53 - 1, a scalar field that occurs twice, a missing END or bytes after it, a comparator
 * name that is not UTF-8, a format version it does not know, and file metadata that is not
 * well formed (fileMetadataProblem).
 */
import { KvError } from "../errors.js";
import { formatUserKey } from "../key/internal-key.js";
import { getVarint, putVarint, type VarintResult, varintLength } from "../util/coding.js";
import { type FileMetadata, fileMetadataProblem } from "./file-metadata.js";

/**
 * The manifest format version this build writes; it reads every version from 1 up to it.
 * Stored in every snapshot. Version 2 encodes edits exactly as version 1 and says that the
 * store's write-ahead logs may be in log format version 2 (docs/format/wal.md), which a
 * build that knows only version 1 would take for a torn tail: such a build refuses the
 * manifest instead (docs/format/manifest.md, "Versioning").
 */
export const MANIFEST_FORMAT_VERSION = 2;

/** Name of the (only) key order: bytewise user keys. Stored in every snapshot. */
export const BYTEWISE_COMPARATOR = "kv-engine.BytewiseComparator";

/** Field tags. Do not change: stored on disk (docs/format/manifest.md). */
export const TAG_END = 0;
export const TAG_COMPARATOR = 1;
export const TAG_LOG_NUMBER = 2;
export const TAG_NEXT_FILE_NUMBER = 3;
export const TAG_LAST_SEQUENCE = 4;
export const TAG_DELETED_FILE = 5;
export const TAG_NEW_FILE = 6;
export const TAG_FORMAT_VERSION = 7;

export interface DeletedFile {
  readonly level: number;
  readonly number: number;
}

export interface AddedFile {
  readonly level: number;
  readonly file: FileMetadata;
}

/**
 * A version edit. Every scalar field is optional (undefined: not part of this edit).
 * Deletions apply before additions, so deleting file N from level L and adding N to level
 * L + 1 in one edit moves it.
 */
export class VersionEdit {
  /** Manifest format version; set in snapshots (the first edit of a manifest). */
  formatVersion: number | undefined = undefined;
  /** Name of the key order; set in snapshots. */
  comparatorName: string | undefined = undefined;
  /** Write-ahead logs with a number below this are no longer needed. */
  logNumber: number | undefined = undefined;
  /** The next file number to allocate: every file number in use is below it. */
  nextFileNumber: number | undefined = undefined;
  /** The highest sequence number in use once this edit applies. */
  lastSequence: number | undefined = undefined;
  readonly deletedFiles: DeletedFile[] = [];
  readonly addedFiles: AddedFile[] = [];

  /** Records that file `number` leaves `level`. */
  deleteFile(level: number, number: number): this {
    this.deletedFiles.push({ level, number });
    return this;
  }

  /** Records that `file` joins `level`. */
  addFile(level: number, file: FileMetadata): this {
    this.addedFiles.push({ level, file });
    return this;
  }

  /** A copy (the file metadata objects are shared: they are immutable). */
  clone(): VersionEdit {
    const copy = new VersionEdit();
    copy.formatVersion = this.formatVersion;
    copy.comparatorName = this.comparatorName;
    copy.logNumber = this.logNumber;
    copy.nextFileNumber = this.nextFileNumber;
    copy.lastSequence = this.lastSequence;
    copy.deletedFiles.push(...this.deletedFiles);
    copy.addedFiles.push(...this.addedFiles);
    return copy;
  }

  /** Debug text, one field per line. */
  toString(): string {
    const lines = ["VersionEdit {"];
    if (this.formatVersion !== undefined) lines.push(`  formatVersion: ${this.formatVersion}`);
    if (this.comparatorName !== undefined) lines.push(`  comparator: ${this.comparatorName}`);
    if (this.logNumber !== undefined) lines.push(`  logNumber: ${this.logNumber}`);
    if (this.nextFileNumber !== undefined) lines.push(`  nextFileNumber: ${this.nextFileNumber}`);
    if (this.lastSequence !== undefined) lines.push(`  lastSequence: ${this.lastSequence}`);
    for (const d of this.deletedFiles) lines.push(`  delete: level ${d.level} file ${d.number}`);
    for (const a of this.addedFiles) lines.push(`  add: level ${a.level} ${describeFile(a.file)}`);
    lines.push("}");
    return lines.join("\n");
  }
}

/** `12:4096[apple#5 .. pear#3]`: number, size and key range of a file. */
export function describeFile(file: FileMetadata): string {
  return (
    `${file.number}:${file.size}[${formatUserKey(file.smallestKey)}#${file.smallestSeq} .. ` +
    `${formatUserKey(file.largestKey)}#${file.largestSeq}]`
  );
}

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true });

function checkNumber(v: number, what: string): number {
  if (!Number.isSafeInteger(v) || v < 0) {
    throw new RangeError(`version edit: ${what} must be a non-negative safe integer, got ${v}`);
  }
  return v;
}

/**
 * The encoded edit (see the module comment). Throws RangeError for a number that is not a
 * non-negative safe integer and for malformed file metadata (caller bugs); nothing else.
 */
export function encodeVersionEdit(edit: VersionEdit): Uint8Array {
  const comparator =
    edit.comparatorName === undefined ? undefined : utf8Encoder.encode(edit.comparatorName);
  const scalars: Array<[number, number | undefined, string]> = [
    [TAG_FORMAT_VERSION, edit.formatVersion, "formatVersion"],
    [TAG_LOG_NUMBER, edit.logNumber, "logNumber"],
    [TAG_NEXT_FILE_NUMBER, edit.nextFileNumber, "nextFileNumber"],
    [TAG_LAST_SEQUENCE, edit.lastSequence, "lastSequence"],
  ];
  // Pass 1: validate and size.
  let size = 1; // END
  for (const [, v, what] of scalars) {
    if (v !== undefined) size += 1 + varintLength(checkNumber(v, what));
  }
  if (comparator !== undefined) size += 1 + varintLength(comparator.length) + comparator.length;
  for (const d of edit.deletedFiles) {
    size += 1 + varintLength(checkNumber(d.level, "level"));
    size += varintLength(checkNumber(d.number, "file number"));
  }
  for (const { level, file } of edit.addedFiles) {
    const problem = fileMetadataProblem(file);
    if (problem !== undefined) throw new RangeError(`version edit: ${problem}`);
    size +=
      1 +
      varintLength(checkNumber(level, "level")) +
      varintLength(file.number) +
      varintLength(file.size) +
      varintLength(file.entries) +
      varintLength(file.tombstones) +
      varintLength(file.smallestKey.length) +
      file.smallestKey.length +
      varintLength(file.smallestSeq) +
      varintLength(file.largestKey.length) +
      file.largestKey.length +
      varintLength(file.largestSeq);
  }
  // Pass 2: write, in the documented order.
  const out = new Uint8Array(size);
  let p = 0;
  const [formatVersion, ...counters] = scalars;
  if (formatVersion![1] !== undefined) {
    p = putVarint(out, p, TAG_FORMAT_VERSION);
    p = putVarint(out, p, formatVersion![1]);
  }
  if (comparator !== undefined) {
    p = putVarint(out, p, TAG_COMPARATOR);
    p = putVarint(out, p, comparator.length);
    out.set(comparator, p);
    p += comparator.length;
  }
  for (const [tag, v] of counters) {
    if (v === undefined) continue;
    p = putVarint(out, p, tag);
    p = putVarint(out, p, v);
  }
  for (const d of edit.deletedFiles) {
    p = putVarint(out, p, TAG_DELETED_FILE);
    p = putVarint(out, p, d.level);
    p = putVarint(out, p, d.number);
  }
  for (const { level, file } of edit.addedFiles) {
    p = putVarint(out, p, TAG_NEW_FILE);
    p = putVarint(out, p, level);
    p = putVarint(out, p, file.number);
    p = putVarint(out, p, file.size);
    p = putVarint(out, p, file.entries);
    p = putVarint(out, p, file.tombstones);
    p = putVarint(out, p, file.smallestKey.length);
    out.set(file.smallestKey, p);
    p += file.smallestKey.length;
    p = putVarint(out, p, file.smallestSeq);
    p = putVarint(out, p, file.largestKey.length);
    out.set(file.largestKey, p);
    p += file.largestKey.length;
    p = putVarint(out, p, file.largestSeq);
  }
  out[p++] = TAG_END;
  if (p !== size) throw new Error(`version edit: encoded ${p} bytes, sized ${size}`);
  return out;
}

/** Reads fields from an encoded edit; every failure is CORRUPTION naming the file. */
class EditReader {
  pos = 0;
  private readonly slot: VarintResult = { value: 0, offset: 0 };

  constructor(
    private readonly bytes: Uint8Array,
    private readonly where: string,
    private readonly file: string,
  ) {}

  fail(message: string, at = this.pos): never {
    throw new KvError(
      "CORRUPTION",
      `${this.file}: malformed version edit${this.where}: ${message} (at byte ${at} of ${this.bytes.length})`,
      { file: this.file },
    );
  }

  get left(): number {
    return this.bytes.length - this.pos;
  }

  varint(what: string): number {
    const at = this.pos;
    try {
      getVarint(this.bytes, this.pos, this.slot);
    } catch (err) {
      this.fail(`${what}: ${(err as Error).message}`, at);
    }
    this.pos = this.slot.offset;
    return this.slot.value;
  }

  /** A length-prefixed byte string, as a copy; the length is checked against the bytes left. */
  lengthPrefixed(what: string): Uint8Array {
    const length = this.varint(`${what} length`);
    if (length > this.left) {
      this.fail(`${what} length ${length} exceeds the ${this.left} bytes left`);
    }
    const out = this.bytes.slice(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }
}

/**
 * Decodes one encoded edit (a manifest record). `file` names the manifest in errors;
 * `recordOffset`, when given, is the record's offset in it (also for errors). Throws
 * KvError CORRUPTION for anything malformed (see the module comment). The keys of the
 * decoded file metadata are fresh copies.
 */
export function decodeVersionEdit(
  bytes: Uint8Array,
  file: string,
  recordOffset?: number,
): VersionEdit {
  const where = recordOffset === undefined ? "" : ` in the record at offset ${recordOffset}`;
  const r = new EditReader(bytes, where, file);
  const edit = new VersionEdit();
  const seen = new Set<number>();
  const once = (tag: number, name: string, at: number): void => {
    if (seen.has(tag)) r.fail(`${name} occurs twice`, at);
    seen.add(tag);
  };
  for (;;) {
    if (r.left === 0) r.fail("no end tag (the edit is truncated)");
    const at = r.pos;
    const tag = r.varint("tag");
    switch (tag) {
      case TAG_END:
        if (r.left !== 0) r.fail(`${r.left} bytes after the end tag`);
        return edit;
      case TAG_FORMAT_VERSION: {
        once(tag, "format version", at);
        const v = r.varint("format version");
        if (v < 1 || v > MANIFEST_FORMAT_VERSION) {
          r.fail(
            `unsupported manifest format version ${v} (this build reads ${MANIFEST_FORMAT_VERSION})`,
            at,
          );
        }
        edit.formatVersion = v;
        break;
      }
      case TAG_COMPARATOR: {
        once(tag, "comparator", at);
        const name = r.lengthPrefixed("comparator name");
        try {
          edit.comparatorName = utf8Decoder.decode(name);
        } catch {
          r.fail("comparator name is not UTF-8", at);
        }
        break;
      }
      case TAG_LOG_NUMBER:
        once(tag, "log number", at);
        edit.logNumber = r.varint("log number");
        break;
      case TAG_NEXT_FILE_NUMBER:
        once(tag, "next file number", at);
        edit.nextFileNumber = r.varint("next file number");
        break;
      case TAG_LAST_SEQUENCE:
        once(tag, "last sequence", at);
        edit.lastSequence = r.varint("last sequence");
        break;
      case TAG_DELETED_FILE: {
        const level = r.varint("deleted file level");
        const number = r.varint("deleted file number");
        edit.deletedFiles.push({ level, number });
        break;
      }
      case TAG_NEW_FILE: {
        const level = r.varint("new file level");
        const number = r.varint("new file number");
        const size = r.varint("new file size");
        const entries = r.varint("new file entries");
        const tombstones = r.varint("new file tombstones");
        const smallestKey = r.lengthPrefixed("smallest key");
        const smallestSeq = r.varint("smallest sequence");
        const largestKey = r.lengthPrefixed("largest key");
        const largestSeq = r.varint("largest sequence");
        const meta: FileMetadata = {
          number,
          size,
          smallestKey,
          smallestSeq,
          largestKey,
          largestSeq,
          entries,
          tombstones,
        };
        const problem = fileMetadataProblem(meta);
        if (problem !== undefined) r.fail(`new file: ${problem}`, at);
        edit.addedFiles.push({ level, file: meta });
        break;
      }
      default:
        r.fail(`unknown tag ${tag}`, at);
    }
  }
}
