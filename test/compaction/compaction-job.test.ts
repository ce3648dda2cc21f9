import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  COMPACTION_READAHEAD_BYTES,
  type CompactionJob,
  type CompactionResult,
  runCompaction,
} from "../../src/compaction/compaction-job.js";
import { YIELD_EVERY } from "../../src/compaction/event-loop-yield.js";
import type { CompactionOptions } from "../../src/compaction/options.js";
import { MAX_PENDING_SYNCS } from "../../src/compaction/output-writer.js";
import {
  type CompactionPlan,
  compactionEdit,
  compactionJob,
  isTrivialMove,
  outputNumbersNeeded,
  pickCompaction,
  planRange,
  trivialMoveEdit,
} from "../../src/compaction/picker.js";
import { KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import type { TableOptions } from "../../src/sstable/table-options.js";
import { TableReader } from "../../src/sstable/table-reader.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { tableFilePath } from "../../src/version/file-names.js";
import { Version } from "../../src/version/version.js";
import { VersionBuilder } from "../../src/version/version-builder.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import type { FileSystem } from "../../src/vfs/file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { assertKvError, rejectsWithCode } from "../support/errors.js";
import { eventually, GatedFileSystem, settlesWithin } from "../support/gated-file-system.js";
import {
  compareEntries,
  DIR,
  del,
  type Entry,
  getThroughVersion,
  modelGet,
  put,
  readTable,
  rng,
  show,
  writeTable,
} from "./helpers.js";

const TABLE: TableOptions = { blockSize: 256 };

/** A store's tables: a version, each file's entries, and the next free file number. */
interface Store {
  fs: MemoryFileSystem;
  version: Version;
  contents: Map<number, Entry[]>;
  nextNumber: number;
}

/**
 * Writes `levels[l]` (a list of files, each a list of entries) as tables; level-0 files are
 * given oldest first (they get increasing numbers).
 */
async function makeStore(levels: Entry[][][], numLevels = 7): Promise<Store> {
  const fs = new MemoryFileSystem();
  await fs.mkdir(DIR);
  const contents = new Map<number, Entry[]>();
  const files: FileMetadata[][] = [];
  let number = 1;
  for (let l = 0; l < numLevels; l++) {
    const level: FileMetadata[] = [];
    for (const entries of levels[l] ?? []) {
      const n = number++;
      level.push(await writeTable(fs, DIR, n, entries, TABLE));
      contents.set(n, [...entries]);
    }
    if (l === 0) level.reverse();
    files.push(level);
  }
  return { fs, version: new Version(files), contents, nextNumber: number };
}

function reserve(store: Store, count: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(store.nextNumber++);
  return out;
}

function jobFor(
  store: Store,
  plan: CompactionPlan,
  snapshots: number[] = [],
  options: CompactionOptions = {},
): CompactionJob {
  return compactionJob(plan, {
    dir: DIR,
    snapshots,
    outputNumbers: reserve(store, outputNumbersNeeded(plan, options)),
    tableOptions: TABLE,
    verifyChecksums: true,
    options,
  });
}

/** Installs a finished compaction: new version, contents, input files removed. */
async function install(
  store: Store,
  plan: CompactionPlan,
  result: CompactionResult,
): Promise<void> {
  const b = new VersionBuilder(store.version);
  b.apply(compactionEdit(plan, result.outputs));
  store.version = b.build(); // checks the level invariants
  for (const f of [...plan.inputs, ...plan.nextInputs]) {
    store.contents.delete(f.number);
    await store.fs.remove(tableFilePath(DIR, f.number));
  }
  for (const f of result.outputs) {
    store.contents.set(f.number, await readTable(store.fs, DIR, f.number));
  }
}

function allEntries(store: Store): Entry[] {
  return [...store.contents.values()].flat();
}

/** Every key read at every snapshot (and now) through the version equals the model. */
function checkReads(store: Store, model: readonly Entry[], snapshots: readonly number[]): void {
  const keys = [...new Set(model.map((e) => e.key))];
  for (const seq of [...snapshots, MAX_SEQUENCE]) {
    for (const key of keys) {
      assert.equal(
        getThroughVersion(store.version, store.contents, key, seq),
        modelGet(model, key, seq),
        `get ${key} at ${seq}`,
      );
    }
  }
}

function checkResult(plan: CompactionPlan, result: CompactionResult): void {
  const inputs = [...plan.inputs, ...plan.nextInputs];
  assert.equal(
    result.entriesIn,
    inputs.reduce((n, f) => n + f.entries, 0),
  );
  assert.equal(
    result.bytesRead,
    inputs.reduce((n, f) => n + f.size, 0),
  );
  assert.equal(
    result.entriesIn,
    result.entriesOut + result.droppedVersions + result.droppedTombstones,
  );
  assert.equal(
    result.entriesOut,
    result.outputs.reduce((n, f) => n + f.entries, 0),
  );
  assert.equal(
    result.bytesWritten,
    result.outputs.reduce((n, f) => n + f.size, 0),
  );
  // Sorted, and no two outputs share a user key.
  for (let i = 1; i < result.outputs.length; i++) {
    assert.ok(
      Buffer.compare(result.outputs[i - 1]!.largestKey, result.outputs[i]!.smallestKey) < 0,
    );
  }
}

/** Compacts all of level `level` into the next (a manual compaction) and installs it. */
async function compactLevel(
  store: Store,
  level: number,
  snapshots: number[] = [],
  options: CompactionOptions = {},
): Promise<{ plan: CompactionPlan; result: CompactionResult; outputs: Entry[] }> {
  const plan = planRange(store.version, level, undefined, undefined, options)!;
  const result = await runCompaction(store.fs, jobFor(store, plan, snapshots, options));
  checkResult(plan, result);
  await install(store, plan, result);
  const outputs = result.outputs.flatMap((f) => store.contents.get(f.number)!);
  return { plan, result, outputs };
}

const key = (i: number) => `key${String(i).padStart(6, "0")}`;

describe("merging", () => {
  test("inputs merge into sorted, non-overlapping outputs split at targetFileSize", async () => {
    const r = rng(1);
    const l0: Entry[][] = [];
    let seq = 1;
    for (let f = 0; f < 3; f++) {
      const entries: Entry[] = [];
      for (let i = 0; i < 1000; i++) entries.push(put(key(Math.floor(r() * 2000)), seq++));
      l0.push(entries);
    }
    // Level 1 holds older versions (sequences 1..500) of every fourth key.
    const l1 = [Array.from({ length: 500 }, (_, i) => put(key(i * 4), i + 1))];
    const shifted = l0.map((file) => file.map((e) => put(e.key, e.seq + 1000, e.value)));
    const store = await makeStore([shifted, l1]);
    const model = allEntries(store);
    const before = store.fs.snapshotFiles();
    const options = { targetFileSize: 8192 };
    const plan = planRange(store.version, 0, undefined, undefined, options)!;
    assert.equal(plan.inputs.length, 3);
    assert.equal(plan.nextInputs.length, 1);
    const result = await runCompaction(store.fs, jobFor(store, plan, [], options));
    checkResult(plan, result);
    // Inputs untouched, only the outputs added.
    const after = store.fs.snapshotFiles();
    for (const [path, data] of before) assert.deepEqual(after.get(path), data);
    assert.equal(after.size, before.size + result.outputs.length);
    assert.ok(result.outputs.length >= 5, `${result.outputs.length} outputs`);
    result.outputs.forEach((f, i) => {
      if (i < result.outputs.length - 1) assert.ok(f.size >= 8192, `output ${i}: ${f.size}`);
      // Cut at the first user key after 8 KiB of blocks; filter, index and footer come on top.
      assert.ok(f.size < 8192 + 2048, `output ${i}: ${f.size}`);
    });
    await install(store, plan, result);
    // Newest version of each key, once.
    const outputs = result.outputs.flatMap((f) => store.contents.get(f.number)!);
    const newest = new Map<string, number>();
    for (const e of model) newest.set(e.key, Math.max(newest.get(e.key) ?? 0, e.seq));
    assert.deepEqual(
      outputs.map((e) => `${e.key}#${e.seq}`),
      [...newest].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, s]) => `${k}#${s}`),
    );
    checkReads(store, model, []);
  });

  test("without snapshots only the newest version of each key is kept", async () => {
    const store = await makeStore([
      [
        [put("a", 1), put("b", 2)],
        [put("a", 3), put("c", 4)],
        [put("a", 5), put("b", 6)],
      ],
    ]);
    const { outputs, result } = await compactLevel(store, 0);
    assert.deepEqual(show(outputs), ["a#5", "b#6", "c#4"]);
    assert.equal(result.droppedVersions, 3);
    assert.equal(result.droppedTombstones, 0);
  });
});

describe("snapshots", () => {
  const versions = () => [[put("k", 2), put("k", 4), put("k", 6), put("k", 8), put("k", 10)]];

  test("the newest version visible to each snapshot is kept, the rest dropped", async () => {
    const store = await makeStore([versions()]);
    const model = allEntries(store);
    const { outputs, result } = await compactLevel(store, 0, [3, 7]);
    assert.deepEqual(show(outputs), ["k#10", "k#6", "k#2"]);
    assert.equal(result.droppedVersions, 2);
    checkReads(store, model, [3, 7]);
  });

  test("a snapshot equal to a sequence number sees that entry", async () => {
    const store = await makeStore([versions()]);
    const { outputs } = await compactLevel(store, 0, [4, 8]);
    assert.deepEqual(show(outputs), ["k#10", "k#8", "k#4"]);
  });

  test("a snapshot below every version needs none of them", async () => {
    const store = await makeStore([versions()]);
    const { outputs } = await compactLevel(store, 0, [1]);
    assert.deepEqual(show(outputs), ["k#10"]);
  });
});

describe("tombstones", () => {
  const deleted = () => [[put("a", 1), put("k", 5), put("z", 2)], [del("k", 10)]];

  test("dropped at the base level with the versions they hide", async () => {
    const store = await makeStore([deleted()]);
    const model = allEntries(store);
    const { outputs, result } = await compactLevel(store, 0);
    assert.deepEqual(show(outputs), ["a#1", "z#2"]);
    assert.equal(result.droppedVersions, 1);
    assert.equal(result.droppedTombstones, 1);
    checkReads(store, model, []);
  });

  test("kept while a snapshot sees the value below them", async () => {
    const store = await makeStore([deleted()]);
    const model = allEntries(store);
    const { outputs, result } = await compactLevel(store, 0, [7]);
    assert.deepEqual(show(outputs), ["a#1", "k#10,DEL", "k#5", "z#2"]);
    assert.equal(result.droppedTombstones, 0);
    checkReads(store, model, [7]);
  });

  test("dropped when every snapshot is at or above them", async () => {
    const store = await makeStore([deleted()]);
    const { outputs } = await compactLevel(store, 0, [10, 12]);
    assert.deepEqual(show(outputs), ["a#1", "z#2"]);
  });

  test("kept when a deeper level holds the key", async () => {
    const store = await makeStore([deleted(), [], [[put("k", 0)]]]);
    const model = allEntries(store);
    const { outputs, result } = await compactLevel(store, 0);
    assert.deepEqual(show(outputs), ["a#1", "k#10,DEL", "z#2"]);
    assert.equal(result.droppedVersions, 1);
    assert.equal(result.droppedTombstones, 0);
    checkReads(store, model, []);
  });

  test("kept in a level-1 to level-2 compaction when level 3 holds the key", async () => {
    const store = await makeStore([[], [[del("k", 10)]], [[put("k", 5)]], [[put("k", 1)]]]);
    const { outputs } = await compactLevel(store, 1);
    assert.deepEqual(show(outputs), ["k#10,DEL"]);
    const { outputs: last } = await compactLevel(store, 2);
    assert.deepEqual(show(last), []);
  });

  test("a tombstone followed by an older kept tombstone is redundant", async () => {
    const store = await makeStore([
      [[put("k", 6)], [del("k", 8)], [del("k", 10)]],
      [],
      [[put("k", 1)]],
    ]);
    const model = allEntries(store);
    const { outputs, result } = await compactLevel(store, 0, [7, 9]);
    assert.deepEqual(show(outputs), ["k#8,DEL", "k#6"]);
    assert.equal(result.droppedTombstones, 1);
    checkReads(store, model, [7, 9]);
  });

  test("the oldest tombstone left goes at the base level even above a snapshot", async () => {
    // Snapshot 3 sees nothing of k; readers above 5 see the tombstone: both get "absent".
    const store = await makeStore([[[put("k", 5)], [del("k", 10)]]]);
    const model = allEntries(store);
    const { outputs } = await compactLevel(store, 0, [3, 7]);
    assert.deepEqual(show(outputs), ["k#10,DEL", "k#5"]);
    checkReads(store, model, [3, 7]);
    const store2 = await makeStore([[[del("k", 5)], [put("j", 10)]]]);
    const { outputs: o2 } = await compactLevel(store2, 0, [7]);
    assert.deepEqual(show(o2), ["j#10"]);
  });
});

describe("model", () => {
  /** A random store: one history of writes spread over the levels by age. */
  async function randomStore(seed: number, numLevels: number) {
    const r = rng(seed);
    const n = 1500 + Math.floor(r() * 1500);
    const keys = 100 + Math.floor(r() * 400);
    const history: Entry[] = [];
    for (let seq = 1; seq <= n; seq++) {
      const k = key(Math.floor(r() * keys));
      history.push(r() < 0.25 ? del(k, seq) : put(k, seq, "v".repeat(Math.floor(r() * 40))));
    }
    const cuts = [0.15, 0.35, 0.6].map((x) => Math.floor(x * n));
    const levels: Entry[][][] = [];
    const sortedFiles = (entries: Entry[]) => {
      const sorted = [...entries].sort((a, b) =>
        a.key < b.key ? -1 : a.key > b.key ? 1 : b.seq - a.seq,
      );
      const files: Entry[][] = [];
      for (let i = 0; i < sorted.length; ) {
        const size = 20 + Math.floor(r() * 80);
        files.push(sorted.slice(i, i + size));
        i += size;
      }
      return files;
    };
    // Level 0: four files of the newest writes.
    const newest = history.slice(cuts[2]);
    const l0: Entry[][] = [];
    for (let f = 0; f < 4; f++) {
      l0.push(newest.slice((f * newest.length) / 4, ((f + 1) * newest.length) / 4));
    }
    levels[0] = l0;
    levels[1] = sortedFiles(history.slice(cuts[1], cuts[2]));
    levels[2] = sortedFiles(history.slice(cuts[0], cuts[1]));
    levels[numLevels - 1] = sortedFiles(history.slice(0, cuts[0]));
    const count = seed % 2 === 0 ? 0 : 1 + Math.floor(r() * 4);
    const snapshots = [...new Set(Array.from({ length: count }, () => 1 + Math.floor(r() * n)))];
    snapshots.sort((a, b) => a - b);
    return { store: await makeStore(levels, numLevels), snapshots };
  }

  for (const seed of [1, 2, 3, 4, 5, 6]) {
    test(`picked compactions keep every read at every snapshot (seed ${seed})`, async () => {
      const numLevels = 5;
      const { store, snapshots } = await randomStore(seed, numLevels);
      const model = allEntries(store);
      const options: CompactionOptions = {
        l0CompactionTrigger: 2,
        maxBytesForLevelBase: 3000,
        levelSizeMultiplier: 2,
        targetFileSize: 2048,
        maxGrandparentOverlapBytes: 6000,
      };
      const pointers: (Uint8Array | undefined)[] = [];
      let compactions = 0;
      let moves = 0;
      for (let step = 0; step < 40; step++) {
        const plan = pickCompaction(store.version, options, pointers);
        if (plan === undefined) break;
        pointers[plan.level] = plan.compactPointer;
        if (isTrivialMove(plan, options)) {
          const b = new VersionBuilder(store.version);
          b.apply(trivialMoveEdit(plan));
          store.version = b.build();
          moves++;
        } else {
          const result = await runCompaction(store.fs, jobFor(store, plan, snapshots, options));
          checkResult(plan, result);
          await install(store, plan, result);
          compactions++;
        }
        checkReads(store, model, snapshots);
        // Exactly the version's files are on disk.
        const listed = store.version
          .allFiles()
          .map(({ file }) => tableFilePath(DIR, file.number).slice(1))
          .sort();
        assert.deepEqual([...store.fs.snapshotFiles().keys()], listed);
      }
      assert.ok(compactions >= 3, `${compactions} compactions, ${moves} moves`);
      // Manual compactions push everything to the last level.
      for (let level = 0; level < numLevels - 1; level++) {
        while (planRange(store.version, level, undefined, undefined, options) !== undefined) {
          await compactLevel(store, level, snapshots, options);
          checkReads(store, model, snapshots);
        }
      }
      const last = store.version.levels[numLevels - 1]!.flatMap(
        (f) => store.contents.get(f.number)!,
      );
      assert.equal(allEntries(store).length, last.length);
      if (snapshots.length === 0) {
        // Exactly one live value per key that has one, and no tombstone.
        const live = [...new Set(model.map((e) => e.key))]
          .filter((k) => modelGet(model, k) !== undefined)
          .sort();
        assert.deepEqual(
          last.map((e) => e.key),
          live,
        );
        assert.ok(last.every((e) => e.kind === KIND_PUT));
      }
    });
  }
});

describe("failures", () => {
  async function smallStore(): Promise<Store> {
    const r = rng(7);
    const l0: Entry[][] = [];
    let seq = 100;
    for (let f = 0; f < 3; f++) {
      l0.push(
        Array.from({ length: 80 }, () =>
          r() < 0.2
            ? del(key(Math.floor(r() * 150)), seq++)
            : put(key(Math.floor(r() * 150)), seq++),
        ),
      );
    }
    const l1 = [
      Array.from({ length: 60 }, (_, i) => put(key(i), i + 1)),
      Array.from({ length: 30 }, (_, i) => put(key(70 + i), i + 61)),
    ];
    return makeStore([l0, l1]);
  }
  const options = { targetFileSize: 1024 };

  test("abort stops the job and removes its outputs", async () => {
    const store = await smallStore();
    const before = store.fs.snapshotFiles();
    const plan = planRange(store.version, 0, undefined, undefined, options)!;
    let polls = 0;
    await assert.rejects(
      runCompaction(store.fs, jobFor(store, plan, [], options), { aborted: () => ++polls > 250 }),
      (err: Error & { code?: string }) => err.code === "ABORTED",
    );
    assert.deepEqual(store.fs.snapshotFiles(), before);
    // It had written outputs before stopping.
    const full = await runCompaction(store.fs, jobFor(store, plan, [], options));
    assert.ok(full.outputs.length >= 3);
  });

  test("running out of reserved output numbers is INVALID_ARGUMENT, nothing left behind", async () => {
    const store = await smallStore();
    const before = store.fs.snapshotFiles();
    const plan = planRange(store.version, 0, undefined, undefined, options)!;
    const job = { ...jobFor(store, plan, [], options), outputNumbers: [500] };
    await rejectsWithCode(runCompaction(store.fs, job), "INVALID_ARGUMENT", {
      message: /reserved output file numbers/,
    });
    assert.deepEqual(store.fs.snapshotFiles(), before);
  });

  test("a damaged input is CORRUPTION, nothing left behind", async () => {
    const store = await smallStore();
    const victim = store.version.levels[1]![0]!;
    const path = tableFilePath(DIR, victim.number);
    const data = store.fs.readFile(path);
    data[10] = data[10]! ^ 0xff; // inside the first data block
    store.fs.writeFile(path, data);
    const before = store.fs.snapshotFiles();
    const plan = planRange(store.version, 0, undefined, undefined, options)!;
    await rejectsWithCode(runCompaction(store.fs, jobFor(store, plan, [], options)), "CORRUPTION");
    assert.deepEqual(store.fs.snapshotFiles(), before);
  });

  test("a failure at every file operation fails the job and leaves nothing behind", async () => {
    const store = await smallStore();
    const before = store.fs.snapshotFiles();
    const plan = planRange(store.version, 0, undefined, undefined, options)!;
    const job = jobFor(store, plan, [], options);
    const clean = new FaultInjectingFileSystem(store.fs);
    const expected = await runCompaction(clean, job);
    const totalOps = clean.opCount;
    assert.ok(expected.outputs.length >= 3);
    for (const f of expected.outputs) await store.fs.remove(tableFilePath(DIR, f.number));
    const kinds = new Set<string>();
    let n = 0;
    for (; ; n++) {
      const fs: FileSystem = new FaultInjectingFileSystem(store.fs, {
        injector: FaultInjectingFileSystem.failNth(n),
        onOp: (op, index) => {
          if (index === n) kinds.add(op.kind);
        },
      });
      let result: CompactionResult | undefined;
      try {
        result = await runCompaction(fs, job);
      } catch (err) {
        assertKvError(err, "IO_ERROR", {}, `op ${n}`);
        assert.deepEqual(store.fs.snapshotFiles(), before, `op ${n} left files behind`);
        continue;
      }
      assert.deepEqual(result, expected);
      break;
    }
    assert.equal(n, totalOps);
    for (const kind of [
      "openReadable",
      "read",
      "createWritable",
      "append",
      "sync",
      "close",
      "syncDir",
    ]) {
      assert.ok(kinds.has(kind), `no ${kind} failed`);
    }
  });
});

describe("scheduling", () => {
  test("an inline job yields to the event loop", async () => {
    const entries = Array.from({ length: 3 * YIELD_EVERY }, (_, i) => put(key(i), i + 1));
    const store = await makeStore([[entries.slice(0, 3000), entries.slice(3000)]]);
    let ticks = 0;
    let done = false;
    const tick = () => {
      ticks++;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const plan = planRange(store.version, 0)!;
    const started = ticks;
    const result = await runCompaction(store.fs, jobFor(store, plan));
    done = true;
    assert.equal(result.entriesOut, 3 * YIELD_EVERY);
    assert.ok(ticks - started >= 3, `${ticks - started} event-loop turns during the job`);
  });
});

describe("output syncs", () => {
  test("the merge goes on while outputs sync; the job ends only when all are synced", async () => {
    const entries = Array.from({ length: 4000 }, (_, i) => put(key(i), i + 1));
    const store = await makeStore([[entries.slice(0, 2000), entries.slice(2000)]]);
    const plan = planRange(store.version, 0)!;
    const fs = new GatedFileSystem(store.fs);
    fs.hold();
    let finished = false;
    const job = runCompaction(fs, jobFor(store, plan, [], { targetFileSize: 4096 })).then(
      (result) => {
        finished = true;
        return result;
      },
    );
    // With every output's sync held, the merge writes MAX_PENDING_SYNCS + 1 outputs
    // (their syncs all waiting) and then waits for the oldest.
    assert.ok(await eventually(() => fs.waiting === MAX_PENDING_SYNCS + 1, 5000));
    assert.equal(await settlesWithin(job, 200), false, "the job waits for the held syncs");
    assert.equal(fs.waiting, MAX_PENDING_SYNCS + 1);
    assert.equal(finished, false);
    fs.release();
    const result = await job;
    assert.ok(result.outputs.length > MAX_PENDING_SYNCS + 1, `${result.outputs.length} outputs`);
    assert.equal(fs.arrived, result.outputs.length, "every output was synced");
    checkResult(plan, result);
  });

  test("a failed background sync fails the job and removes every output", async () => {
    const entries = Array.from({ length: 4000 }, (_, i) => put(key(i), i + 1));
    const store = await makeStore([[entries.slice(0, 2000), entries.slice(2000)]]);
    const before = store.fs.snapshotFiles();
    const plan = planRange(store.version, 0)!;
    const fs = new GatedFileSystem(store.fs);
    fs.hold();
    const job = runCompaction(fs, jobFor(store, plan, [], { targetFileSize: 4096 }));
    assert.ok(await eventually(() => fs.waiting >= 2, 5000));
    fs.fail(new Error("injected sync failure"));
    await rejectsWithCode(job, "IO_ERROR", { message: /sync compaction output/ });
    assert.deepEqual(store.fs.snapshotFiles(), before);
  });
});

describe("input reads", () => {
  test("each input's data blocks are read ahead in a few large reads", async () => {
    // Three inputs of ~300-400 KiB in 256-byte blocks: more than one chunk each.
    const n = 12_000;
    const files = [0, 1, 2].map((f) =>
      Array.from({ length: n }, (_, i) => put(key(i * 3 + (f % 2)), f * n + i + 1)),
    );
    // Level 1 holds the oldest file; the newer level-0 file f = 2 rewrites its keys.
    const store = await makeStore([[files[1]!, files[2]!], [files[0]!]]);
    const newest = new Map<string, Entry>();
    for (const e of allEntries(store)) {
      if ((newest.get(e.key)?.seq ?? -1) < e.seq) newest.set(e.key, e);
    }
    const plan = planRange(store.version, 0)!;
    const inputs = [...plan.inputs, ...plan.nextInputs];
    assert.equal(inputs.length, 3);
    const fs = new FaultInjectingFileSystem(store.fs, { keepLog: true });
    const result = await runCompaction(fs, jobFor(store, plan));
    checkResult(plan, result);
    for (const f of inputs) {
      const path = tableFilePath(DIR, f.number);
      const reader = TableReader.open(await store.fs.openReadable(path), f.number);
      const blocks = reader.index.count;
      await reader.close();
      const reads = fs.log.filter((op) => op.kind === "read" && op.path === path).length;
      // Footer, index, filter and properties, then whole chunks of up to 256 KiB.
      const chunks = Math.ceil(f.size / (COMPACTION_READAHEAD_BYTES / 2));
      assert.ok(f.size > COMPACTION_READAHEAD_BYTES, `${f.size} bytes`);
      assert.ok(reads <= 4 + chunks, `${reads} reads of ${path}`);
      assert.ok(blocks > 100 * chunks, `${blocks} data blocks`);
    }
    const outputs: Entry[] = [];
    for (const f of result.outputs) outputs.push(...(await readTable(store.fs, DIR, f.number)));
    assert.deepEqual(show(outputs), show([...newest.values()].sort(compareEntries)));
  });
});
