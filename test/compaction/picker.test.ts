import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isBaseLevelForKey } from "../../src/compaction/compaction-iterator.js";
import {
  DEFAULT_MAX_BYTES_FOR_LEVEL_BASE,
  maxBytesForLevel,
  resolveCompactionOptions,
} from "../../src/compaction/options.js";
import {
  compactionEdit,
  compactionJob,
  isTrivialMove,
  levelScores,
  outputNumbersNeeded,
  pickCompaction,
  planRange,
  trivialMoveEdit,
} from "../../src/compaction/picker.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { Version } from "../../src/version/version.js";
import { VersionBuilder } from "../../src/version/version-builder.js";
import { bytes, meta, text } from "./helpers.js";

const MiB = 1024 * 1024;

/** A version from per-level files (level 0 given in any order). */
function version(levels: FileMetadata[][], numLevels = 7): Version {
  const out: FileMetadata[][] = [];
  for (let l = 0; l < numLevels; l++) out.push([...(levels[l] ?? [])]);
  out[0]!.sort((a, b) => b.number - a.number);
  return new Version(out);
}

const numbers = (files: readonly FileMetadata[]) =>
  files.map((f) => f.number).sort((a, b) => a - b);

describe("options", () => {
  test("defaults and level budgets", () => {
    const o = resolveCompactionOptions();
    assert.equal(o.numLevels, 7);
    assert.equal(o.l0CompactionTrigger, 4);
    assert.equal(o.l0SlowdownTrigger, 20);
    assert.equal(o.l0StopTrigger, 36);
    assert.equal(o.levelSizeMultiplier, 10);
    assert.equal(o.maxBytesForLevelBase, DEFAULT_MAX_BYTES_FOR_LEVEL_BASE);
    assert.equal(o.targetFileSize, 2 * MiB);
    assert.equal(o.maxGrandparentOverlapBytes, 20 * MiB);
    assert.equal(maxBytesForLevel(1, o), 10 * MiB);
    assert.equal(maxBytesForLevel(3, o), 1000 * MiB);
  });

  test("bad values are INVALID_ARGUMENT", () => {
    for (const bad of [
      { targetFileSize: 0 },
      { levelSizeMultiplier: 1 },
      { l0CompactionTrigger: 5, l0SlowdownTrigger: 4 },
      { numLevels: 1.5 },
    ]) {
      assert.throws(() => resolveCompactionOptions(bad), { code: "INVALID_ARGUMENT" });
    }
  });
});

describe("levelScores", () => {
  test("level 0 by file count, deeper levels by bytes, last level 0", () => {
    const v = version([
      [meta(1, "a", "b"), meta(2, "a", "b"), meta(3, "a", "b")],
      [meta(10, "a", "z", 15 * MiB)],
      [meta(20, "a", "z", 50 * MiB)],
      [],
      [],
      [],
      [meta(60, "a", "z", 999 * MiB)],
    ]);
    assert.deepEqual(levelScores(v), [0.75, 1.5, 0.5, 0, 0, 0, 0]);
    assert.equal(pickCompaction(v, { l0CompactionTrigger: 8 }, [])?.level, 1);
    assert.equal(pickCompaction(v, { maxBytesForLevelBase: 100 * MiB }, []), undefined);
  });

  test("the highest score wins; ties go to the shallower level", () => {
    const l0 = [1, 2, 3, 4].map((n) => meta(n, "a", "b"));
    const l1 = [meta(10, "c", "d", 10 * MiB)];
    assert.equal(pickCompaction(version([l0, l1]), {}, [])?.level, 0); // 1 vs 1
    const l1big = [meta(10, "c", "d", 11 * MiB)];
    assert.equal(pickCompaction(version([l0, l1big]), {}, [])?.level, 1); // 1 vs 1.1
    assert.equal(pickCompaction(version([l0.slice(1), []]), {}, []), undefined);
  });
});

describe("level-0 compactions", () => {
  test("take every transitively overlapping level-0 file and the overlapping level-1 files", () => {
    const l0 = [meta(1, "a", "c"), meta(2, "c", "e"), meta(3, "e", "g"), meta(4, "x", "z")];
    const l1 = [meta(10, "a", "b"), meta(11, "f", "h"), meta(12, "i", "k"), meta(13, "y", "y")];
    const l2 = [meta(20, "a", "d"), meta(21, "p", "q")];
    const l3 = [meta(30, "b", "b"), meta(31, "h", "h"), meta(32, "z", "zz")];
    const v = version([l0, l1, l2, l3]);
    const plan = pickCompaction(v, {}, [])!;
    assert.equal(plan.reason, "level0");
    assert.equal(plan.level, 0);
    assert.equal(plan.outputLevel, 1);
    assert.equal(plan.score, 1);
    assert.deepEqual(numbers(plan.inputs), [1, 2, 3]);
    assert.deepEqual(numbers(plan.nextInputs), [10, 11]);
    assert.equal(text(plan.smallestKey), "a");
    assert.equal(text(plan.largestKey), "h");
    assert.equal(text(plan.compactPointer), "g");
    assert.deepEqual(numbers(plan.grandparents), [20]);
    // Ranges of levels 2..6 within [a, h]: the grandparent level and below.
    assert.equal(plan.deeperRanges.length, 5);
    assert.deepEqual(
      plan.deeperRanges[1]!.map(([s, l]) => `${text(s)}-${text(l)}`),
      ["b-b", "h-h"],
    );
    assert.equal(isBaseLevelForKey(plan.deeperRanges, bytes("b")), false);
    assert.equal(isBaseLevelForKey(plan.deeperRanges, bytes("c")), false); // file 20 a-d
    assert.equal(isBaseLevelForKey(plan.deeperRanges, bytes("e")), true);
    assert.equal(isBaseLevelForKey(plan.deeperRanges, bytes("h")), false);

    // Round robin: after "g" the next level-0 file by key is x-z.
    const next = pickCompaction(v, {}, [plan.compactPointer])!;
    assert.deepEqual(numbers(next.inputs), [4]);
    assert.deepEqual(numbers(next.nextInputs), [13]);
    // Wrap-around.
    assert.deepEqual(numbers(pickCompaction(v, {}, [bytes("zz")])!.inputs), [1, 2, 3]);
  });

  test("level inputs widen to the level-1 range when that adds no level-1 file", () => {
    // L0 file 3 (d-e) overlaps L1 file 10 (a-f), which spans L0 files 1 (a-b) and 2 (c-c):
    // all three go, since level 1 gains nothing.
    const l0 = [meta(1, "a", "b"), meta(2, "c", "c"), meta(3, "d", "e"), meta(4, "m", "n")];
    const l1 = [meta(10, "a", "f"), meta(11, "g", "z")];
    const v = version([l0, l1]);
    const plan = pickCompaction(v, {}, [bytes("c")])!;
    assert.deepEqual(numbers(plan.inputs), [1, 2, 3]);
    assert.deepEqual(numbers(plan.nextInputs), [10]);
    assert.equal(text(plan.compactPointer), "e");
  });
});

describe("deeper compactions", () => {
  const opts = { maxBytesForLevelBase: 2500 };
  const l1 = [meta(10, "a", "c"), meta(11, "e", "f"), meta(12, "g", "i")];
  const l2 = [meta(20, "a", "b"), meta(21, "c", "d"), meta(22, "h", "k")];

  test("one file, round robin over the key space, plus the overlapping next-level files", () => {
    const v = version([[], l1, l2]);
    const first = pickCompaction(v, opts, [])!;
    assert.equal(first.reason, "size");
    assert.equal(first.level, 1);
    assert.equal(first.score, 3000 / 2500);
    assert.deepEqual(numbers(first.inputs), [10]);
    assert.deepEqual(numbers(first.nextInputs), [20, 21]);
    const second = pickCompaction(v, opts, [undefined, first.compactPointer])!;
    assert.deepEqual(numbers(second.inputs), [11]);
    assert.deepEqual(numbers(second.nextInputs), []);
    const third = pickCompaction(v, opts, [undefined, second.compactPointer])!;
    assert.deepEqual(numbers(third.inputs), [12]);
    assert.deepEqual(numbers(third.nextInputs), [22]);
    const wrapped = pickCompaction(v, opts, [undefined, third.compactPointer])!;
    assert.deepEqual(numbers(wrapped.inputs), [10]);
  });

  test("a file sharing its boundary user key with the next one takes it along", () => {
    const boundary = [
      meta(10, "a", "c", 1000, { largestSeq: 9 }),
      meta(11, "c", "c", 1000, { smallestSeq: 8, largestSeq: 7 }),
      meta(12, "c", "e", 1000, { smallestSeq: 6 }),
      meta(13, "x", "y"),
    ];
    const next = [
      meta(20, "a", "b"),
      meta(21, "b", "f", 1000, { smallestSeq: 4, largestSeq: 5 }),
      meta(22, "f", "h", 1000, { smallestSeq: 4 }),
    ];
    const v = version([[], boundary, next]);
    const plan = pickCompaction(v, opts, [])!;
    assert.deepEqual(numbers(plan.inputs), [10, 11, 12]);
    // Level-2 files overlapping a-e, and 22 (outside a-e) shares "f" with 21.
    assert.deepEqual(numbers(plan.nextInputs), [20, 21, 22]);
  });

  test("the last level is never compacted", () => {
    const v = version([[], [], [meta(20, "a", "z", 10 * MiB)]], 3);
    assert.deepEqual(levelScores(v), [0, 0, 0]);
    assert.equal(planRange(v, 2), undefined);
  });

  test("trivial moves and the installing edits", () => {
    const v = version([[], [meta(10, "a", "c"), meta(11, "m", "n")], [meta(20, "n", "z")]]);
    const plan = pickCompaction(v, { maxBytesForLevelBase: 1500 }, [])!;
    assert.deepEqual(numbers(plan.inputs), [10]);
    assert.equal(plan.nextInputs.length, 0);
    assert.equal(isTrivialMove(plan), true);
    const b = new VersionBuilder(v);
    b.apply(trivialMoveEdit(plan));
    const moved = b.build();
    assert.deepEqual(
      moved.levels.map((files) => numbers(files)),
      [[], [11], [10, 20], [], [], [], []],
    );

    const merge = pickCompaction(v, { maxBytesForLevelBase: 1500 }, [undefined, bytes("c")])!;
    assert.deepEqual(numbers(merge.inputs), [11]);
    assert.deepEqual(numbers(merge.nextInputs), [20]);
    assert.equal(isTrivialMove(merge), false);
    const out = meta(99, "m", "z");
    const b2 = new VersionBuilder(v);
    b2.apply(compactionEdit(merge, [out]));
    assert.deepEqual(
      b2.build().levels.map((files) => numbers(files)),
      [[], [10], [99], [], [], [], []],
    );
  });
});

describe("planRange and jobs", () => {
  test("manual compaction of a key range, in steps of maxCompactionBytes below level 0", () => {
    const l0 = [meta(1, "a", "c"), meta(2, "b", "f"), meta(3, "p", "q")];
    const l1 = [meta(10, "a", "b"), meta(11, "c", "d"), meta(12, "e", "f"), meta(13, "g", "h")];
    const v = version([l0, l1]);
    const p0 = planRange(v, 0, bytes("a"), bytes("b"))!;
    assert.equal(p0.reason, "manual");
    assert.deepEqual(numbers(p0.inputs), [1, 2]);
    assert.deepEqual(numbers(p0.nextInputs), [10, 11, 12]);
    assert.equal(planRange(v, 0, bytes("r")), undefined);
    const all = planRange(v, 1, undefined, undefined, {})!;
    assert.deepEqual(numbers(all.inputs), [10, 11, 12, 13]);
    const step = planRange(v, 1, bytes("c"), undefined, { maxCompactionBytes: 1500 })!;
    assert.deepEqual(numbers(step.inputs), [11, 12]);
    assert.throws(() => planRange(v, 7), RangeError);
  });

  test("the job is plain data that survives structured cloning", () => {
    const l0 = [1, 2, 3, 4].map((n) => meta(n, "a", "k"));
    const v = version([l0, [meta(10, "b", "c")], [meta(20, "a", "z")], [meta(30, "j", "j")]]);
    const plan = pickCompaction(v, {}, [])!;
    const needed = outputNumbersNeeded(plan);
    assert.ok(needed >= 5);
    const job = compactionJob(plan, {
      dir: "/db",
      snapshots: [9, 3],
      outputNumbers: Array.from({ length: needed }, (_, i) => 100 + i),
      tableOptions: { blockSize: 1024 },
      verifyChecksums: true,
    });
    assert.deepEqual(job.snapshots, [3, 9]);
    assert.deepEqual(
      job.inputs.map((i) => [i.level, numbers(i.files)]),
      [
        [0, [1, 2, 3, 4]],
        [1, [10]],
      ],
    );
    assert.deepEqual(numbers(job.grandparents), [20]);
    assert.equal(job.deeperFiles.length, 5);
    assert.deepEqual(structuredClone(job), job);
  });
});
