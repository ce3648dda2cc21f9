/**
 * TableBuilder's working memory is reused from one builder to the next on a thread
 * (src/sstable/builder-memory.ts): a table must come out byte for byte the same whatever
 * the builders before it left in that memory, with builders alive at the same time, and
 * after one was abandoned or failed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_PUT } from "../../src/key/internal-key.js";
import { TableBuilder } from "../../src/sstable/table-builder.js";
import type { TableOptions } from "../../src/sstable/table-options.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { buildTable, type Entry, randomUserKeys, rng, versionedEntries } from "./helpers.js";

/** Entries of a table: `keys` random user keys with versions, from seed. */
function entriesOf(seed: number, keys: number): Entry[] {
  const r = rng(seed);
  return versionedEntries(r, randomUserKeys(r, keys), 30);
}

/** Big entries: long keys and 5 KB values, so frames and filters grow. */
function bigEntries(): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < 3000; i++) {
    const key = new Uint8Array(300).fill(0xee);
    key[0] = i >> 8;
    key[1] = i & 0xff;
    out.push({
      key,
      seq: 5,
      kind: KIND_PUT,
      value: new Uint8Array(i % 10 === 0 ? 70_000 : 50).fill(i),
    });
  }
  return out;
}

const SMALL: TableOptions = {};
const OTHER: TableOptions = { blockSize: 512, restartInterval: 3, bloomBitsPerKey: 14 };

test("a table's bytes do not depend on the tables built before it", async () => {
  const small = entriesOf(1, 300);
  const alone = (await buildTable(small, SMALL)).bytes;
  // Bigger tables with other options leave grown, dirty buffers behind.
  await buildTable(bigEntries(), OTHER);
  await buildTable(entriesOf(2, 20_000), OTHER);
  assert.deepEqual((await buildTable(small, SMALL)).bytes, alone);
  await buildTable(entriesOf(3, 20_000), { bloomBitsPerKey: 0 });
  assert.deepEqual((await buildTable(small, SMALL)).bytes, alone);
  assert.deepEqual((await buildTable(small, OTHER)).bytes, (await buildTable(small, OTHER)).bytes);
});

test("builders alive at the same time do not share memory", async () => {
  const a = entriesOf(4, 5000);
  const b = entriesOf(5, 4000);
  const c = entriesOf(6, 3000);
  const alone = [
    (await buildTable(a)).bytes,
    (await buildTable(b)).bytes,
    (await buildTable(c, OTHER)).bytes,
  ];
  const fs = new MemoryFileSystem();
  await fs.mkdir("db");
  const sources = [a, b, c];
  const builders = await Promise.all(
    ["db/a.sst", "db/b.sst", "db/c.sst"].map(
      async (p, i) => new TableBuilder(await fs.createWritable(p), i === 2 ? OTHER : undefined),
    ),
  );
  // Interleaved adds, and the first finishes first: its memory goes to the free list while
  // the others still build.
  const n = Math.max(...sources.map((s) => s.length));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < 3; j++) {
      const e = sources[j]![i];
      if (e !== undefined) builders[j]!.add(e.key, e.seq, e.kind, e.value);
    }
    if (i === 1000) {
      const extra = new TableBuilder(await fs.createWritable("db/extra.sst"));
      for (const e of entriesOf(7, 500)) extra.add(e.key, e.seq, e.kind, e.value);
      extra.finish();
    }
  }
  for (const builder of builders) builder.finish();
  for (const f of [builders[0]!.file, builders[1]!.file, builders[2]!.file]) await f.close();
  assert.deepEqual(fs.readFile("db/a.sst"), alone[0]);
  assert.deepEqual(fs.readFile("db/b.sst"), alone[1]);
  assert.deepEqual(fs.readFile("db/c.sst"), alone[2]);
});

test("after finish or abandon a builder refuses work; the next table is unaffected", async () => {
  const small = entriesOf(8, 300);
  const alone = (await buildTable(small)).bytes;
  const fs = new MemoryFileSystem();
  await fs.mkdir("db");
  const half = new TableBuilder(await fs.createWritable("db/half.sst"));
  for (const e of entriesOf(9, 2000)) half.add(e.key, e.seq, e.kind, e.value);
  half.abandon();
  half.abandon();
  const e = small[0]!;
  assert.throws(() => half.add(e.key, e.seq, e.kind, e.value), /abandoned/);
  assert.throws(() => half.finish(), /abandoned/);
  // The second abandon gave nothing back again: two builders now get memory of their own.
  const x = entriesOf(12, 1000);
  const y = entriesOf(13, 1000);
  const xAlone = (await buildTable(x)).bytes;
  const yAlone = (await buildTable(y)).bytes;
  const bx = new TableBuilder(await fs.createWritable("db/x.sst"));
  const by = new TableBuilder(await fs.createWritable("db/y.sst"));
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const ex = x[i];
    const ey = y[i];
    if (ex !== undefined) bx.add(ex.key, ex.seq, ex.kind, ex.value);
    if (ey !== undefined) by.add(ey.key, ey.seq, ey.kind, ey.value);
  }
  bx.finish();
  by.finish();
  assert.deepEqual(fs.readFile("db/x.sst"), xAlone);
  assert.deepEqual(fs.readFile("db/y.sst"), yAlone);
  const done = new TableBuilder(await fs.createWritable("db/done.sst"));
  done.add(e.key, e.seq, e.kind, e.value);
  const result = done.finish();
  assert.equal(done.estimatedSize, result.fileSize);
  assert.throws(() => done.add(e.key, e.seq + 1, e.kind, e.value), /finished/);
  assert.deepEqual((await buildTable(small)).bytes, alone);
});

test("a builder whose write failed gives its memory back when abandoned", async () => {
  const small = entriesOf(10, 300);
  const alone = (await buildTable(small)).bytes;
  const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
  await fs.mkdir("db");
  const file = await fs.createWritable("db/bad.sst");
  const builder = new TableBuilder(file);
  fs.setInjector((op) => op.kind === "append");
  assert.throws(() => {
    for (const e of entriesOf(11, 20_000)) builder.add(e.key, e.seq, e.kind, e.value);
  }, /write table/);
  builder.abandon();
  assert.deepEqual((await buildTable(small)).bytes, alone);
});
