import assert from "node:assert/strict";
import { describe as suite, test } from "node:test";
import { KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import { Block } from "../../src/sstable/block.js";
import { BLOCK_OVERHEAD_BYTES, BlockCache, FRAME_GRANULE } from "../../src/sstable/block-cache.js";
import { TableCache } from "../../src/sstable/table-cache.js";
import { parseTableFileName, tableFileName } from "../../src/sstable/table-file-name.js";
import type { TableReader } from "../../src/sstable/table-reader.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { rejectsWithCode, throwsWithCode } from "../support/errors.js";
import {
  buildTable,
  bytes,
  type Entry,
  hex,
  openTable,
  rng,
  scanForward,
  show,
} from "./helpers.js";

function entriesOf(n: number, tag: string): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      key: bytes(`key${String(i).padStart(5, "0")}`),
      seq: 10,
      kind: KIND_PUT,
      value: bytes(`${tag}-${i}-`.padEnd(60, ".")),
    });
  }
  return out;
}

/** A table of n entries in ~1 KiB blocks (more than 20), with a cache of about `blocks` of them. */
async function tinyCacheTable(n: number, tag: string, blocks: number) {
  const entries = entriesOf(n, tag);
  const { fs, path } = await buildTable(entries, { blockSize: 1024 });
  const cache = new BlockCache(blocks * (1100 + BLOCK_OVERHEAD_BYTES));
  const reader = await openTable(fs, path, { blockCache: cache });
  assert.ok(reader.index.count > 20);
  return { entries, cache, reader };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

suite("the block cache", () => {
  test("serves the second get of a key from the cache", async () => {
    const entries = entriesOf(500, "a");
    const { fs, path } = await buildTable(entries, { blockSize: 1024 });
    const cache = new BlockCache(1 << 20);
    const reader = await openTable(fs, path, { blockCache: cache });
    const key = entries[250]!.key;
    assert.deepEqual(reader.get(key, MAX_SEQUENCE)?.value, entries[250]!.value);
    assert.deepEqual(cache.stats(), {
      hits: 0,
      misses: 1,
      count: 1,
      bytes: cache.stats().bytes,
      capacity: 1 << 20,
      rejected: 0,
    });
    assert.equal(reader.stats.blockReads, 1);
    assert.deepEqual(reader.get(key, MAX_SEQUENCE)?.value, entries[250]!.value);
    assert.equal(cache.stats().hits, 1);
    assert.equal(cache.stats().misses, 1);
    assert.equal(reader.stats.blockReads, 1, "no second read");
    await reader.close();
  });

  test("keeps its charge within the capacity", async () => {
    const entries = entriesOf(2000, "b");
    const { fs, path } = await buildTable(entries, { blockSize: 1024 });
    const capacity = 5000;
    const cache = new BlockCache(capacity);
    const reader = await openTable(fs, path, { blockCache: cache });
    for (const e of entries) {
      assert.deepEqual(reader.get(e.key, MAX_SEQUENCE)?.value, e.value);
      assert.ok(cache.stats().bytes <= capacity);
    }
    const s = cache.stats();
    assert.ok(s.count >= 3 && s.count <= 4, `count ${s.count}`);
    assert.ok(reader.index.count > 100);
    // Block 0 was evicted long ago: the reader does not keep it, it reads it again.
    const reads = reader.stats.blockReads;
    assert.deepEqual(reader.get(entries[0]!.key, MAX_SEQUENCE)?.value, entries[0]!.value);
    assert.equal(reader.stats.blockReads, reads + 1);
    assert.deepEqual(reader.get(entries[0]!.key, MAX_SEQUENCE)?.value, entries[0]!.value);
    assert.equal(reader.stats.blockReads, reads + 1);
    await reader.close();
  });

  test("a scan with fillCache false leaves the cache alone", async () => {
    const entries = entriesOf(1000, "c");
    const { fs, path } = await buildTable(entries, { blockSize: 1024 });
    const cache = new BlockCache(1 << 20);
    const reader = await openTable(fs, path, { blockCache: cache });
    assert.deepEqual(
      scanForward(reader.iterator({ fillCache: false })).map(show),
      entries.map(show),
    );
    assert.equal(cache.stats().count, 0);
    scanForward(reader.iterator());
    assert.equal(cache.stats().count, reader.index.count);
    const reads = reader.stats.blockReads;
    scanForward(reader.iterator({ fillCache: false }));
    assert.equal(reader.stats.blockReads, reads, "cached blocks are used even without filling");
    reader.evictCachedBlocks();
    assert.equal(cache.stats().count, 0);
    await reader.close();
  });

  test("never mixes up blocks of different files at the same offset", async () => {
    const a = entriesOf(300, "a");
    const b = entriesOf(300, "b");
    const ta = await buildTable(a, { blockSize: 1024 });
    const tb = await buildTable(b, { blockSize: 1024 });
    const cache = new BlockCache(1 << 20);
    // 7 and 7 + 2^21 share cache keys: the cache must check the file number of a hit.
    const ra = await openTable(ta.fs, ta.path, { blockCache: cache, fileNumber: 7 });
    const rb = await openTable(tb.fs, tb.path, { blockCache: cache, fileNumber: 7 + 2 ** 21 });
    const rc = await openTable(tb.fs, tb.path, { blockCache: cache, fileNumber: 8 });
    for (let i = 0; i < 300; i += 7) {
      assert.deepEqual(ra.get(a[i]!.key, MAX_SEQUENCE)?.value, a[i]!.value);
      assert.deepEqual(rb.get(b[i]!.key, MAX_SEQUENCE)?.value, b[i]!.value);
      assert.deepEqual(rc.get(b[i]!.key, MAX_SEQUENCE)?.value, b[i]!.value);
      assert.deepEqual(ra.get(a[i]!.key, MAX_SEQUENCE)?.value, a[i]!.value);
    }
    cache.evictFile(8);
    assert.ok(cache.stats().count > 0);
    for (let i = 0; i < 300; i += 7) rc.get(b[i]!.key, MAX_SEQUENCE);
    const before = cache.stats().count;
    cache.evictFile(8);
    assert.ok(cache.stats().count < before);
    await Promise.all([ra.close(), rb.close(), rc.close()]);
  });

  test("capacity 0 caches nothing", async () => {
    const entries = entriesOf(100, "d");
    const { fs, path } = await buildTable(entries, { blockSize: 1024 });
    const cache = new BlockCache(0);
    const reader = await openTable(fs, path, { blockCache: cache });
    reader.get(entries[0]!.key, MAX_SEQUENCE);
    reader.get(entries[0]!.key, MAX_SEQUENCE);
    assert.equal(cache.stats().count, 0);
    assert.equal(reader.stats.blockReads, 2);
    await reader.close();
  });
});

suite("admission of point lookups' blocks (getCopy)", () => {
  // ~1 KiB blocks, a cache of 4 of them.
  const fullCacheTable = (n: number, tag: string) => tinyCacheTable(n, tag, 4);

  test("uniform reads of more blocks than fit: most misses leave the cache as it is", async () => {
    const { entries, cache, reader } = await fullCacheTable(3000, "u");
    const r = rng(7);
    for (let step = 0; step < 3000; step++) {
      const e = entries[Math.floor(r() * entries.length)]!;
      assert.equal(hex(reader.getCopy(e.key, MAX_SEQUENCE)!.value), hex(e.value));
      assert.ok(cache.stats().bytes <= cache.capacity);
    }
    const s = cache.stats();
    assert.equal(s.count, 4, "the cache stays full");
    assert.ok(s.rejected > s.misses / 2, `rejected ${s.rejected} of ${s.misses} misses`);
    await reader.close();
  });

  test("a block read again and again gets in, and is then served from the cache", async () => {
    const { entries, reader } = await fullCacheTable(3000, "h");
    const r = rng(8);
    for (let step = 0; step < 500; step++) {
      reader.getCopy(entries[Math.floor(r() * entries.length)]!.key, MAX_SEQUENCE);
    }
    const hot = entries[1234]!;
    for (let step = 0; step < 20; step++) reader.getCopy(hot.key, MAX_SEQUENCE);
    const reads = reader.stats.blockReads;
    assert.equal(hex(reader.getCopy(hot.key, MAX_SEQUENCE)!.value), hex(hot.value));
    assert.equal(reader.stats.blockReads, reads, "the hot block is cached");
    await reader.close();
  });

  test("values copied before a declined block's memory is reused stay intact", async () => {
    const { entries, cache, reader } = await fullCacheTable(3000, "v");
    const kept: Array<{ value: Uint8Array; want: string }> = [];
    for (let i = 0; i < entries.length; i += 13) {
      const e = entries[i]!;
      kept.push({ value: reader.getCopy(e.key, MAX_SEQUENCE)!.value, want: hex(e.value) });
    }
    assert.ok(cache.stats().rejected > 0);
    for (const { value, want } of kept) assert.equal(hex(value), want);
    await reader.close();
  });

  test("admits: free room says yes; when full, only a more frequent block than the victim", () => {
    const cache = new BlockCache(2 * (1024 + BLOCK_OVERHEAD_BYTES));
    const emptyBlock = (offset: number): Block => {
      const data = new Uint8Array(1024);
      data[1020] = 1; // one restart, at 0: a block without entries
      return new Block(data, "t", offset, 1);
    };
    assert.equal(cache.admits(1, 0, 1024), true, "room left");
    cache.insert(emptyBlock(0));
    cache.insert(emptyBlock(1024));
    assert.equal(cache.stats().count, 2);
    assert.equal(cache.admits(1, 2048, 1024), false, "never asked for: not above the victim");
    assert.equal(cache.stats().rejected, 1);
    for (let i = 0; i < 3; i++) assert.equal(cache.lookup(1, 2048), undefined);
    assert.equal(cache.admits(1, 2048, 1024), true, "asked for 3 times, the victim never");
    assert.equal(cache.stats().rejected, 1);
    assert.equal(cache.admits(1, 4096, 1 << 20), false, "larger than the whole cache");
  });
});

suite("block memory reuse", () => {
  // Blocks of ~1 KiB; a cache of ~3 of them, so every few gets evict and recycle a frame.
  const smallCacheTable = (n: number, tag: string) => tinyCacheTable(n, tag, 3);

  /** getCopy of keys spread over every block: reads, evicts and recycles frames. */
  function churn(reader: TableReader, entries: Entry[], step = 3): void {
    for (let i = 0; i < entries.length; i += step) {
      const got = reader.getCopy(entries[i]!.key, MAX_SEQUENCE);
      assert.equal(hex(got!.value), hex(entries[i]!.value));
    }
  }

  test("getCopy returns copies, and evicted blocks' frames are reused", async () => {
    const { entries, cache, reader } = await smallCacheTable(2000, "p");
    const first = reader.getCopy(entries[0]!.key, MAX_SEQUENCE)!;
    const copy = hex(first.value);
    const reads = reader.stats.blockReads;
    churn(reader, entries);
    churn(reader, entries, 7);
    assert.ok(reader.stats.blockReads > reads + 40, "the churn reads blocks again");
    assert.ok(cache.pooledBytes > 0, "evicted frames went back to the pool");
    assert.equal(hex(first.value), copy, "a copy does not change");
    assert.ok(cache.stats().bytes <= cache.capacity);
    await reader.close();
  });

  test("a frame is recycled: the next read of its size gets the same memory", () => {
    const cache = new BlockCache(1 << 20);
    const a = cache.allocFrame(16 * FRAME_GRANULE);
    assert.equal(a.length, 16 * FRAME_GRANULE);
    cache.freeFrame(a.buffer);
    assert.equal(cache.pooledBytes, 16 * FRAME_GRANULE);
    const b = cache.allocFrame(15 * FRAME_GRANULE + 1);
    assert.equal(b.buffer, a.buffer, "same size class: the same memory");
    assert.equal(b.length, 15 * FRAME_GRANULE + 1);
    assert.equal(cache.pooledBytes, 0);
    assert.notEqual(cache.allocFrame(16 * FRAME_GRANULE).buffer, a.buffer, "taken only once");
  });

  test("an iterator's block is never overwritten after its eviction and memory reuse", async () => {
    const { entries, reader } = await smallCacheTable(2000, "q");
    const it = reader.iterator();
    it.seek(entries[500]!.key, MAX_SEQUENCE);
    const key = it.key;
    const value = it.value;
    const wantKey = hex(entries[500]!.key);
    const wantValue = hex(entries[500]!.value);
    assert.equal(hex(value), wantValue);
    // Many gets: the iterator's block leaves the cache, other blocks come and go.
    churn(reader, entries);
    churn(reader, entries, 5);
    assert.equal(hex(it.key), wantKey);
    assert.equal(hex(key), wantKey);
    assert.equal(hex(value), wantValue, "the iterator's value view is intact");
    // The iterator goes on through its block (and the next ones) correctly.
    for (let i = 501; i < 800; i++) {
      it.next();
      assert.ok(it.valid());
      assert.equal(hex(it.key), hex(entries[i]!.key));
      assert.equal(hex(it.value), hex(entries[i]!.value));
      if (i % 10 === 0) churn(reader, entries, 37);
    }
    it.close();
    await reader.close();
  });

  test("a value view returned by get stays intact after the churn", async () => {
    const { entries, reader } = await smallCacheTable(2000, "r");
    const views: Array<{ view: Uint8Array; want: string }> = [];
    for (let i = 0; i < entries.length; i += 97) {
      views.push({
        view: reader.get(entries[i]!.key, MAX_SEQUENCE)!.value,
        want: hex(entries[i]!.value),
      });
      churn(reader, entries, 11);
    }
    for (const { view, want } of views) assert.equal(hex(view), want);
    await reader.close();
  });

  test("random mix of iterators, get and getCopy with a tiny cache", async () => {
    const { entries, cache, reader } = await smallCacheTable(3000, "s");
    const r = rng(99);
    const its = [reader.iterator(), reader.iterator(), reader.iterator({ fillCache: false })];
    const pos = [-1, -1, -1];
    const kept: Array<{ view: Uint8Array; want: string }> = [];
    for (let step = 0; step < 4000; step++) {
      const op = Math.floor(r() * 10);
      const i = Math.floor(r() * entries.length);
      if (op < 5) {
        const got = reader.getCopy(entries[i]!.key, MAX_SEQUENCE);
        assert.equal(hex(got!.value), hex(entries[i]!.value));
      } else if (op < 6) {
        const view = reader.get(entries[i]!.key, MAX_SEQUENCE)!.value;
        if (kept.length < 50) kept.push({ view, want: hex(entries[i]!.value) });
      } else {
        const k = op % 3;
        const it = its[k]!;
        if (pos[k]! < 0 || pos[k]! + 1 >= entries.length || op === 9) {
          it.seek(entries[i]!.key, MAX_SEQUENCE);
          pos[k] = i;
        } else {
          it.next();
          pos[k]!++;
        }
        assert.equal(hex(it.key), hex(entries[pos[k]!]!.key));
        assert.equal(hex(it.value), hex(entries[pos[k]!]!.value));
      }
      assert.ok(cache.stats().bytes <= cache.capacity);
    }
    for (const { view, want } of kept) assert.equal(hex(view), want);
    for (const it of its) it.close();
    assert.ok(cache.pooledBytes >= 0);
    await reader.close();
  });
});

suite("the table cache", () => {
  async function fiveTables(): Promise<{ fs: MemoryFileSystem; tables: Entry[][] }> {
    const fs = new MemoryFileSystem();
    const tables: Entry[][] = [];
    for (let n = 1; n <= 5; n++) {
      const entries = entriesOf(200, `t${n}`);
      await buildTable(entries, { blockSize: 1024 }, fs, `db/${tableFileName(n)}`);
      tables.push(entries);
    }
    return { fs, tables };
  }

  test("names table files with six-digit numbers", () => {
    assert.equal(tableFileName(7), "000007.sst");
    assert.equal(tableFileName(1234567), "1234567.sst");
    assert.equal(parseTableFileName("000007.sst"), 7);
    assert.equal(parseTableFileName("7.sst"), undefined);
    assert.equal(parseTableFileName("000007.log"), undefined);
    assert.throws(() => tableFileName(-1), RangeError);
  });

  test("keeps at most maxOpenFiles readers open", async () => {
    const { fs, tables } = await fiveTables();
    const cache = new TableCache(fs, "db", {
      maxOpenFiles: 2,
      blockCache: new BlockCache(1 << 20),
    });
    for (let n = 1; n <= 5; n++) {
      const reader = await cache.open(n);
      assert.deepEqual(
        reader.get(tables[n - 1]![3]!.key, MAX_SEQUENCE)?.value,
        tables[n - 1]![3]!.value,
      );
      assert.ok(cache.residentCount <= 2);
    }
    await nextTurn();
    assert.equal(cache.openCount, 2);
    assert.equal(cache.stats.opens, 5);
    assert.equal(cache.stats.closes, 3);
    assert.equal(cache.get(1), undefined);
    assert.ok(cache.get(5) !== undefined);
    assert.equal(cache.stats.hits, 1);
    await cache.close();
    assert.equal(cache.openCount, 0);
    await rejectsWithCode(cache.open(1), "CLOSED");
  });

  test("synchronous opens in one turn close the evicted readers as they go (no descriptor pile-up)", async () => {
    const { fs, tables } = await fiveTables();
    const cache = new TableCache(fs, "db", { maxOpenFiles: 2 });
    const held = await cache.acquire(1);
    // Never yields: a scheduled close would never run.
    for (let round = 0; round < 20; round++) {
      for (let n = 2; n <= 5; n++) {
        const e = tables[n - 1]![round % 200]!;
        const got = cache.openSync(n).getCopy(e.key, MAX_SEQUENCE)?.value;
        assert.deepEqual(got && Uint8Array.from(got), e.value);
        // The two resident, the held one, and at most the one just evicted.
        assert.ok(cache.openCount <= 4, `${cache.openCount} readers open`);
      }
    }
    // The held reader was never closed under its holder.
    for (const e of tables[0]!) assert.deepEqual(held.get(e.key, MAX_SEQUENCE)?.value, e.value);
    cache.release(held);
    await cache.close();
  });

  test("concurrent opens of one table share one reader", async () => {
    const { fs } = await fiveTables();
    const cache = new TableCache(fs, "db", { maxOpenFiles: 10 });
    const [a, b] = await Promise.all([cache.open(3), cache.open(3)]);
    assert.equal(a, b);
    assert.equal(cache.stats.opens, 1);
    assert.equal(await cache.open(3), a);
    await cache.close();
  });

  test("an evicted reader in use stays usable until released", async () => {
    const { fs, tables } = await fiveTables();
    // No block cache: every get reads the file, so a closed file would show.
    const cache = new TableCache(fs, "db", { maxOpenFiles: 1 });
    const held = await cache.acquire(1);
    await cache.open(2);
    await cache.open(3);
    await nextTurn();
    assert.equal(cache.residentCount, 1);
    assert.equal(cache.openCount, 2, "table 3 resident, table 1 held");
    for (const e of tables[0]!) assert.deepEqual(held.get(e.key, MAX_SEQUENCE)?.value, e.value);
    cache.release(held);
    await nextTurn();
    assert.equal(cache.openCount, 1);
    throwsWithCode(() => held.get(tables[0]![0]!.key, MAX_SEQUENCE), "IO_ERROR");
    assert.throws(() => cache.release(held), /unref without a matching ref|closed/);
    await cache.close();
  });

  test("a pinned iterator holds its reader until it is closed", async () => {
    const { fs, tables } = await fiveTables();
    const cache = new TableCache(fs, "db", { maxOpenFiles: 1 });
    const reader = await cache.open(2);
    const it = cache.pinnedIterator(reader, { fillCache: false });
    await cache.open(4);
    await nextTurn();
    assert.equal(cache.openCount, 2);
    assert.deepEqual(scanForward(it).map(show), tables[1]!.map(show));
    it.close();
    it.close();
    await nextTurn();
    assert.equal(cache.openCount, 1);
    await cache.close();
  });

  test("a reader open() returned survives other opens completing before its await resumes", async () => {
    const { fs, tables } = await fiveTables();
    const cache = new TableCache(fs, "db", { maxOpenFiles: 1 });
    const [r1] = await Promise.all([cache.open(1), cache.open(2), cache.open(3)]);
    // r1 was evicted by the later opens, but is not closed before the next turn.
    assert.deepEqual(r1.get(tables[0]![0]!.key, MAX_SEQUENCE)?.value, tables[0]![0]!.value);
    await cache.close();
  });

  test("evict forgets a deleted table and its cached blocks", async () => {
    const { fs } = await fiveTables();
    const blockCache = new BlockCache(1 << 20);
    const cache = new TableCache(fs, "db", { maxOpenFiles: 4, blockCache });
    const reader = await cache.open(1);
    scanForward(reader.iterator());
    assert.ok(blockCache.stats().count > 0);
    cache.evict(1);
    cache.evict(99);
    assert.equal(cache.get(1), undefined);
    assert.equal(blockCache.stats().count, 0);
    await nextTurn();
    assert.equal(cache.openCount, 0);
    await cache.close();
  });

  test("opening a missing or a damaged table is CORRUPTION naming it; neither is kept", async () => {
    const { fs } = await fiveTables();
    const bad = fs.readFile("db/000005.sst");
    bad[bad.length - 1]! ^= 1;
    fs.writeFile("db/000005.sst", bad);
    const cache = new TableCache(fs, "db", { maxOpenFiles: 4 });
    await rejectsWithCode(cache.open(9), "CORRUPTION", { message: /000009\.sst is missing/ });
    await rejectsWithCode(cache.open(5), "CORRUPTION");
    assert.equal(cache.openCount, 0);
    await cache.close();
  });

  test("rejects maxOpenFiles below 1", () => {
    throwsWithCode(
      () => new TableCache(new MemoryFileSystem(), "db", { maxOpenFiles: 0 }),
      "INVALID_ARGUMENT",
    );
  });
});
