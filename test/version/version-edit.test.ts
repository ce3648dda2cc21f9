import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { isKvError } from "../../src/errors.js";
import { putVarint } from "../../src/util/coding.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import {
  BYTEWISE_COMPARATOR,
  decodeVersionEdit,
  encodeVersionEdit,
  MANIFEST_FORMAT_VERSION,
  TAG_COMPARATOR,
  TAG_END,
  TAG_FORMAT_VERSION,
  TAG_LOG_NUMBER,
  TAG_NEW_FILE,
  VersionEdit,
} from "../../src/version/version-edit.js";
import { bytes, docExample, hex, meta } from "./helpers.js";

const FILE = "/db/MANIFEST-000007";

function isCorruption(err: unknown): boolean {
  return isKvError(err, "CORRUPTION") && err.file === FILE;
}

function fullEdit(): VersionEdit {
  const edit = new VersionEdit();
  edit.formatVersion = MANIFEST_FORMAT_VERSION;
  edit.comparatorName = BYTEWISE_COMPARATOR;
  edit.logNumber = 12;
  edit.nextFileNumber = 300;
  edit.lastSequence = 2 ** 40 + 7;
  edit.deleteFile(0, 4).deleteFile(3, 200);
  edit.addFile(1, meta(17, "apple", "pear", { smallestSeq: 99, largestSeq: 3 }));
  edit.addFile(6, {
    number: 2 ** 50,
    size: 2 ** 45,
    smallestKey: new Uint8Array([0, 255, 1]),
    smallestSeq: Number.MAX_SAFE_INTEGER,
    largestKey: new Uint8Array(300).fill(7),
    largestSeq: 0,
    entries: 1e9,
    tombstones: 1e9,
  });
  return edit;
}

/** A plain-object view of an edit, for deepEqual. */
function view(edit: VersionEdit): object {
  return {
    formatVersion: edit.formatVersion,
    comparatorName: edit.comparatorName,
    logNumber: edit.logNumber,
    nextFileNumber: edit.nextFileNumber,
    lastSequence: edit.lastSequence,
    deletedFiles: edit.deletedFiles.map((d) => ({ ...d })),
    addedFiles: edit.addedFiles.map(({ level, file }) => ({
      level,
      file: { ...file, smallestKey: hex(file.smallestKey), largestKey: hex(file.largestKey) },
    })),
  };
}

function expectCorruption(bytesIn: Uint8Array, pattern: RegExp): void {
  assert.throws(
    () => decodeVersionEdit(bytesIn, FILE),
    (err: unknown) => isCorruption(err) && pattern.test((err as Error).message),
  );
}

/** An edit holding just the given raw fields, END appended. */
function raw(...values: number[]): Uint8Array {
  const out = new Uint8Array(values.length * 8 + 1);
  let p = 0;
  for (const v of values) p = putVarint(out, p, v);
  out[p++] = TAG_END;
  return out.slice(0, p);
}

const arbKey = fc.uint8Array({ maxLength: 40 });
const arbCount = fc.oneof(fc.nat({ max: 300 }), fc.maxSafeNat());
const arbFile: fc.Arbitrary<FileMetadata> = fc
  .record({
    number: arbCount,
    size: arbCount,
    a: arbKey,
    b: arbKey,
    seqA: arbCount,
    seqB: arbCount,
    entries: arbCount,
    tombstoneShare: fc.double({ min: 0, max: 1, noNaN: true }),
  })
  .map(({ number, size, a, b, seqA, seqB, entries, tombstoneShare }) => {
    const [lo, hi] = Buffer.compare(a, b) <= 0 ? [a, b] : [b, a];
    const same = Buffer.compare(lo, hi) === 0;
    return {
      number,
      size,
      smallestKey: lo,
      smallestSeq: same ? Math.max(seqA, seqB) : seqA,
      largestKey: hi,
      largestSeq: same ? Math.min(seqA, seqB) : seqB,
      entries,
      tombstones: Math.floor(entries * tombstoneShare),
    };
  });
const arbEdit: fc.Arbitrary<VersionEdit> = fc
  .record({
    formatVersion: fc.option(fc.constant(MANIFEST_FORMAT_VERSION), { nil: undefined }),
    comparatorName: fc.option(fc.string(), { nil: undefined }),
    logNumber: fc.option(arbCount, { nil: undefined }),
    nextFileNumber: fc.option(arbCount, { nil: undefined }),
    lastSequence: fc.option(arbCount, { nil: undefined }),
    deleted: fc.array(fc.tuple(fc.nat({ max: 200 }), arbCount), { maxLength: 5 }),
    added: fc.array(fc.tuple(fc.nat({ max: 200 }), arbFile), { maxLength: 5 }),
  })
  .map((r) => {
    const edit = new VersionEdit();
    edit.formatVersion = r.formatVersion;
    edit.comparatorName = r.comparatorName;
    edit.logNumber = r.logNumber;
    edit.nextFileNumber = r.nextFileNumber;
    edit.lastSequence = r.lastSequence;
    for (const [level, number] of r.deleted) edit.deleteFile(level, number);
    for (const [level, file] of r.added) edit.addFile(level, file);
    return edit;
  });

describe("version edit encoding", () => {
  test("an edit with every field survives an encode/decode round trip", () => {
    const edit = fullEdit();
    const decoded = decodeVersionEdit(encodeVersionEdit(edit), FILE);
    assert.deepEqual(view(decoded), view(edit));
  });

  test("random edits survive an encode/decode round trip", () => {
    fc.assert(
      fc.property(arbEdit, (edit) => {
        assert.deepEqual(view(decodeVersionEdit(encodeVersionEdit(edit), FILE)), view(edit));
      }),
      { numRuns: 300 },
    );
  });

  test("an empty edit is the single end tag", () => {
    const encoded = encodeVersionEdit(new VersionEdit());
    assert.equal(hex(encoded), "00");
    assert.deepEqual(view(decodeVersionEdit(encoded, FILE)), view(new VersionEdit()));
  });

  test("the edit example in docs/format/manifest.md is exactly what the encoder writes", () => {
    const edit = new VersionEdit();
    edit.logNumber = 5;
    edit.nextFileNumber = 9;
    edit.lastSequence = 300;
    edit.deleteFile(0, 3);
    edit.addFile(1, {
      number: 8,
      size: 2048,
      smallestKey: bytes("apple"),
      smallestSeq: 120,
      largestKey: bytes("pear"),
      largestSeq: 7,
      entries: 40,
      tombstones: 2,
    });
    assert.equal(docExample("example-edit"), hex(encodeVersionEdit(edit)));
  });

  test("every truncation of an encoded edit is CORRUPTION naming the file", () => {
    const encoded = encodeVersionEdit(fullEdit());
    for (let n = 0; n < encoded.length; n++) {
      assert.throws(
        () => decodeVersionEdit(encoded.subarray(0, n), FILE),
        isCorruption,
        `truncated to ${n} of ${encoded.length} bytes`,
      );
    }
  });

  test("bytes after the end tag are CORRUPTION", () => {
    const encoded = encodeVersionEdit(fullEdit());
    const longer = new Uint8Array(encoded.length + 1);
    longer.set(encoded);
    expectCorruption(longer, /1 bytes after the end tag/);
  });

  test("an unknown tag is CORRUPTION", () => {
    expectCorruption(raw(99, 1), /unknown tag 99/);
    expectCorruption(raw(8), /unknown tag 8/);
  });

  test("a key length past the bytes left is CORRUPTION, checked before slicing", () => {
    // NEW_FILE level 1, number 2, size 3, entries 4, tombstones 0, smallest key length 2^40.
    expectCorruption(raw(TAG_NEW_FILE, 1, 2, 3, 4, 0, 2 ** 40), /smallest key length .* exceeds/);
    expectCorruption(raw(TAG_COMPARATOR, 50), /comparator name length 50 exceeds/);
  });

  test("a scalar field that occurs twice is CORRUPTION", () => {
    expectCorruption(raw(TAG_LOG_NUMBER, 1, TAG_LOG_NUMBER, 2), /log number occurs twice/);
  });

  test("a newer or zero format version is CORRUPTION that names the version", () => {
    expectCorruption(raw(TAG_FORMAT_VERSION, 3), /unsupported manifest format version 3/);
    expectCorruption(raw(TAG_FORMAT_VERSION, 0), /unsupported manifest format version 0/);
  });

  test("reads format version 1 (a store written before log format version 2)", () => {
    const edit = decodeVersionEdit(raw(TAG_FORMAT_VERSION, 1), FILE);
    assert.equal(edit.formatVersion, 1);
  });

  test("a comparator name that is not UTF-8 is CORRUPTION", () => {
    expectCorruption(new Uint8Array([TAG_COMPARATOR, 2, 0xc3, 0x28, TAG_END]), /not UTF-8/);
  });

  test("a file whose smallest bound sorts after its largest is CORRUPTION", () => {
    const bad = encodeVersionEdit(new VersionEdit().addFile(1, meta(3, "b", "c")));
    // Swap the one-byte keys: "c" .. "b".
    const i = bad.indexOf(0x62);
    const j = bad.indexOf(0x63);
    bad[i] = 0x63;
    bad[j] = 0x62;
    expectCorruption(bad, /smallest key sorts after largest key/);
  });

  test("tombstones above entries are CORRUPTION", () => {
    expectCorruption(raw(TAG_NEW_FILE, 1, 2, 3, 4, 5, 1, 0x61, 1, 1, 0x62, 1), /tombstone/);
  });

  test("a varint above 2^53 - 1 or longer than 8 bytes is CORRUPTION", () => {
    const big = new Uint8Array([TAG_LOG_NUMBER, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0]);
    expectCorruption(big, /log number/);
    const long = new Uint8Array([
      TAG_LOG_NUMBER,
      0x80,
      0x80,
      0x80,
      0x80,
      0x80,
      0x80,
      0x80,
      0x80,
      0,
    ]);
    expectCorruption(long, /longer than 8 bytes/);
  });

  test("the error names the record offset when one is given", () => {
    assert.throws(
      () => decodeVersionEdit(new Uint8Array([99]), FILE, 4242),
      (err: unknown) => isCorruption(err) && /record at offset 4242/.test((err as Error).message),
    );
  });

  test("damaged bytes decode to an edit or throw CORRUPTION, nothing else", () => {
    const encoded = encodeVersionEdit(fullEdit());
    fc.assert(
      fc.property(
        fc.nat({ max: encoded.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        (at, xor) => {
          const damaged = encoded.slice();
          damaged[at]! ^= xor;
          try {
            decodeVersionEdit(damaged, FILE);
          } catch (err) {
            assert.ok(isCorruption(err), String(err));
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  test("encoding rejects numbers that are negative, fractional or unsafe", () => {
    for (const v of [-1, 1.5, 2 ** 53, Number.NaN]) {
      const edit = new VersionEdit();
      edit.logNumber = v;
      assert.throws(() => encodeVersionEdit(edit), RangeError);
    }
    assert.throws(
      () => encodeVersionEdit(new VersionEdit().addFile(0, { ...meta(1, "b", "a") })),
      RangeError,
    );
  });

  test("toString lists every field", () => {
    const text = fullEdit().toString();
    assert.match(text, /logNumber: 12/);
    assert.match(text, /delete: level 3 file 200/);
    assert.match(text, /add: level 1 17:1017\[apple#99 \.\. pear#3\]/);
  });
});
