/**
 * The inspection tools of src/tools/ on stores built in memory: sst dump (properties,
 * blocks and entries agree with each other and with what was written; a damaged block is
 * reported and the rest still dumped), wal dump (every batch and operation; a flipped byte
 * shows as corruption at the damaged record's offset, a cut as a torn tail), manifest dump
 * (the final version is the store's), compact (one level left, progress never goes back
 * and ends at 100), backup (the copy opens and holds the data).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MemoryFileSystem, open } from "../../src/index.js";
import { backupStore } from "../../src/tools/backup.js";
import {
  type CompactStep,
  compactStore,
  ProgressEstimate,
  remainingWork,
  targetLevel,
} from "../../src/tools/compact.js";
import { dumpManifest } from "../../src/tools/manifest-dump.js";
import { openTableDump } from "../../src/tools/sst-dump.js";
import { dumpLog } from "../../src/tools/wal-dump.js";
import { latin1 } from "../support/bytes.js";
import { keyName } from "../support/history.js";
import { SMALL_LEVELS } from "../support/store-fixtures.js";

const DIR = "/db";
const OPTIONS = SMALL_LEVELS;
const keyOf = keyName;
const text = latin1;

/** A closed store with tables in several levels; returns the live keys and values. */
async function build(fs: MemoryFileSystem): Promise<Map<string, string>> {
  const model = new Map<string, string>();
  const db = await open(DIR, { ...OPTIONS, fs });
  for (let i = 0; i < 700; i++) {
    const k = keyOf((i * 37) % 150);
    if (i % 9 === 0) {
      await db.delete(k);
      model.delete(k);
    } else {
      const v = `${i}-${"v".repeat(i % 30)}`;
      await db.put(k, v);
      model.set(k, v);
    }
  }
  assert.ok(
    db
      .stats()
      .levelFiles.slice(1)
      .some((n) => n > 0),
    "nothing below level 0",
  );
  await db.close();
  return model;
}

async function tables(fs: MemoryFileSystem): Promise<string[]> {
  return (await fs.list(DIR)).filter((n) => n.endsWith(".sst")).map((n) => `${DIR}/${n}`);
}

describe("sst dump", () => {
  test("properties, blocks and entries agree; a damaged block is reported, the rest dumped", async () => {
    const fs = new MemoryFileSystem();
    await build(fs);
    const all = await tables(fs);
    const sizes = all.map((t) => fs.readFile(t).length);
    const path = all[sizes.indexOf(Math.max(...sizes))]!; // the largest: several blocks
    const dump = await openTableDump(fs, path);
    const s = dump.summary;
    const entries = [...dump.entries()];
    await dump.close();
    assert.deepEqual(s.problems, []);
    assert.equal(s.fileSize, fs.readFile(path).length);
    assert.equal(s.blocks.length, s.properties.dataBlocks);
    assert.ok(s.blocks.length > 1);
    assert.equal(entries.length, s.properties.entries);
    assert.equal(
      s.blocks.reduce((n, b) => n + (b.entries ?? 0), 0),
      s.properties.entries,
    );
    assert.equal(entries.filter((e) => e.kind === 0).length, s.properties.tombstones);
    assert.equal(text(entries[0]!.key), text(s.properties.smallestKey));
    assert.equal(text(entries.at(-1)!.key), text(s.properties.largestKey));
    for (const b of s.blocks) {
      const inBlock = entries.filter((e) => e.block === b.index);
      assert.equal(inBlock.length, b.entries);
      assert.equal(text(inBlock.at(-1)!.key), text(b.lastKey!.key));
      assert.equal(inBlock.at(-1)!.seq, b.lastKey!.seq);
      assert.ok(text(b.indexKey.key) >= text(b.lastKey!.key), "index key at or after last key");
    }
    assert.equal(s.distinctKeys, new Set(entries.map((e) => text(e.key))).size);
    assert.ok(s.filter !== undefined && s.filter.probes > 0 && s.filter.bitsPerKey! > 5);

    // Damage the second block: it is named, and the others are still dumped.
    const bytes = Uint8Array.from(fs.readFile(path));
    const damaged = s.blocks[1]!;
    bytes[damaged.offset + 3]! ^= 0x20;
    fs.writeFile(path, bytes);
    const again = await openTableDump(fs, path);
    const rest = [...again.entries()];
    await again.close();
    assert.equal(again.summary.problems.length, 1);
    assert.match(again.summary.problems[0]!, new RegExp(`block 1 at offset ${damaged.offset}`));
    assert.ok(again.summary.blocks[1]!.problem !== undefined);
    assert.equal(rest.length, entries.length - damaged.entries!);
  });
});

describe("wal dump", () => {
  async function logStore(fs: MemoryFileSystem): Promise<string> {
    const db = await open(DIR, { fs });
    for (let i = 0; i < 40; i++) {
      const b = db.batch();
      b.put(`k${i}`, `value-${i}`);
      if (i % 4 === 0) b.delete(`gone${i}`);
      await db.write(b);
    }
    await db.close();
    const logs = (await fs.list(DIR)).filter((n) => n.endsWith(".log"));
    assert.equal(logs.length, 1);
    return `${DIR}/${logs[0]}`;
  }

  test("lists every batch and op; a flipped byte is corruption at that record; a cut is a torn tail", async () => {
    const fs = new MemoryFileSystem();
    const path = await logStore(fs);
    const clean = await dumpLog(fs, path);
    assert.equal(clean.records.length, 40);
    assert.equal(
      clean.records.reduce((n, r) => n + r.ops.length, 0),
      50,
    );
    assert.deepEqual(clean.damage, []);
    assert.equal(clean.firstDamageOffset, undefined);
    assert.equal(clean.records[4]!.sequence, 6); // batches 0..3 hold 2 + 1 + 1 + 1 ops
    assert.deepEqual(
      clean.records[4]!.ops.map((op) => [op.seq, op.kind, text(op.key), text(op.value)]),
      [
        [6, 1, "k4", "value-4"],
        [7, 0, "gone4", ""],
      ],
    );

    const bytes = Uint8Array.from(fs.readFile(path));
    const hit = clean.records[20]!;
    bytes[hit.offset + 12]! ^= 0x01;
    fs.writeFile(path, bytes);
    const flipped = await dumpLog(fs, path);
    assert.equal(flipped.firstDamageOffset, hit.offset);
    assert.equal(flipped.damage.length, 1);
    assert.equal(flipped.damage[0]!.kind, "corruption");
    assert.equal(flipped.damage[0]!.offset, hit.offset);
    assert.equal(flipped.records.length, 39);

    fs.writeFile(path, fs.readFile(path).subarray(0, clean.records[39]!.offset + 10));
    const torn = await dumpLog(fs, path);
    assert.equal(torn.damage.at(-1)!.kind, "torn-tail");
    assert.equal(torn.damage.at(-1)!.offset, clean.records[39]!.offset);
    assert.equal(torn.notALog, undefined);
  });

  test("a file that is no log says so; a log torn in its first record stays a torn tail", async () => {
    const fs = new MemoryFileSystem();
    const path = await logStore(fs);
    const log = fs.readFile(path);
    // Tables (no record checks out; a table's magic number at the end) and random bytes.
    await build(fs);
    const table = (await fs.list(DIR)).find((n) => n.endsWith(".sst"))!;
    const sst = await dumpLog(fs, `${DIR}/${table}`);
    assert.match(sst.notALog!, /no record checks out and it ends as a table file does/);
    fs.writeFile(
      "/random",
      Uint8Array.from({ length: 5000 }, (_, i) => (i * 131 + 7) % 251),
    );
    assert.match(
      (await dumpLog(fs, "/random")).notALog!,
      /no record checks out and it does not start with a log fragment header/,
    );
    // A manifest: valid records, none a write batch.
    const manifest = (await fs.list(DIR)).find((n) => n.startsWith("MANIFEST-"))!;
    assert.match(
      (await dumpLog(fs, `${DIR}/${manifest}`)).notALog!,
      /records holds a write batch.*manifest/,
    );
    // A fresh log whose first append tore: a plausible header, a payload cut short.
    fs.writeFile("/torn-first", log.subarray(0, 12));
    const tornFirst = await dumpLog(fs, "/torn-first");
    assert.equal(tornFirst.notALog, undefined);
    assert.deepEqual(
      tornFirst.damage.map((d) => [d.offset, d.kind]),
      [[0, "torn-tail"]],
    );
    // Empty and all-zero (preallocated) files are clean, empty logs.
    fs.writeFile("/empty", new Uint8Array(0));
    fs.writeFile("/zeros", new Uint8Array(40_000));
    for (const p of ["/empty", "/zeros"]) {
      const d = await dumpLog(fs, p);
      assert.deepEqual([d.notALog, d.records.length, d.damage.length], [undefined, 0, 0], p);
    }
  });
});

describe("manifest dump", () => {
  test("the edits replay to the store's version; a damaged record is reported", async () => {
    const fs = new MemoryFileSystem();
    await build(fs);
    const dump = await dumpManifest(fs, DIR);
    // Opened so that no compaction is due: its version is the one the manifest recorded.
    const db = await open(DIR, { fs, l0CompactionTrigger: 1000, maxBytesForLevelBase: 1 << 30 });
    const stats = db.stats();
    await db.close();
    assert.deepEqual(dump.problems, []);
    assert.ok(dump.final.complete);
    assert.match(dump.current!, /^MANIFEST-\d{6}$/);
    assert.equal(dump.edits[0]!.formatVersion, 2);
    assert.ok(dump.edits.length > 3);
    assert.ok(
      dump.edits.some((e) => e.deleted.length > 0 && e.added.length > 0),
      "a compaction",
    );
    assert.deepEqual(
      dump.final.levels.map((files) => files.length),
      stats.levelFiles,
    );
    assert.deepEqual(
      dump.final.levels.map((files) => files.reduce((n, f) => n + f.size, 0)),
      stats.levelBytes,
    );
    assert.ok(dump.final.lastSequence! > 0 && dump.final.lastSequence! <= 700);
    // The reopen wrote a new manifest: one snapshot edit of the same version. The file
    // itself can be named too.
    const now = await dumpManifest(fs, DIR);
    assert.equal(now.edits.length, 1);
    const direct = await dumpManifest(fs, now.path);
    assert.equal(direct.current, undefined);
    assert.deepEqual(
      direct.final.levels.map((files) => files.map((f) => f.number)),
      dump.final.levels.map((files) => files.map((f) => f.number)),
    );

    const bytes = Uint8Array.from(fs.readFile(now.path));
    bytes[now.edits[0]!.offset + 9]! ^= 0xff;
    fs.writeFile(now.path, bytes);
    const bad = await dumpManifest(fs, DIR);
    assert.equal(bad.edits.length, 0);
    assert.match(bad.problems.join("\n"), /checksum mismatch/);
  });
});

describe("compact and backup", () => {
  test("progress estimate: work left, target level, never decreasing, 100 at the end", () => {
    assert.equal(targetLevel([3, 2, 0, 5, 0]), 3);
    assert.equal(targetLevel([3, 0, 0]), 1);
    assert.equal(remainingWork([10, 20, 30, 40], 3), 10 * 3 + 20 * 2 + 30);
    const p = new ProgressEstimate(2, { files: [1, 1, 1], bytes: [100, 100, 100] }, false);
    assert.equal(p.update(0, [0, 180, 100]), (100 * (300 - 180)) / 300);
    assert.equal(p.update(0, [0, 190, 100]), 40, "never goes back");
    assert.equal(p.update(1, [0, 0, 280]), 100);
    const ranged = new ProgressEstimate(4, { files: [], bytes: [] }, true);
    assert.equal(ranged.update(2, []), 50);
  });

  test("compact leaves one level with files; backup's copy opens with the same data", async () => {
    const fs = new MemoryFileSystem();
    const model = await build(fs);
    const steps: CompactStep[] = [];
    const report = await compactStore(DIR, { fs, onStep: (s) => steps.push(s) });
    assert.ok(steps.length > 0);
    for (let i = 1; i < steps.length; i++) {
      assert.ok(steps[i]!.percent >= steps[i - 1]!.percent);
    }
    assert.equal(steps.at(-1)!.percent, 100);
    const nonEmpty = report.after.files.flatMap((n, level) => (n > 0 ? [level] : []));
    assert.deepEqual(nonEmpty, [report.targetLevel]);
    assert.ok(report.before.files.filter((n) => n > 0).length > 1);

    const backup = await backupStore(DIR, "/copy", { fs });
    assert.equal(backup.linked + backup.copied, report.after.files[report.targetLevel]);
    assert.deepEqual(backup.levelFiles, report.after.files);
    const copy = await open("/copy", { fs, createIfMissing: false });
    const seen = new Map<string, string>();
    for await (const [k, v] of copy.iterator()) seen.set(text(k), text(v));
    await copy.close();
    assert.deepEqual(seen, model);
  });
});
