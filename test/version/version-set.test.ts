import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { manifestFileName, tableFileName } from "../../src/version/file-names.js";
import { VersionEditError } from "../../src/version/version.js";
import {
  BYTEWISE_COMPARATOR,
  decodeVersionEdit,
  encodeVersionEdit,
  MANIFEST_FORMAT_VERSION,
  VersionEdit,
} from "../../src/version/version-edit.js";
import { VersionSet } from "../../src/version/version-set.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { readLogSync } from "../../src/wal/log-reader.js";
import { encodeRecords } from "../../src/wal/log-writer.js";
import { rng } from "../support/random.js";
import { DIR, describeSet, docExample, hex, memoryDir, meta, numbersByLevel } from "./helpers.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

function currentText(mem: MemoryFileSystem): string {
  return dec.decode(mem.readFile(`${DIR}/CURRENT`));
}

async function manifests(mem: MemoryFileSystem): Promise<string[]> {
  return (await mem.list(DIR)).filter((n) => n.startsWith("MANIFEST-") || n.endsWith(".dbtmp"));
}

/** The edits in a manifest, decoded. */
function manifestEdits(mem: MemoryFileSystem, name: string): VersionEdit[] {
  const data = mem.readFile(`${DIR}/${name}`);
  const edits: VersionEdit[] = [];
  readLogSync(
    {
      path: name,
      size: data.length,
      read: (dst, pos) => copyOut(data, dst, pos),
      close: async () => {},
    },
    "absoluteConsistency",
    (payload) => edits.push(decodeVersionEdit(payload, name)),
  );
  return edits;
}

function copyOut(data: Uint8Array, dst: Uint8Array, pos: number): number {
  const n = Math.max(0, Math.min(dst.length, data.length - pos));
  dst.set(data.subarray(pos, pos + n));
  return n;
}

function flush(vs: VersionSet, smallest: string, largest: string): VersionEdit {
  return new VersionEdit().addFile(0, meta(vs.newFileNumber(), smallest, largest));
}

function isCorruptionOf(file: string, pattern?: RegExp) {
  return (err: unknown): boolean =>
    isKvError(err, "CORRUPTION") &&
    err.file === `${DIR}/${file}` &&
    (pattern === undefined || pattern.test(err.message));
}

/** A store with one snapshot manifest whose CURRENT and manifest the test then damages. */
async function storeWithEdits(edits: number): Promise<MemoryFileSystem> {
  const mem = await memoryDir();
  const vs = await VersionSet.create(mem, DIR);
  for (let i = 0; i < edits; i++) await vs.logAndApply(flush(vs, `a${i}`, `b${i}`));
  await vs.close();
  return mem;
}

describe("VersionSet", () => {
  test("a new store starts empty with MANIFEST-000001 named by CURRENT", async () => {
    const mem = await memoryDir();
    const vs = await VersionSet.create(mem, DIR);
    assert.equal(currentText(mem), "MANIFEST-000001\n");
    assert.deepEqual(await manifests(mem), ["MANIFEST-000001"]);
    assert.equal(vs.manifestNumber, 1);
    assert.equal(vs.nextFileNumber, 2);
    assert.equal(vs.current.allFiles().length, 0);
    assert.equal(await VersionSet.storeExists(mem, DIR), true);
    await vs.close();
    const again = await VersionSet.recover(mem, DIR);
    assert.equal(again.logNumber, 0);
    assert.equal(again.lastSequence, 0);
    assert.equal(again.recovery?.edits, 1);
    await again.close();
  });

  test("a new store's CURRENT and manifest are byte for byte the examples in docs/format/manifest.md", async () => {
    const mem = await memoryDir();
    const vs = await VersionSet.create(mem, DIR);
    await vs.close();
    assert.equal(hex(mem.readFile(`${DIR}/CURRENT`)), docExample("example-current"));
    assert.equal(hex(mem.readFile(`${DIR}/MANIFEST-000001`)), docExample("example-new-manifest"));
  });

  test("create refuses a directory that already holds a store", async () => {
    const mem = await storeWithEdits(0);
    await assert.rejects(VersionSet.create(mem, DIR), (err: unknown) =>
      isKvError(err, "INVALID_ARGUMENT"),
    );
  });

  test("many edits survive close and recover: files, log number, last sequence, file numbers", async () => {
    const mem = await memoryDir();
    const random = rng(7);
    let vs = await VersionSet.create(mem, DIR);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 40; i++) {
        const edit = new VersionEdit();
        const l0 = vs.current.levels[0]!;
        if (l0.length > 3) {
          // Move the oldest level-0 file to a deeper level, renamed, as a compaction would.
          const oldest = l0[l0.length - 1]!;
          edit.deleteFile(0, oldest.number);
          const level = 1 + (oldest.number % 5);
          for (const f of vs.current.overlappingFiles(
            level,
            oldest.smallestKey,
            oldest.largestKey,
          )) {
            edit.deleteFile(level, f.number);
          }
          const k = (round * 1000 + i) * 2;
          edit.addFile(level, meta(vs.newFileNumber(), `k${k}`, `k${k + 1}`));
        }
        edit.addFile(0, meta(vs.newFileNumber(), `a${i}`, `z${i}`));
        if (random() < 0.3) edit.logNumber = vs.newFileNumber();
        vs.lastSequence += 1 + Math.floor(random() * 100);
        await vs.logAndApply(edit);
      }
      const before = describeSet(vs);
      const next = vs.nextFileNumber;
      await vs.close();
      vs = await VersionSet.recover(mem, DIR);
      assert.equal(describeSet(vs), before);
      assert.ok(vs.nextFileNumber > next, "the new manifest took a fresh number");
      assert.equal(vs.recovery?.tornTailBytes, 0);
    }
    await vs.close();
  });

  test("recover writes a new manifest, points CURRENT at it and deletes the old one", async () => {
    const mem = await storeWithEdits(3);
    const vs = await VersionSet.recover(mem, DIR);
    assert.equal(vs.recovery?.manifest, `${DIR}/MANIFEST-000001`);
    assert.equal(vs.recovery?.edits, 4);
    assert.equal(vs.manifestNumber, 5);
    assert.equal(currentText(mem), "MANIFEST-000005\n");
    assert.deepEqual(await manifests(mem), ["MANIFEST-000005"]);
    const [snapshot, ...rest] = manifestEdits(mem, "MANIFEST-000005");
    assert.deepEqual(rest, []);
    assert.equal(snapshot!.formatVersion, MANIFEST_FORMAT_VERSION);
    assert.equal(snapshot!.comparatorName, BYTEWISE_COMPARATOR);
    assert.equal(snapshot!.nextFileNumber, 6);
    assert.deepEqual(
      snapshot!.addedFiles.map((a) => a.file.number),
      [4, 3, 2],
    );
    await vs.close();
  });

  test("numbers of files found in the directory are never allocated again", async () => {
    const mem = await storeWithEdits(1);
    mem.writeFile(`${DIR}/${tableFileName(40)}`, new Uint8Array(1));
    mem.writeFile(`${DIR}/000041.log`, new Uint8Array(1));
    const vs = await VersionSet.recover(mem, DIR);
    assert.equal(vs.manifestNumber, 42);
    assert.equal(vs.newFileNumber(), 43);
    await vs.close();
  });

  test("stale manifests and temp files from an interrupted swap are deleted at recovery", async () => {
    const mem = await storeWithEdits(1);
    mem.writeFile(`${DIR}/${manifestFileName(9)}`, new Uint8Array(10));
    mem.writeFile(`${DIR}/000009.dbtmp`, enc.encode("MANIFEST-000009\n"));
    const vs = await VersionSet.recover(mem, DIR);
    assert.equal(vs.manifestNumber, 10);
    assert.deepEqual(await manifests(mem), ["MANIFEST-000010"]);
    await vs.close();
  });

  test("concurrent logAndApply calls apply in call order, each synced before the next append", async () => {
    const mem = await memoryDir();
    const fs = new FaultInjectingFileSystem(mem, { keepLog: true });
    const vs = await VersionSet.create(fs, DIR);
    const opsBefore = fs.log.length;
    const order: number[] = [];
    const calls: Promise<void>[] = [];
    for (let i = 0; i < 20; i++) {
      const edit = flush(vs, `k${i}`, `k${i}`);
      edit.lastSequence = (i + 1) * 10;
      calls.push(
        vs.logAndApply(edit).then(() => {
          order.push(i);
        }),
      );
    }
    await Promise.all(calls);
    assert.deepEqual(
      order,
      Array.from({ length: 20 }, (_, i) => i),
    );
    const kinds = fs.log.slice(opsBefore).map((op) => op.kind);
    assert.deepEqual(kinds, Array.from({ length: 20 }, () => ["append", "datasync"]).flat());
    assert.equal(vs.lastSequence, 200);
    await vs.close();
    const edits = manifestEdits(mem, "MANIFEST-000001").slice(1);
    assert.deepEqual(
      edits.map((e) => e.lastSequence),
      Array.from({ length: 20 }, (_, i) => (i + 1) * 10),
    );
  });

  test("an edit that does not fit throws VersionEditError, writes nothing and changes nothing", async () => {
    const mem = await memoryDir();
    const vs = await VersionSet.create(mem, DIR);
    await vs.logAndApply(new VersionEdit().addFile(1, meta(vs.newFileNumber(), "a", "f")));
    const edit = new VersionEdit();
    edit.logNumber = 5;
    await vs.logAndApply(edit);
    const before = describeSet(vs);
    const size = vs.manifestSize;
    const bad: VersionEdit[] = [
      new VersionEdit().deleteFile(1, 999),
      new VersionEdit().addFile(1, meta(vs.newFileNumber(), "e", "g")),
      Object.assign(new VersionEdit(), { logNumber: 4 }),
      Object.assign(new VersionEdit(), { lastSequence: -1 }),
      Object.assign(new VersionEdit(), { comparatorName: "other" }),
    ];
    for (const e of bad) await assert.rejects(vs.logAndApply(e), VersionEditError, e.toString());
    assert.equal(describeSet(vs), before);
    assert.equal(vs.manifestSize, size);
    await vs.logAndApply(flush(vs, "x", "y"));
    assert.equal(vs.current.numFiles(0), 1);
    await vs.close();
  });

  for (const kind of ["datasync", "append"] as const) {
    test(`a failing manifest ${kind} turns the set failed and leaves the current version`, async () => {
      const mem = await memoryDir();
      const fs = new FaultInjectingFileSystem(mem, { dropUnsyncedOnSyncFailure: true });
      const vs = await VersionSet.create(fs, DIR);
      await vs.logAndApply(flush(vs, "a", "b"));
      const before = describeSet(vs);
      const current = vs.current;
      fs.setInjector(FaultInjectingFileSystem.failNth(0, (op) => op.kind === kind));
      await assert.rejects(vs.logAndApply(flush(vs, "c", "d")), (err: unknown) =>
        isKvError(err, "IO_ERROR"),
      );
      fs.setInjector(undefined);
      assert.equal(vs.current, current);
      assert.equal(describeSet(vs), before);
      assert.ok(isKvError(vs.failed, "IO_ERROR"));
      await assert.rejects(vs.logAndApply(flush(vs, "e", "f")), (err: unknown) =>
        isKvError(err, "READ_ONLY"),
      );
      assert.throws(
        () => vs.liveFileNumbers(),
        (err: unknown) => isKvError(err, "READ_ONLY"),
      );
      await vs.close();
      // Reopening recovers the state before the failed edit (its bytes were dropped).
      const again = await VersionSet.recover(mem, DIR);
      assert.equal(describeSet(again), before);
      await again.close();
    });
  }

  test("the manifest rolls over to a new one once it reaches maxManifestBytes", async () => {
    const mem = await memoryDir();
    const vs = await VersionSet.create(mem, DIR, { maxManifestBytes: 400 });
    const seen = new Set<number>([vs.manifestNumber]);
    for (let i = 0; i < 60; i++) {
      const edit = flush(vs, `a${i}`, `b${i}`);
      if (vs.current.numFiles(0) > 4) {
        for (const f of vs.current.levels[0]!.slice(2)) edit.deleteFile(0, f.number);
      }
      await vs.logAndApply(edit);
      seen.add(vs.manifestNumber);
      assert.equal(currentText(mem), `${manifestFileName(vs.manifestNumber)}\n`);
      assert.deepEqual(await manifests(mem), [manifestFileName(vs.manifestNumber)]);
    }
    assert.ok(seen.size > 3, `rolled over ${seen.size - 1} times`);
    const before = describeSet(vs);
    await vs.close();
    const again = await VersionSet.recover(mem, DIR, { maxManifestBytes: 400 });
    assert.equal(describeSet(again), before);
    await again.close();
  });

  test("liveFileNumbers keeps the files of an old version a reader still refs", async () => {
    const mem = await memoryDir();
    const released: number[] = [];
    const vs = await VersionSet.create(mem, DIR);
    vs.onVersionReleased = (v) => released.push(v.allFiles().length);
    await vs.logAndApply(flush(vs, "a", "b")); // file 2
    await vs.logAndApply(flush(vs, "c", "d")); // file 3
    const reader = vs.current;
    reader.ref();
    const compaction = new VersionEdit().deleteFile(0, 2).deleteFile(0, 3);
    compaction.addFile(1, meta(vs.newFileNumber(), "a", "d")); // file 4
    await vs.logAndApply(compaction);
    assert.deepEqual([...vs.liveFileNumbers()].sort(), [2, 3, 4]);
    assert.equal(vs.liveVersionCount, 2);
    released.length = 0;
    reader.unref();
    assert.deepEqual(released, [2]);
    assert.deepEqual([...vs.liveFileNumbers()], [4]);
    assert.equal(vs.liveVersionCount, 1);
    await vs.close();
  });

  test("close waits for queued edits; later logAndApply calls throw CLOSED", async () => {
    const mem = await memoryDir();
    const vs = await VersionSet.create(mem, DIR);
    const queued = vs.logAndApply(flush(vs, "a", "b"));
    const closed = vs.close();
    await assert.rejects(vs.logAndApply(flush(vs, "c", "d")), (err: unknown) =>
      isKvError(err, "CLOSED"),
    );
    await queued;
    await closed;
    await vs.close();
    const again = await VersionSet.recover(mem, DIR);
    assert.deepEqual(numbersByLevel(again)[0], [2]);
    await again.close();
  });

  test("lastSequence never goes backwards", async () => {
    const vs = await VersionSet.create(await memoryDir(), DIR);
    vs.lastSequence = 10;
    assert.throws(() => {
      vs.lastSequence = 9;
    }, RangeError);
    await vs.close();
  });
});

describe("VersionSet recovery of damaged metadata", () => {
  test("a missing CURRENT is CORRUPTION", async () => {
    const mem = await memoryDir();
    await assert.rejects(VersionSet.recover(mem, DIR), isCorruptionOf("CURRENT", /missing/));
  });

  for (const [name, text] of [
    ["empty", ""],
    ["without its newline", "MANIFEST-000001"],
    ["with a wrong name", "MANIFEST-1\n"],
    ["with two lines", "MANIFEST-000001\nMANIFEST-000002\n"],
    ["of garbage", "\u0000\u0001garbage"],
  ]) {
    test(`a CURRENT ${name} is CORRUPTION`, async () => {
      const mem = await storeWithEdits(1);
      mem.writeFile(`${DIR}/CURRENT`, enc.encode(text!));
      await assert.rejects(VersionSet.recover(mem, DIR), isCorruptionOf("CURRENT", /malformed/));
    });
  }

  test("an oversized CURRENT is CORRUPTION without being read", async () => {
    const mem = await storeWithEdits(1);
    mem.writeFile(`${DIR}/CURRENT`, new Uint8Array(1 << 20));
    await assert.rejects(VersionSet.recover(mem, DIR), isCorruptionOf("CURRENT", /bytes/));
  });

  test("a CURRENT naming a missing manifest is CORRUPTION", async () => {
    const mem = await storeWithEdits(1);
    mem.writeFile(`${DIR}/CURRENT`, enc.encode("MANIFEST-000077\n"));
    await assert.rejects(
      VersionSet.recover(mem, DIR),
      isCorruptionOf("MANIFEST-000077", /does not exist/),
    );
  });

  test("a torn last manifest record is dropped: that edit was never acknowledged", async () => {
    const mem = await storeWithEdits(3);
    const data = mem.readFile(`${DIR}/MANIFEST-000001`);
    mem.writeFile(`${DIR}/MANIFEST-000001`, data.subarray(0, data.length - 3));
    const vs = await VersionSet.recover(mem, DIR);
    assert.equal(vs.recovery?.edits, 3);
    assert.ok((vs.recovery?.tornTailBytes ?? 0) > 0);
    assert.deepEqual(numbersByLevel(vs)[0], [3, 2]);
    await vs.close();
  });

  test("damage before the last manifest record is CORRUPTION naming the manifest", async () => {
    const mem = await storeWithEdits(3);
    const data = mem.readFile(`${DIR}/MANIFEST-000001`);
    data[20]! ^= 0x40; // inside the snapshot record
    mem.writeFile(`${DIR}/MANIFEST-000001`, data);
    await assert.rejects(VersionSet.recover(mem, DIR), isCorruptionOf("MANIFEST-000001"));
  });

  /** A store whose manifest holds exactly the given records. */
  async function withManifest(records: Uint8Array[]): Promise<MemoryFileSystem> {
    const mem = await memoryDir();
    mem.writeFile(`${DIR}/MANIFEST-000001`, encodeRecords(records));
    mem.writeFile(`${DIR}/CURRENT`, enc.encode("MANIFEST-000001\n"));
    return mem;
  }

  function snapshot(): VersionEdit {
    const edit = new VersionEdit();
    edit.formatVersion = MANIFEST_FORMAT_VERSION;
    edit.comparatorName = BYTEWISE_COMPARATOR;
    edit.logNumber = 0;
    edit.nextFileNumber = 10;
    edit.lastSequence = 0;
    return edit;
  }

  const cases: Array<[string, () => Uint8Array[], RegExp]> = [
    [
      "a record that does not decode",
      () => [encodeVersionEdit(snapshot()), new Uint8Array([99])],
      /unknown tag/,
    ],
    ["no record at all", () => [], /holds no edit/],
    [
      "a first edit that is not a snapshot",
      () => [encodeVersionEdit(new VersionEdit())],
      /not a snapshot/,
    ],
    [
      "an edit deleting a missing file",
      () => [encodeVersionEdit(snapshot()), encodeVersionEdit(new VersionEdit().deleteFile(0, 5))],
      /does not apply/,
    ],
    [
      "a level beyond numLevels",
      () => [encodeVersionEdit(snapshot().addFile(7, meta(3, "a", "b")))],
      /out of range/,
    ],
    [
      "overlapping files in a deeper level",
      () => [
        encodeVersionEdit(
          snapshot()
            .addFile(1, meta(3, "a", "c"))
            .addFile(1, meta(4, "b", "d")),
        ),
      ],
      /invalid/,
    ],
    [
      "another comparator",
      () => [
        encodeVersionEdit(
          Object.assign(snapshot(), { comparatorName: "leveldb.BytewiseComparator" }),
        ),
      ],
      /comparator/,
    ],
    [
      "no last sequence",
      () => [encodeVersionEdit(Object.assign(snapshot(), { lastSequence: undefined }))],
      /lacks last sequence/,
    ],
  ];
  for (const [name, records, pattern] of cases) {
    test(`a manifest with ${name} is CORRUPTION`, async () => {
      const mem = await withManifest(records());
      await assert.rejects(
        VersionSet.recover(mem, DIR),
        isCorruptionOf("MANIFEST-000001", pattern),
      );
    });
  }
});
