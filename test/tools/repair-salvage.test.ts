/**
 * repair salvages what a damaged table still holds (LevelDB's RepairDB): four damaged
 * bytes in one data block of a table of ~16,000 entries lose only that block's entries;
 * every entry of the other blocks is there after the repair, the report (and the CLI's
 * output) says how many entries were salvaged and lost and where the original went, and
 * nothing is deleted: the original and the files the repaired store does not use are in
 * lost/, which the next open leaves alone.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { FaultInjectingFileSystem, MemoryFileSystem, open } from "../../src/index.js";
import { TableReader } from "../../src/sstable/table-reader.js";
import { repairStore } from "../../src/tools/repair.js";
import { runCli } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

const DIR = "/db";
const ENTRIES = 16_095;
const keyOf = (i: number) => `key${String(i).padStart(8, "0")}`;
const valueFor = (i: number) => `value-${i}-${"v".repeat(i % 50)}`;

/** A store holding ENTRIES keys in one table (and nothing in the log), closed. */
async function oneTable(fs: MemoryFileSystem | undefined, dir: string): Promise<void> {
  const db = await open(dir, {
    ...(fs === undefined ? {} : { fs }),
    writeBufferSize: 64 << 20,
    compactionMode: "inline",
  });
  for (let start = 0; start < ENTRIES; start += 1000) {
    const batch = db.batch();
    for (let i = start; i < Math.min(ENTRIES, start + 1000); i++) batch.put(keyOf(i), valueFor(i));
    await db.write(batch, { sync: false });
  }
  await db.flush();
  assert.deepEqual(db.stats().levelFiles.slice(0, 1), [1]);
  await db.close();
}

/** The keys of each data block of the table in `bytes`, and each block's offset and size. */
async function blocksOf(
  bytes: Uint8Array,
): Promise<Array<{ keys: string[]; offset: number; size: number }>> {
  const fs = new MemoryFileSystem();
  fs.writeFile("/t.sst", bytes);
  const reader = TableReader.open(await fs.openReadable("/t.sst"), 1);
  const out: Array<{ keys: string[]; offset: number; size: number }> = [];
  const { BlockIterator } = await import("../../src/sstable/block.js");
  const it = new BlockIterator();
  for (let i = 0; i < reader.index.count; i++) {
    it.reset(reader.dataBlock(i, false));
    const keys: string[] = [];
    for (it.seekToFirst(); it.valid(); it.next()) keys.push(Buffer.from(it.key).toString());
    out.push({ keys, offset: reader.index.blockOffsets[i]!, size: reader.index.blockSizes[i]! });
  }
  await reader.close();
  return out;
}

/** Four damaged bytes in the middle of block `b`. */
function damage(bytes: Uint8Array, block: { offset: number; size: number }): void {
  const at = block.offset + Math.floor(block.size / 2);
  for (let i = 0; i < 4; i++) bytes[at + i]! ^= 0x5a;
}

describe("repair salvages a damaged table", () => {
  test("four damaged bytes in one block of a 16,095-entry table lose only that block's entries", async () => {
    const mem = new MemoryFileSystem();
    await oneTable(mem, DIR);
    const table = (await mem.list(DIR)).find((n) => n.endsWith(".sst"))!;
    const path = `${DIR}/${table}`;
    const bytes = mem.readFile(path);
    const blocks = await blocksOf(bytes);
    assert.ok(blocks.length > 50, `${blocks.length} blocks`);
    const victim = Math.floor(blocks.length / 3);
    damage(bytes, blocks[victim]!);
    mem.writeFile(path, bytes);
    const lostKeys = new Set(blocks[victim]!.keys);

    const report = await repairStore(DIR, { fs: mem });
    assert.equal(report.salvagedTables.length, 1, JSON.stringify(report.dropped));
    const s = report.salvagedTables[0]!;
    assert.equal(s.file, path);
    assert.equal(s.blocksLost, 1);
    assert.equal(s.blocks, blocks.length);
    assert.equal(s.entriesSalvaged, ENTRIES - lostKeys.size);
    assert.equal(s.entriesLost, lostKeys.size);
    assert.equal(report.entriesSalvaged, ENTRIES - lostKeys.size);
    assert.equal(report.entriesLost, lostKeys.size);
    assert.equal(s.original, `${DIR}/lost/${table}`);
    assert.match(
      report.dropped[0]!,
      /salvaged 1\d{4} of 16095 entries, lost \d+ \(1 of \d+ data blocks damaged/,
    );

    const db = await open(DIR, { fs: mem });
    try {
      let present = 0;
      for (let i = 0; i < ENTRIES; i++) {
        const v = await db.get(keyOf(i));
        if (lostKeys.has(keyOf(i))) assert.equal(v, undefined, keyOf(i));
        else {
          assert.equal(v?.toString(), valueFor(i), keyOf(i));
          present++;
        }
      }
      assert.equal(present, ENTRIES - lostKeys.size);
      assert.equal((await db.iterator({ keysOnly: true }).all()).length, present);
    } finally {
      await db.close();
    }
    // The next open kept the damaged original in lost/.
    assert.deepEqual(mem.readFile(s.original), bytes);
  });

  test("files the repaired store does not use go to lost/, not away", async () => {
    const mem = new MemoryFileSystem();
    const db = await open(DIR, { fs: mem });
    for (let i = 0; i < 100; i++) await db.put(keyOf(i), valueFor(i));
    await db.flush();
    await db.close();
    const table = (await mem.list(DIR)).find((n) => n.endsWith(".sst"))!;
    // A leftover table no manifest names (as an interrupted compaction leaves one).
    mem.writeFile(`${DIR}/000900.sst`, mem.readFile(`${DIR}/${table}`));
    const report = await repairStore(DIR, { fs: mem });
    const leftover = report.archived.find((a) => a.file === `${DIR}/000900.sst`);
    assert.equal(leftover?.reason, "not in the manifest");
    assert.equal(leftover?.to, `${DIR}/lost/000900.sst`);
    assert.ok(!(await mem.list(DIR)).includes("000900.sst"));
    await (await open(DIR, { fs: mem })).close();
    assert.ok((await mem.list(`${DIR}/lost`)).includes("000900.sst"));
  });

  test("kv-engine repair says how many entries were salvaged and lost and where the original went", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const data = join(dir.path, "data");
    await oneTable(undefined, data);
    const table = readdirSync(data).find((n) => n.endsWith(".sst"))!;
    const bytes = readFileSync(join(data, table));
    const blocks = await blocksOf(bytes);
    damage(bytes, blocks[5]!);
    writeFileSync(join(data, table), bytes);
    const r = await runCli(["repair", "--data-dir", data]);
    assert.equal(r.code, 0, r.stderr);
    const lost = blocks[5]!.keys.length;
    assert.ok(r.stdout.includes(`entries salvaged: ${ENTRIES - lost}, lost: ${lost}`), r.stdout);
    assert.ok(r.stdout.includes(`moved to ${join(data, "lost", table)}`), r.stdout);
    assert.ok(existsSync(join(data, "lost", table)));
    const db = await open(data);
    assert.equal((await db.get(keyOf(0)))?.toString(), valueFor(0));
    await db.close();
  });
});

describe("repair salvaging a table is crash safe", () => {
  test("a power loss at any file operation of a salvage leaves a store that repair (again) saves the same entries in, the original kept", async () => {
    const SMALL = 2000;
    const built = new MemoryFileSystem();
    const db = await open(DIR, { fs: built, writeBufferSize: 64 << 20 });
    const batch = db.batch();
    for (let i = 0; i < SMALL; i++) batch.put(keyOf(i), valueFor(i));
    await db.write(batch);
    await db.flush();
    await db.close();
    const table = (await built.list(DIR)).find((n) => n.endsWith(".sst"))!;
    const path = `${DIR}/${table}`;
    const bytes = built.readFile(path);
    const blocks = await blocksOf(bytes);
    assert.ok(blocks.length > 5, `${blocks.length} blocks`);
    damage(bytes, blocks[2]!);
    built.writeFile(path, bytes);
    const lostKeys = new Set(blocks[2]!.keys);
    const copy = (): MemoryFileSystem => built.crashClone({ unsyncedRetention: 1 });

    const dry = new FaultInjectingFileSystem(copy());
    await repairStore(DIR, { fs: dry });
    const total = dry.opCount;
    assert.ok(total > 10, `${total} operations`);
    for (let n = 0; n < total; n++) {
      const mem = copy();
      let clone: MemoryFileSystem | undefined;
      const fs = new FaultInjectingFileSystem(mem, {
        onOp: (_op, index) => {
          if (index === n) clone = mem.crashClone({ unsyncedRetention: 0.5, seed: n });
        },
      });
      await repairStore(DIR, { fs });
      if (clone === undefined) throw new Error(`no crash at op ${n}`);
      const crashed: MemoryFileSystem = clone;
      await repairStore(DIR, { fs: crashed });
      const where = `crash before op ${n} of ${total}`;
      const reopened = await open(DIR, { fs: crashed });
      try {
        for (let i = 0; i < SMALL; i++) {
          const v = await reopened.get(keyOf(i));
          if (lostKeys.has(keyOf(i))) assert.equal(v, undefined, `${where}: ${keyOf(i)}`);
          else assert.equal(v?.toString(), valueFor(i), `${where}: ${keyOf(i)}`);
        }
      } finally {
        await reopened.close();
      }
      // The damaged original survived in lost/ (under its name or a numbered one).
      const kept = await Promise.all(
        (await crashed.list(`${DIR}/lost`)).map((name) => crashed.readFile(`${DIR}/lost/${name}`)),
      );
      assert.ok(
        kept.some((b) => Buffer.from(b).equals(bytes)),
        `${where}: the original is not in lost/`,
      );
    }
  });
});
