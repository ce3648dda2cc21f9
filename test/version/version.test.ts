import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { compareBytes } from "../../src/key/internal-key.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { Version, VersionEditError } from "../../src/version/version.js";
import { VersionBuilder } from "../../src/version/version-builder.js";
import { VersionEdit } from "../../src/version/version-edit.js";
import { rng } from "../support/random.js";
import { bytes, meta } from "./helpers.js";

/** A 7-level version with the given files per level (already in each level's order). */
function version(...levels: FileMetadata[][]): Version {
  const all = [...levels];
  while (all.length < 7) all.push([]);
  return new Version(all);
}

/** Candidates as "level:number" strings. */
function candidates(v: Version, key: string, seq?: number): string[] {
  return v.filesForGet(bytes(key), seq).map(({ level, file }) => `${level}:${file.number}`);
}

function key3(n: number): string {
  return `k${String(n).padStart(3, "0")}`;
}

describe("Version", () => {
  test("level 0 candidates come newest first, and only those whose range holds the key", () => {
    const v = version([meta(9, "a", "m"), meta(7, "k", "z"), meta(4, "c", "f"), meta(2, "a", "z")]);
    assert.deepEqual(candidates(v, "e"), ["0:9", "0:4", "0:2"]);
    assert.deepEqual(candidates(v, "l"), ["0:9", "0:7", "0:2"]);
    assert.deepEqual(candidates(v, "a"), ["0:9", "0:2"]);
    assert.deepEqual(candidates(v, "z"), ["0:7", "0:2"]);
    assert.deepEqual(candidates(v, "0"), []);
  });

  test("each deeper level offers at most the one file whose range holds the key", () => {
    const v = version(
      [meta(20, "d", "d")],
      [meta(5, "a", "c"), meta(6, "e", "g"), meta(7, "i", "k")],
      [],
      [meta(8, "b", "h")],
    );
    assert.deepEqual(candidates(v, "f"), ["1:6", "3:8"]);
    assert.deepEqual(candidates(v, "d"), ["0:20", "3:8"]);
    assert.deepEqual(candidates(v, "a"), ["1:5"]);
    assert.deepEqual(candidates(v, "k"), ["1:7"]);
    assert.deepEqual(candidates(v, "l"), []);
    assert.deepEqual(candidates(v, "h"), ["3:8"]);
  });

  test("binary search over a large level agrees with a linear scan for every key", () => {
    const random = rng(1234);
    const files: FileMetadata[] = [];
    let k = 0;
    for (let n = 1; n <= 200; n++) {
      k += 1 + Math.floor(random() * 3); // gaps between files
      const lo = k;
      k += Math.floor(random() * 4);
      files.push(meta(n, key3(lo), key3(k)));
    }
    const v = version([], [], files);
    for (let i = 0; i <= k + 2; i++) {
      const key = bytes(key3(i));
      const expected = files
        .filter(
          (f) => compareBytes(f.smallestKey, key) <= 0 && compareBytes(key, f.largestKey) <= 0,
        )
        .map((f) => `2:${f.number}`);
      assert.deepEqual(candidates(v, key3(i)), expected, key3(i));
    }
  });

  test("a user key split across two files of a level is looked up in the file its sequence selects", () => {
    // File 1 holds "m" at sequences 90..50, file 2 holds "m" at 40 and below.
    const v = version(
      [],
      [
        meta(1, "a", "m", { smallestSeq: 10, largestSeq: 50 }),
        meta(2, "m", "z", { smallestSeq: 40, largestSeq: 1 }),
      ],
    );
    assert.deepEqual(candidates(v, "m"), ["1:1"]);
    assert.deepEqual(candidates(v, "m", 60), ["1:1"]);
    assert.deepEqual(candidates(v, "m", 50), ["1:1"]);
    assert.deepEqual(candidates(v, "m", 49), ["1:2"]);
    assert.deepEqual(candidates(v, "m", 3), ["1:2"]);
  });

  test("forEachCandidate stops at the first callback that returns true", () => {
    const v = version([meta(3, "a", "z"), meta(2, "a", "z")], [meta(1, "a", "z")]);
    const seen: number[] = [];
    const stopped = v.forEachCandidate(bytes("q"), (file) => {
      seen.push(file.number);
      return file.number === 2;
    });
    assert.equal(stopped, true);
    assert.deepEqual(seen, [3, 2]);
    assert.equal(
      v.forEachCandidate(bytes("q"), () => false),
      false,
    );
  });

  test("overlappingFiles returns the files whose ranges meet [smallest, largest]", () => {
    const v = version(
      [meta(9, "f", "h"), meta(8, "a", "c")],
      [meta(1, "a", "b"), meta(2, "d", "e"), meta(3, "g", "i"), meta(4, "k", "m")],
    );
    const numbers = (files: FileMetadata[]) => files.map((f) => f.number);
    assert.deepEqual(numbers(v.overlappingFiles(1, bytes("c"), bytes("g"))), [2, 3]);
    assert.deepEqual(numbers(v.overlappingFiles(1, bytes("b"), bytes("b"))), [1]);
    assert.deepEqual(numbers(v.overlappingFiles(1, bytes("bb"), bytes("cz"))), []);
    assert.deepEqual(numbers(v.overlappingFiles(1, undefined, bytes("d"))), [1, 2]);
    assert.deepEqual(numbers(v.overlappingFiles(1, bytes("h"), undefined)), [3, 4]);
    assert.deepEqual(numbers(v.overlappingFiles(1, undefined, undefined)), [1, 2, 3, 4]);
    assert.deepEqual(numbers(v.overlappingFiles(0, bytes("c"), bytes("f"))), [9, 8]);
    assert.deepEqual(numbers(v.overlappingFiles(0, bytes("d"), bytes("e"))), []);
    assert.throws(() => v.overlappingFiles(7, undefined, undefined), RangeError);
  });

  test("numFiles, levelBytes, allFiles and the debug text describe the levels", () => {
    const v = version([meta(9, "f", "h", { size: 100 })], [], [meta(1, "a", "b", { size: 5 })]);
    assert.equal(v.numLevels, 7);
    assert.equal(v.numFiles(0), 1);
    assert.equal(v.numFiles(1), 0);
    assert.equal(v.levelBytes(2), 5);
    assert.deepEqual(
      v.allFiles().map(({ level, file }) => [level, file.number]),
      [
        [0, 9],
        [2, 1],
      ],
    );
    assert.equal(
      v.toString(),
      "--- level 0: 1 files, 100 bytes ---\n  9:100[f#10 .. h#5]\n" +
        "--- level 2: 1 files, 5 bytes ---\n  1:5[a#10 .. b#5]",
    );
    assert.equal(Version.empty().toString(), "(no files)");
  });

  test("the constructor rejects overlapping deeper levels, level 0 out of order and duplicates", () => {
    assert.throws(() => version([], [meta(1, "a", "c"), meta(2, "c", "d")]), VersionEditError);
    assert.throws(() => version([], [meta(2, "e", "f"), meta(1, "a", "c")]), VersionEditError);
    assert.throws(() => version([meta(1, "a", "c"), meta(2, "a", "c")]), VersionEditError);
    assert.throws(() => version([meta(2, "a", "c")], [meta(2, "x", "y")]), VersionEditError);
    // Same boundary user key, older sequence in the second file: allowed.
    version([], [meta(1, "a", "c", { largestSeq: 5 }), meta(2, "c", "d", { smallestSeq: 4 })]);
  });

  test("references count up and down; the last unref releases once and calls the hook", () => {
    const released: Version[] = [];
    const v = Version.empty(7, (x) => released.push(x));
    v.ref();
    v.ref();
    v.unref();
    assert.equal(v.refCount, 1);
    assert.deepEqual(released, []);
    v.unref();
    assert.equal(v.isReleased, true);
    assert.deepEqual(released, [v]);
    assert.throws(() => v.ref(), /already released/);
    assert.throws(() => v.unref(), /no reference/);
  });
});

describe("VersionBuilder", () => {
  test("deletions apply before additions, so an edit can move a file down a level", () => {
    const base = version([meta(3, "a", "c")], [meta(1, "x", "y")]);
    const b = new VersionBuilder(base);
    b.apply(new VersionEdit().deleteFile(0, 3).addFile(1, meta(3, "a", "c")));
    const v = b.build();
    assert.deepEqual(
      v.levels.map((files) => files.map((f) => f.number)),
      [[], [3, 1], [], [], [], [], []],
    );
    assert.equal(v.levels[2], base.levels[2], "untouched levels are shared");
  });

  test("files added and then deleted by later edits are gone", () => {
    const b = new VersionBuilder(Version.empty());
    b.apply(new VersionEdit().addFile(0, meta(1, "a", "b")).addFile(0, meta(2, "a", "b")));
    b.apply(new VersionEdit().deleteFile(0, 1));
    assert.deepEqual(
      b.build().levels[0]!.map((f) => f.number),
      [2],
    );
  });

  test("an edit that does not fit throws VersionEditError", () => {
    const base = version([meta(3, "a", "c")], [meta(1, "e", "g")]);
    const cases: Array<[VersionEdit, RegExp]> = [
      [new VersionEdit().deleteFile(0, 99), /no such file/],
      [new VersionEdit().deleteFile(1, 3), /it is at level 0/],
      [new VersionEdit().deleteFile(0, 3).deleteFile(0, 3), /no such file/],
      [new VersionEdit().addFile(2, meta(3, "a", "c")), /already at level 0/],
      [new VersionEdit().addFile(7, meta(4, "a", "c")), /out of range/],
      [new VersionEdit().addFile(0, meta(4, "z", "a")), /sorts after/],
    ];
    for (const [edit, pattern] of cases) {
      const b = new VersionBuilder(base);
      assert.throws(
        () => b.apply(edit),
        (err: unknown) => err instanceof VersionEditError && pattern.test(err.message),
        edit.toString(),
      );
    }
    const b = new VersionBuilder(base);
    b.apply(new VersionEdit().addFile(1, meta(4, "f", "h")));
    assert.throws(() => b.build(), VersionEditError, "overlap in level 1");
  });
});
