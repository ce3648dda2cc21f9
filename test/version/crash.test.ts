/**
 * Crash points and injected errors in the manifest protocol (reliability guide, storage
 * tests 4 and 5). One workload: create a store, apply edits (some issued concurrently, with
 * manifest rollovers), close, recover (which writes a new manifest and swaps CURRENT), apply
 * more edits, close.
 *
 * - Power loss: the memory file system is crash-cloned before EVERY file operation of the
 *   workload (keeping 0%, 50% or 100% of the unsynced changes; appends survive as a prefix).
 *   Each clone must recover, and hold exactly the state after k edits for some k between
 *   the edits acknowledged before the crash and the edits issued: every acknowledged edit,
 *   nothing that was never issued, and no partial edit.
 * - Errors: operation #n of the workload fails, for every n. The workload ends in an
 *   IO_ERROR or succeeds, and reopening the (uncrashed) directory gives the same guarantee.
 *
 * A failure prints the seed; KV_SEED=<seed> replays it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { parseFileName } from "../../src/version/file-names.js";
import { Version } from "../../src/version/version.js";
import { VersionBuilder } from "../../src/version/version-builder.js";
import { VersionEdit } from "../../src/version/version-edit.js";
import { VersionSet, type VersionSetOptions } from "../../src/version/version-set.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import type { FileSystem } from "../../src/vfs/file-system.js";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { DIR, describeSet, memoryDir, meta } from "./helpers.js";

/** Small enough that the workload rolls the manifest over several times. */
const OPTIONS: VersionSetOptions = { maxManifestBytes: 300 };

const dec = new TextDecoder();

/** The expected state after each issued edit, computed without a VersionSet. */
class Model {
  version = Version.empty();
  logNumber = 0;
  lastSequence = 0;
  /** states[k]: describeSet after the first k edits (states[0]: a new store). */
  readonly states: string[] = [this.describe()];

  apply(edit: VersionEdit): void {
    const builder = new VersionBuilder(this.version);
    builder.apply(edit);
    this.version = builder.build();
    this.logNumber = edit.logNumber ?? this.logNumber;
    this.lastSequence = edit.lastSequence ?? this.lastSequence;
    this.states.push(this.describe());
  }

  describe(): string {
    return `${this.version.toString()}\nlogNumber ${this.logNumber}, lastSequence ${this.lastSequence}`;
  }
}

/** How far the workload got; copied at each crash point. */
interface Progress {
  created: boolean;
  /** logAndApply calls issued. */
  started: number;
  /** logAndApply calls resolved (a prefix: they resolve in order). */
  acked: number;
}

function key(n: number): string {
  return `k${String(n).padStart(4, "0")}`;
}

function text(b: Uint8Array): string {
  return dec.decode(b);
}

/** A random flush, compaction, move or deletion against the model's latest version. */
function nextEdit(random: () => number, model: Model, vs: VersionSet): VersionEdit {
  const v = model.version;
  const edit = new VersionEdit();
  const choice = random();
  const l0 = v.levels[0]!;
  const deeper = v.allFiles().filter((f) => f.level > 0 && f.level < v.numLevels - 1);
  if (choice < 0.6 && l0.length > 0) {
    // Compaction of the oldest level-0 file into a deeper level.
    const f = l0[l0.length - 1]!;
    const level = 1 + randInt(random, 3);
    const inputs = v.overlappingFiles(level, f.smallestKey, f.largestKey);
    edit.deleteFile(0, f.number);
    let lo = text(f.smallestKey);
    let hi = text(f.largestKey);
    for (const g of inputs) {
      edit.deleteFile(level, g.number);
      if (text(g.smallestKey) < lo) lo = text(g.smallestKey);
      if (text(g.largestKey) > hi) hi = text(g.largestKey);
    }
    edit.addFile(level, meta(vs.newFileNumber(), lo, hi));
  } else if (choice < 0.7 && deeper.length > 0) {
    // Trivial move one level down, when nothing there overlaps.
    const { level, file } = deeper[randInt(random, deeper.length)]!;
    if (v.overlappingFiles(level + 1, file.smallestKey, file.largestKey).length === 0) {
      edit.deleteFile(level, file.number).addFile(level + 1, file);
    }
  } else if (choice < 0.75 && deeper.length > 0) {
    const { level, file } = deeper[randInt(random, deeper.length)]!;
    edit.deleteFile(level, file.number);
  }
  // Most edits also flush a memtable to a new level-0 file.
  if (edit.addedFiles.length === 0 || random() < 0.5) {
    const a = randInt(random, 900);
    edit.addFile(0, meta(vs.newFileNumber(), key(a), key(a + randInt(random, 100))));
    if (random() < 0.5) edit.logNumber = vs.newFileNumber();
  }
  edit.lastSequence = model.lastSequence + randInt(random, 50);
  return edit;
}

async function workload(fs: FileSystem, seed: number, model: Model, progress: Progress) {
  const random = rng(seed);
  const one = async (vs: VersionSet): Promise<void> => {
    const edit = nextEdit(random, model, vs);
    model.apply(edit);
    progress.started++;
    await vs.logAndApply(edit);
    progress.acked++;
  };
  let vs = await VersionSet.create(fs, DIR, OPTIONS);
  progress.created = true;
  for (let i = 0; i < 10; i++) await one(vs);
  await Promise.all([one(vs), one(vs), one(vs)]);
  await vs.close();
  vs = await VersionSet.recover(fs, DIR, OPTIONS);
  for (let i = 0; i < 8; i++) await one(vs);
  await Promise.all([one(vs), one(vs)]);
  await vs.close();
}

/**
 * Opens `fs` after a crash or failure at `progress` and checks the guarantee (module
 * comment), then that the store keeps working.
 */
async function checkRecovery(fs: MemoryFileSystem, model: Model, at: Progress, what: string) {
  if (!at.created && !(await VersionSet.storeExists(fs, DIR))) {
    // The store was never created: creating it now must work.
    const vs = await VersionSet.create(fs, DIR, OPTIONS);
    await vs.close();
    return;
  }
  let vs: VersionSet;
  try {
    vs = await VersionSet.recover(fs, DIR, OPTIONS);
  } catch (err) {
    assert.fail(`${what}: recover failed: ${(err as Error).message}`);
  }
  const got = describeSet(vs);
  const k = model.states.findIndex((s, i) => i >= at.acked && i <= at.started && s === got);
  assert.ok(
    k >= 0,
    `${what}: recovered a state that is not the state after ${at.acked}..${at.started} edits:\n${got}`,
  );
  // Exactly one manifest is left, the one CURRENT names; no temp file.
  const names = await fs.list(DIR);
  const manifests = names.filter((n) => n.startsWith("MANIFEST-") || n.endsWith(".dbtmp"));
  assert.deepEqual(manifests, [`MANIFEST-${String(vs.manifestNumber).padStart(6, "0")}`], what);
  // No number in use can be allocated again.
  for (const name of names) {
    const parsed = parseFileName(name);
    if (parsed !== undefined && "number" in parsed) {
      assert.ok(parsed.number < vs.nextFileNumber, `${what}: ${name} >= next file number`);
    }
  }
  for (const { file } of vs.current.allFiles()) assert.ok(file.number < vs.nextFileNumber, what);
  // The store keeps working: one more edit survives another reopen.
  await vs.logAndApply(new VersionEdit().addFile(0, meta(vs.newFileNumber(), "x", "y")));
  const after = describeSet(vs);
  await vs.close();
  const again = await VersionSet.recover(fs, DIR, OPTIONS);
  assert.equal(describeSet(again), after, `${what}: second reopen`);
  await again.close();
}

describe("manifest crash safety", () => {
  const seed = testSeed();

  for (const retention of [0, 0.5, 1]) {
    test(`a crash before any file operation recovers every acknowledged edit (retention ${retention}, seed ${seed})`, async () => {
      const mem = await memoryDir();
      const model = new Model();
      const progress: Progress = { created: false, started: 0, acked: 0 };
      const seeds = retention === 0.5 ? 3 : 1;
      const points: Array<{ clone: MemoryFileSystem; at: Progress; what: string }> = [];
      const crash = (what: string): void => {
        for (let s = 0; s < seeds; s++) {
          const clone = mem.crashClone({
            unsyncedRetention: retention,
            seed: seed + points.length,
            appendsSurviveAsPrefix: true,
          });
          points.push({ clone, at: { ...progress }, what: `${what} (clone seed ${s})` });
        }
      };
      let swaps = 0;
      const fs = new FaultInjectingFileSystem(mem, {
        onOp: (op, index) => {
          if (op.kind === "rename") swaps++;
          crash(`crash before op #${index} ${op.kind} ${op.path}`);
        },
      });
      await workload(fs, seed, model, progress);
      crash("crash after the run");
      // CURRENT swaps: at create, at recover, and at least one manifest rollover.
      assert.ok(swaps >= 3, `only ${swaps} CURRENT swaps`);
      assert.equal(progress.acked, model.states.length - 1);
      for (const { clone, at, what } of points) {
        await checkRecovery(clone, model, at, `seed ${seed}, ${what}`);
      }
    });
  }

  test(`an error in any file operation ends in IO_ERROR or success, and reopening recovers every acknowledged edit (seed ${seed})`, async () => {
    const dry = new FaultInjectingFileSystem(await memoryDir());
    await workload(dry, seed, new Model(), { created: false, started: 0, acked: 0 });
    const total = dry.opCount;
    let failedRuns = 0;
    for (let n = 0; n <= total; n++) {
      const mem = await memoryDir();
      const fs = new FaultInjectingFileSystem(mem, {
        injector: FaultInjectingFileSystem.failNth(n),
        dropUnsyncedOnSyncFailure: true,
      });
      const model = new Model();
      const progress: Progress = { created: false, started: 0, acked: 0 };
      let error: unknown;
      try {
        await workload(fs, seed, model, progress);
      } catch (err) {
        error = err;
      }
      const what = `seed ${seed}, failing op #${n}`;
      if (error !== undefined) {
        failedRuns++;
        assert.ok(isKvError(error, "IO_ERROR"), `${what}: ${String(error)}`);
      }
      await checkRecovery(mem, model, progress, what);
    }
    assert.ok(failedRuns > total / 2, `${failedRuns} of ${total + 1} runs failed`);
  });
});
