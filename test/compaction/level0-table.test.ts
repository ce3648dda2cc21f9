/**
 * A flush's level-0 table is the same file whether it is written from the memtable on this
 * thread or from the memtable's image (on the worker thread, via CompactionWorker.flush):
 * byte for byte, with the same metadata.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { writeLevel0Table } from "../../src/compaction/level0-table.js";
import { CompactionWorker } from "../../src/compaction/worker-pool.js";
import { MemoryFileSystem } from "../../src/index.js";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { Memtable } from "../../src/memtable/memtable.js";
import { MemtableImageIterator } from "../../src/memtable/memtable-image.js";
import { rng } from "../support/random.js";
import { tempDir } from "../support/temp-dir.js";

function filled(seed: number): Memtable {
  const random = rng(seed);
  const mem = new Memtable();
  for (let seq = 1; seq <= 5000; seq++) {
    const key = Buffer.from(`key${Math.floor(random() * 2000)}`);
    const big = random() < 0.01;
    const value = Buffer.alloc(big ? 70_000 : Math.floor(random() * 120), seq & 0xff);
    mem.add(seq, random() < 0.1 ? KIND_DELETE : KIND_PUT, key, value);
  }
  return mem;
}

test("the image yields the memtable's entries, in order", () => {
  const mem = filled(1);
  const it = mem.iterator();
  const image = new MemtableImageIterator(mem.image());
  let n = 0;
  for (it.seekToFirst(), image.seekToFirst(); it.valid(); it.next(), image.next()) {
    assert.ok(image.valid());
    assert.deepEqual(image.key, it.key);
    assert.equal(image.seq, it.seq);
    assert.equal(image.kind, it.kind);
    assert.deepEqual(image.value, it.value);
    n++;
  }
  assert.equal(image.valid(), false);
  assert.equal(n, mem.count);
});

test("a level-0 table written from the image, here or on the worker, equals the inline one", async (t) => {
  const mem = filled(2);
  const fs = new MemoryFileSystem();
  await fs.mkdir("/a");
  await fs.mkdir("/b");
  const inline = await writeLevel0Table(fs, "/a", "/a/000009.sst", 9, mem.iterator(), {});
  const fromImage = await writeLevel0Table(
    fs,
    "/b",
    "/b/000009.sst",
    9,
    new MemtableImageIterator(mem.image()),
    {},
  );
  assert.deepEqual(fromImage, inline);
  assert.deepEqual(fs.readFile("/b/000009.sst"), fs.readFile("/a/000009.sst"));

  const dir = tempDir();
  t.after(dir.remove);
  const worker = new CompactionWorker();
  t.after(() => worker.terminate());
  const path = join(dir.path, "000009.sst");
  const image = mem.image();
  const flushed = worker.flush({ dir: dir.path, path, number: 9, options: {}, image });
  // Nothing was copied or transferred: the arena and the index arrays are shared memory.
  assert.ok(image.positions.buffer instanceof SharedArrayBuffer);
  assert.equal(image.positions.buffer, image.seqs.buffer);
  assert.equal(image.positions.length, mem.count);
  const meta = await flushed;
  assert.deepEqual(meta, inline);
  assert.deepEqual(new Uint8Array(readFileSync(path)), fs.readFile("/a/000009.sst"));
});
