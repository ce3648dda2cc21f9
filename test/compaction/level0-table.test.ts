/**
 * A flush's level-0 table, written from the memtable's image (its entries copied straight
 * from the arena chunks, TableBuilder.addFrom), is byte for byte the table that
 * TableBuilder.add makes from the memtable's key and value views (the way compactions
 * add entries, and the way flushes did), with the same metadata; on the worker thread
 * too. Pinned digests, taken from the builder before addFrom existed, keep the format
 * itself from drifting with both paths at once.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { writeLevel0Table } from "../../src/compaction/level0-table.js";
import { CompactionWorker } from "../../src/compaction/worker-pool.js";
import { MemoryFileSystem } from "../../src/index.js";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { Memtable } from "../../src/memtable/memtable.js";
import { MemtableImageIterator } from "../../src/memtable/memtable-image.js";
import { TableBuilder, type TableOptions } from "../../src/sstable/table-builder.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { rng } from "../support/random.js";
import { tempDir } from "../support/temp-dir.js";

/** n bytes that differ from their neighbours (a copy that moves a byte shows). */
function patternedValue(seed: number, n: number): Buffer {
  const value = Buffer.alloc(n);
  for (let i = 0; i < n; i++) value[i] = (seed * 31 + i * 7 + (i >>> 8)) & 0xff;
  return value;
}

/**
 * Random keys from a small space (overwrites; `key1`, `key12`, `key123`: user keys that
 * extend the previous one), 10 % deletes, value lengths across the copy thresholds (0-299
 * bytes), 1 % values of 70,000 bytes (chunks of their own), some keys over 32 bytes.
 */
function randomMemtable(seed: number): Memtable {
  const random = rng(seed);
  const mem = new Memtable();
  for (let seq = 1; seq <= 5000; seq++) {
    const id = Math.floor(random() * 2000);
    const key = Buffer.from(random() < 0.05 ? `long-key-${"x".repeat(30)}-${id}` : `key${id}`);
    const big = random() < 0.01;
    const value = patternedValue(seq, big ? 70_000 : Math.floor(random() * 300));
    mem.add(seq, random() < 0.1 ? KIND_DELETE : KIND_PUT, key, value);
  }
  return mem;
}

/** The bench's shape: ascending `key_%012d` keys, 100-byte values, every 50th a delete. */
function sequentialMemtable(): Memtable {
  const mem = new Memtable();
  for (let i = 0; i < 6000; i++) {
    const key = Buffer.from(`key_${String(i).padStart(12, "0")}`);
    const value = patternedValue(i, 100);
    mem.add(i + 1, i % 50 === 49 ? KIND_DELETE : KIND_PUT, key, value);
  }
  return mem;
}

/** The table TableBuilder.add makes from the memtable iterator's views, and its bounds. */
async function viaAdd(
  fs: MemoryFileSystem,
  path: string,
  mem: Memtable,
  options: TableOptions,
): Promise<{ bytes: Uint8Array; meta: Omit<FileMetadata, "number" | "size"> }> {
  const file = await fs.createWritable(path);
  const builder = new TableBuilder(file, options);
  const it = mem.iterator();
  for (it.seekToFirst(); it.valid(); it.next()) builder.add(it.key, it.seq, it.kind, it.value);
  const p = builder.finish();
  await file.close();
  const meta = {
    smallestKey: p.smallestKey,
    smallestSeq: p.smallestKeySeq,
    largestKey: p.largestKey,
    largestSeq: p.largestKeySeq,
    entries: p.entries,
    tombstones: p.tombstones,
  };
  return { bytes: fs.readFile(path), meta };
}

const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

const SHAPES: [string, () => Memtable][] = [
  ["random", () => randomMemtable(2)],
  ["sequential", sequentialMemtable],
];
const OPTION_SETS: [string, TableOptions][] = [
  ["defaults", {}],
  [
    "restart 1, 256-byte blocks, no filter",
    { restartInterval: 1, blockSize: 256, bloomBitsPerKey: 0 },
  ],
  ["lz4", { compression: "lz4" }],
];
/**
 * sha256 of the uncompressed tables above (shape, options), as the builder of main 9cb1cad
 * wrote them with TableBuilder.add from the memtable's views. (Not the lz4 ones: another
 * lz4-napi may compress to other, equally valid bytes; see golden.test.ts.)
 */
const DIGESTS: Record<string, string> = {
  "random, defaults": "d9d7bf493d8889eee9c2e540779dde763318e4c76aa120166be3fc0875e5334d",
  "random, restart 1, 256-byte blocks, no filter":
    "4fb731bc183fe2b29354b3799b733305e9322f62ec13860736a7cdc7b5d31556",
  "sequential, defaults": "7d68c12a9e8b651b8b7130e883308eb45a31edb979251c9fd7c77762937cf149",
  "sequential, restart 1, 256-byte blocks, no filter":
    "cf16620b42387067f648102f1c2ab12f7a35d0fb22eff88ec86d2d060a4e8db0",
};

test("the image yields the memtable's entries, in order, as ranges of the arena", () => {
  const mem = randomMemtable(1);
  const it = mem.iterator();
  const image = new MemtableImageIterator(mem.image());
  let n = 0;
  for (it.seekToFirst(), image.seekToFirst(); it.valid(); it.next(), image.next()) {
    assert.ok(image.valid());
    const { bytes, keyStart, keyLength, valueStart, valueLength } = image;
    assert.deepEqual(bytes.subarray(keyStart, keyStart + keyLength), it.key);
    assert.deepEqual(bytes.subarray(valueStart, valueStart + valueLength), it.value);
    assert.deepEqual(image.key, it.key);
    assert.deepEqual(image.value, it.value);
    assert.equal(image.seq, it.seq);
    assert.equal(image.kind, it.kind);
    n++;
  }
  assert.equal(image.valid(), false);
  assert.equal(n, mem.count);
});

for (const [shape, make] of SHAPES) {
  for (const [name, options] of OPTION_SETS) {
    test(`${shape} entries, ${name}: the flush's table equals TableBuilder.add's, byte for byte`, async () => {
      const mem = make();
      const fs = new MemoryFileSystem();
      await fs.mkdir("/a");
      await fs.mkdir("/b");
      const reference = await viaAdd(fs, "/a/000009.sst", mem, options);
      const meta = await writeLevel0Table(fs, "/b", "/b/000009.sst", 9, mem.image(), options);
      const written = fs.readFile("/b/000009.sst");
      assert.equal(written.length, reference.bytes.length);
      assert.ok(Buffer.from(written).equals(reference.bytes), "same bytes");
      assert.deepEqual(meta, { number: 9, size: written.length, ...reference.meta });
      const digest = DIGESTS[`${shape}, ${name}`];
      if (digest !== undefined) assert.equal(sha256(written), digest, "as main's builder wrote it");
    });
  }
}

test("a level-0 table written on the worker equals the one written here", async (t) => {
  const mem = randomMemtable(3);
  const fs = new MemoryFileSystem();
  await fs.mkdir("/a");
  const here = await writeLevel0Table(fs, "/a", "/a/000009.sst", 9, mem.image(), {});

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
  assert.deepEqual(meta, here);
  assert.deepEqual(new Uint8Array(readFileSync(path)), fs.readFile("/a/000009.sst"));
});

test("an empty image is refused before a file is made", async () => {
  const fs = new MemoryFileSystem();
  await fs.mkdir("/a");
  await assert.rejects(
    writeLevel0Table(fs, "/a", "/a/000009.sst", 9, new Memtable().image(), {}),
    /no entries/,
  );
  assert.equal(await fs.exists("/a/000009.sst"), false);
});

test("an inline flush lets the event loop run while it builds (every YIELD_EVERY entries)", async () => {
  const mem = sequentialMemtable();
  const fs = new MemoryFileSystem();
  await fs.mkdir("/a");
  let ticks = 0;
  let building = true;
  const tick = () => {
    ticks++;
    if (building) setImmediate(tick);
  };
  setImmediate(tick);
  const meta = await writeLevel0Table(fs, "/a", "/a/000009.sst", 9, mem.image(), {});
  building = false;
  assert.equal(meta.entries, 6000);
  // 6,000 entries: a yield after the 2,000th and the 4,000th (none after the last).
  assert.ok(ticks >= 2, `${ticks} turns of the event loop during the build`);
});
