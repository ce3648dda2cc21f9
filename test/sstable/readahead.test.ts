import assert from "node:assert/strict";
import { describe as suite, test } from "node:test";
import { isKvError, type KvError } from "../../src/errors.js";
import type { InternalIterator } from "../../src/key/internal-iterator.js";
import { KIND_DELETE, KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import { BlockCache } from "../../src/sstable/block-cache.js";
import { BLOCK_TRAILER_SIZE, type CompressionName } from "../../src/sstable/format.js";
import { TableReader } from "../../src/sstable/table-reader.js";
import { BufferPool } from "../../src/util/buffer-pool.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { assertKvError } from "../support/errors.js";
import {
  at,
  type BuiltTable,
  buildTable,
  bytes,
  type Entry,
  hex,
  openBytes,
  openTable,
  randomBytes,
  randomUserKeys,
  rng,
  scanBackward,
  scanForward,
  show,
  versionedEntries,
} from "./helpers.js";

const PATH = "db/000001.sst";
const BLOCK_SIZE = 512;

/**
 * Versioned entries over random keys; put values are half text (deflate shrinks the blocks)
 * and half random bytes (so each value differs from the others).
 */
function tableEntries(seed: number, keys: number): Entry[] {
  const r = rng(seed);
  return versionedEntries(r, randomUserKeys(r, keys), 0).map((e, i) => {
    if (e.kind === KIND_DELETE) return e;
    const text = bytes(`value ${i} `.repeat(1 + Math.floor(r() * 6)));
    const value = new Uint8Array(text.length + 8);
    value.set(text);
    value.set(randomBytes(r, 8), text.length);
    return { ...e, value };
  });
}

async function build(entries: readonly Entry[], compression: CompressionName): Promise<BuiltTable> {
  const built = await buildTable(entries, { blockSize: BLOCK_SIZE, compression });
  assert.ok(built.result.dataBlocks > 50, `${built.result.dataBlocks} data blocks`);
  if (compression === "deflate") {
    assert.ok(built.result.compressedDataBlocks > built.result.dataBlocks / 2);
  }
  return built;
}

/** End of the data blocks: the end of the last one's trailer. */
function dataEnd(reader: TableReader): number {
  const n = reader.index.count;
  return reader.index.blockOffsets[n - 1]! + reader.index.blockSizes[n - 1]! + BLOCK_TRAILER_SIZE;
}

/**
 * How many chunks a forward scan reads ahead with chunks of `size` bytes: each starts at a
 * block and takes the blocks after it while the chunk stays within size (the table's
 * blocks lie back to back).
 */
function chunksOf(reader: TableReader, size: number): number {
  const { count, blockOffsets, blockSizes } = reader.index;
  let chunks = 0;
  for (let i = 0; i < count; chunks++) {
    const start = blockOffsets[i]!;
    i++;
    while (i < count && blockOffsets[i]! + blockSizes[i]! + BLOCK_TRAILER_SIZE - start <= size) i++;
  }
  return chunks;
}

/** Scans forward until the end or an error: the entries served and the error, if any. */
function scanUntilError(it: InternalIterator): { entries: string[]; error: unknown } {
  const entries: string[] = [];
  try {
    for (it.seekToFirst(); it.valid(); it.next()) entries.push(at(it));
  } catch (err) {
    return { entries, error: err };
  }
  return { entries, error: undefined };
}

function isCorruption(err: unknown): err is KvError {
  return isKvError(err, "CORRUPTION");
}

for (const compression of ["none", "deflate"] as const) {
  suite(`read-ahead iteration, compression ${compression}`, async () => {
    const entries = tableEntries(compression === "none" ? 1 : 2, 1500);
    const built = await build(entries, compression);
    const want = entries.map(show);

    test("yields exactly the entries of the normal iterator, whatever the chunk size", async () => {
      const reader = await openTable(built.fs, built.path);
      const count = reader.index.count;
      assert.deepEqual(scanForward(reader.iterator({ fillCache: false })).map(show), want);
      const frames = dataEnd(reader) - reader.index.blockOffsets[0]!;
      const sizes = {
        "smaller than a block": 1,
        "about three blocks": Math.round((3 * frames) / count),
        "about eight blocks": Math.round((8.5 * frames) / count),
        "larger than the file": 2 * built.bytes.length,
      };
      for (const [what, size] of Object.entries(sizes)) {
        const before = { ...reader.stats };
        const got = scanForward(reader.iterator({ fillCache: false, readaheadBytes: size }));
        assert.deepEqual(got.map(show), want, what);
        const reads = reader.stats.readaheadReads - before.readaheadReads;
        assert.equal(reader.stats.blockReads - before.blockReads, count, `${what}: blocks served`);
        assert.equal(
          reader.stats.blockBytesRead - before.blockBytesRead,
          dataEnd(reader) - reader.index.blockOffsets[0]!,
          `${what}: every data byte read once`,
        );
        assert.equal(reads, chunksOf(reader, size), `${what}: chunk reads`);
        if (size === 1) assert.equal(reads, count, `${what}: a chunk per block`);
        else if (size > built.bytes.length) assert.equal(reads, 1, `${what}: one chunk`);
        else assert.ok(reads > 1 && reads < count / 2, `${what}: ${reads} chunks`);
        const reused = reader.iterator({
          fillCache: false,
          readaheadBytes: size,
          readaheadReuse: true,
        });
        assert.deepEqual(scanForward(reused).map(show), want, `${what}: chunk memory reused`);
      }
      await reader.close();
    });

    test("a flipped bit in a data block is CORRUPTION naming the file and the block", async () => {
      const probe = await openTable(built.fs, built.path);
      const offsets = probe.index.blockOffsets;
      await probe.close();
      // Block 5 lies inside an 8-block chunk, not at its start.
      const block = 5;
      const damaged = built.bytes.slice();
      damaged[offsets[block]! + 17]! ^= 0x10;
      const reader = await openBytes(damaged);
      const plain = scanUntilError(reader.iterator({ fillCache: false }));
      const ahead = scanUntilError(reader.iterator({ readaheadBytes: 8 * BLOCK_SIZE }));
      for (const { error } of [plain, ahead]) {
        assert.ok(isCorruption(error), `expected CORRUPTION, got ${String(error)}`);
        assert.equal(error.file, PATH);
        assert.ok(error.message.includes(PATH), error.message);
        assert.match(error.message, new RegExp(`data block at offset ${offsets[block]}: checksum`));
      }
      assert.ok(ahead.entries.length >= block, "the blocks before it were served");
      assert.deepEqual(ahead.entries, plain.entries);
      assert.deepEqual(ahead.entries, want.slice(0, ahead.entries.length));
      assert.equal(reader.stats.readaheadReads, 1, "the damaged block was in the first chunk");
      await reader.close();
    });

    for (const verifyChecksums of [true, false]) {
      test(`a file shorter than at open is CORRUPTION, never misread (verify ${verifyChecksums})`, async () => {
        const fs = new MemoryFileSystem();
        const { path } = await buildTable(entries, { blockSize: BLOCK_SIZE, compression }, fs);
        const reader = await openTable(fs, path, { verifyChecksums });
        const offsets = reader.index.blockOffsets;
        const block = 6;
        const cut = offsets[block]! + 10;
        const file = await fs.openWritable(path);
        await file.truncate(cut);
        await file.close();
        const plain = scanUntilError(reader.iterator({ fillCache: false }));
        const before = reader.stats.blockBytesRead;
        const ahead = scanUntilError(reader.iterator({ readaheadBytes: 1 << 20 }));
        const frame = reader.index.blockSizes[block]! + BLOCK_TRAILER_SIZE;
        for (const { error } of [plain, ahead]) {
          assert.ok(isCorruption(error), `expected CORRUPTION, got ${String(error)}`);
          assert.equal(error.file, PATH);
          assert.match(
            error.message,
            new RegExp(
              `data block at offset ${offsets[block]}: truncated, read 10 of ${frame} bytes`,
            ),
          );
        }
        assert.ok(ahead.entries.length >= block);
        assert.deepEqual(ahead.entries, plain.entries);
        assert.deepEqual(ahead.entries, want.slice(0, ahead.entries.length));
        // The chunk read asked for every data byte and got those before the cut.
        assert.equal(reader.stats.readaheadReads, 1);
        assert.equal(reader.stats.blockBytesRead - before, cut - offsets[0]!);
        await reader.close();
      });
    }
  });
}

suite("read-ahead file reads", async () => {
  const entries = tableEntries(3, 1500);
  const built = await build(entries, "none");
  const want = entries.map(show);

  async function faulty(): Promise<{ fs: FaultInjectingFileSystem; reader: TableReader }> {
    const fs = new FaultInjectingFileSystem(built.fs);
    return { fs, reader: TableReader.open(await fs.openReadable(built.path), 1) };
  }

  test("one read per chunk instead of one per block", async () => {
    const { fs, reader } = await faulty();
    const count = reader.index.count;
    let reads = fs.count("read");
    assert.deepEqual(scanForward(reader.iterator({ fillCache: false })).map(show), want);
    assert.equal(fs.count("read") - reads, count, "without read-ahead: a read per block");
    const chunk = 16 * 1024;
    let maxFrame = 0;
    for (let i = 0; i < count; i++) {
      maxFrame = Math.max(maxFrame, reader.index.blockSizes[i]! + BLOCK_TRAILER_SIZE);
    }
    reads = fs.count("read");
    const it = reader.iterator({ fillCache: false, readaheadBytes: chunk });
    assert.deepEqual(scanForward(it).map(show), want);
    const chunkReads = fs.count("read") - reads;
    assert.equal(chunkReads, reader.stats.readaheadReads);
    // Every chunk but the last holds more than chunk - maxFrame bytes.
    assert.ok(chunkReads <= Math.ceil(dataEnd(reader) / (chunk - maxFrame)), `${chunkReads}`);
    assert.ok(chunkReads * 10 < count, `${chunkReads} reads for ${count} blocks`);
    await reader.close();
  });

  test("a failed read is IO_ERROR naming the file; the iterator recovers once reads work", async () => {
    for (const n of [0, 1, 4]) {
      const { fs, reader } = await faulty();
      fs.setInjector(FaultInjectingFileSystem.failNth(n, (op) => op.kind === "read"));
      const it = reader.iterator({ fillCache: false, readaheadBytes: 4 * BLOCK_SIZE });
      const { entries: served, error } = scanUntilError(it);
      assertKvError(error, "IO_ERROR", { file: PATH, message: /read-ahead/ }, `read ${n}`);
      assert.ok(!it.valid());
      assert.equal(served.length > 0, n > 0, `read ${n}: entries before the failure`);
      assert.deepEqual(served, want.slice(0, served.length));
      fs.setInjector(undefined);
      assert.deepEqual(scanForward(it).map(show), want, `read ${n}: after the failure`);
      it.close();
      await reader.close();
    }
  });
});

suite("read-ahead semantics", async () => {
  const entries = tableEntries(4, 1500);
  const built = await build(entries, "none");
  const want = entries.map(show);

  test("values handed out stay intact after the iterator moves to later chunks", async () => {
    const reader = await openTable(built.fs, built.path);
    const it = reader.iterator({ fillCache: false, readaheadBytes: 4 * BLOCK_SIZE });
    const held: Array<{ view: Uint8Array; want: string }> = [];
    let i = 0;
    for (it.seekToFirst(); it.valid(); it.next(), i++) {
      if (i % 40 === 0 && it.value.length > 0) held.push({ view: it.value, want: hex(it.value) });
    }
    assert.equal(i, entries.length);
    // Another scan reads more chunks of the same sizes.
    assert.deepEqual(
      scanForward(reader.iterator({ readaheadBytes: 4 * BLOCK_SIZE })).map(show),
      want,
    );
    assert.ok(held.length > 20 && reader.stats.readaheadReads > 20);
    for (const h of held) assert.equal(hex(h.view), h.want);
    assert.equal(hex(held[0]!.view), hex(entries.find((e) => e.value.length > 0)!.value));
    await reader.close();
  });

  test("readaheadReuse reads every chunk into the same memory", async () => {
    const reader = await openTable(built.fs, built.path);
    const it = reader.iterator({
      fillCache: false,
      readaheadBytes: 4 * BLOCK_SIZE,
      readaheadReuse: true,
    });
    const buffers = new Set<ArrayBufferLike>();
    const got: string[] = [];
    for (it.seekToFirst(); it.valid(); it.next()) {
      got.push(show({ key: it.key, seq: it.seq, kind: it.kind, value: it.value }));
      if (it.value.length > 0) buffers.add(it.value.buffer);
    }
    assert.deepEqual(got, want);
    assert.ok(reader.stats.readaheadReads > 20, `${reader.stats.readaheadReads} chunks`);
    // Memory of readaheadBytes is allocated once (no block here is larger than that).
    assert.equal(buffers.size, 1, `${buffers.size} chunk buffers`);
    await reader.close();
  });

  test("readaheadPool: the chunk memory comes from the pool and goes back at close", async () => {
    const reader = await openTable(built.fs, built.path);
    const bytes = 4 * BLOCK_SIZE;
    const pool = new BufferPool<ArrayBuffer>(8 * bytes);
    const options = {
      fillCache: false,
      readaheadBytes: bytes,
      readaheadReuse: true,
      readaheadPool: pool,
    };
    const first = reader.iterator(options);
    first.seekToFirst();
    const memory = first.value.buffer;
    assert.equal(pool.pooledBytes, 0);
    first.close();
    assert.equal(pool.pooledBytes, bytes, "given back at close");
    first.close();
    assert.equal(pool.pooledBytes, bytes, "once");
    // Another table's iterator reads into that memory, over the first table's bytes.
    const other = tableEntries(77, 3000);
    const otherBuilt = await build(other, "none");
    const otherReader = await openTable(otherBuilt.fs, otherBuilt.path);
    const second = otherReader.iterator(options);
    const got: string[] = [];
    for (second.seekToFirst(); second.valid(); second.next()) {
      got.push(show({ key: second.key, seq: second.seq, kind: second.kind, value: second.value }));
      if (second.value.length > 0) assert.equal(second.value.buffer, memory);
    }
    assert.equal(pool.reused, 1);
    assert.deepEqual(got, other.map(show));
    second.close();
    const third = reader.iterator(options);
    assert.deepEqual(scanForward(third).map(show), want);
    third.close();
    assert.equal(pool.reused, 2);
    // An iterator that never read takes nothing and gives nothing.
    reader.iterator(options).close();
    assert.equal(pool.pooledBytes, bytes);
    await reader.close();
    await otherReader.close();
  });

  test("reverse iteration and seeks give the same answers as without read-ahead", async () => {
    const reader = await openTable(built.fs, built.path);
    const options = { fillCache: false, readaheadBytes: 3 * BLOCK_SIZE };
    assert.deepEqual(scanBackward(reader.iterator(options)).map(show), [...want].reverse());
    const r = rng(5);
    const plain = reader.iterator({ fillCache: false });
    const ahead = reader.iterator(options);
    for (let round = 0; round < 300; round++) {
      const e = entries[Math.floor(r() * entries.length)]!;
      const seq = r() < 0.5 ? MAX_SEQUENCE : e.seq;
      const key = r() < 0.8 ? e.key : randomBytes(r, 3);
      if (r() < 0.5) {
        plain.seek(key, seq);
        ahead.seek(key, seq);
      } else {
        plain.seekForPrev(key, seq);
        ahead.seekForPrev(key, seq);
      }
      const forward = r() < 0.6;
      for (let step = 0; step < 40 && plain.valid(); step++) {
        assert.equal(at(ahead), at(plain), `round ${round} step ${step}`);
        if (forward) {
          plain.next();
          ahead.next();
        } else {
          plain.prev();
          ahead.prev();
        }
      }
      assert.equal(at(ahead), at(plain), `round ${round} end`);
    }
    assert.ok(reader.stats.readaheadReads > 0, "forward runs after seeks read ahead");
    await reader.close();
  });

  test("cached blocks are used; blocks read ahead are not cached", async () => {
    const cache = new BlockCache(1 << 20);
    const reader = await openTable(built.fs, built.path, { blockCache: cache });
    assert.deepEqual(reader.get(entries[0]!.key, MAX_SEQUENCE)?.value, entries[0]!.value);
    assert.equal(cache.stats().count, 1);
    const reads = reader.stats.blockReads;
    const hits = cache.stats().hits;
    const got = scanForward(reader.iterator({ readaheadBytes: built.bytes.length }));
    assert.deepEqual(got.map(show), want);
    assert.equal(cache.stats().count, 1, "nothing added, even with fillCache true");
    assert.equal(cache.stats().hits, hits + 1, "block 0 came from the cache");
    assert.equal(reader.stats.blockReads - reads, reader.index.count - 1);
    assert.equal(reader.stats.readaheadReads, 1, "one chunk: blocks 1 to the end");
    await reader.close();
  });

  test("readaheadBytes must be a number >= 0", async () => {
    const reader = await openTable(built.fs, built.path);
    assert.throws(() => reader.iterator({ readaheadBytes: -1 }), RangeError);
    assert.throws(() => reader.iterator({ readaheadBytes: Number.NaN }), RangeError);
    assert.deepEqual(scanForward(reader.iterator({ readaheadBytes: 0 })).map(show), want);
    assert.equal(reader.stats.readaheadReads, 0, "0 is off");
    await reader.close();
  });
});

test("a table with a single entry, and an empty table, read ahead", async () => {
  const one: Entry = { key: bytes("k"), seq: 1, kind: KIND_PUT, value: bytes("v") };
  for (const entries of [[one], []]) {
    const { fs, path } = await buildTable(entries);
    const reader = await openTable(fs, path);
    const it = reader.iterator({ readaheadBytes: 1 << 20 });
    assert.deepEqual(scanForward(it).map(show), entries.map(show));
    assert.deepEqual(scanBackward(it).map(show), entries.map(show));
    await reader.close();
  }
});
