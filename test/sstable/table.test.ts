import assert from "node:assert/strict";
import { describe as suite, test } from "node:test";
import { KIND_DELETE, KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import { WRITE_BUFFER_BYTES } from "../../src/sstable/builder-memory.js";
import { putTrailer } from "../../src/sstable/key-bytes.js";
import { TableBuilder } from "../../src/sstable/table-builder.js";
import type { TableOptions } from "../../src/sstable/table-options.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { throwsWithCode } from "../support/errors.js";
import {
  at,
  buildTable,
  bytes,
  type Entry,
  hex,
  lowerBound,
  modelGet,
  openTable,
  randomUserKeys,
  rng,
  scanBackward,
  scanForward,
  show,
  upperBoundForPrev,
  versionedEntries,
} from "./helpers.js";

const CONFIGS: Array<[string, TableOptions]> = [
  ["default options", {}],
  [
    "512-byte blocks, restart interval 1, deflate",
    { blockSize: 512, restartInterval: 1, compression: "deflate" },
  ],
];

for (const [name, options] of CONFIGS) {
  suite(`a table of 100k entries (${name})`, async () => {
    const r = rng(42);
    const keys = randomUserKeys(r, 40_000);
    const entries = versionedEntries(r, keys, 60);
    const built = await buildTable(entries, options);
    const reader = await openTable(built.fs, built.path);

    test("records its properties", () => {
      const p = reader.properties;
      assert.equal(p.entries, entries.length);
      assert.ok(entries.length > 90_000, `${entries.length} entries`);
      assert.equal(p.tombstones, entries.filter((e) => e.kind === KIND_DELETE).length);
      assert.equal(hex(p.smallestKey), hex(entries[0]!.key));
      assert.equal(p.smallestKeySeq, entries[0]!.seq);
      assert.equal(hex(p.largestKey), hex(entries.at(-1)!.key));
      assert.equal(p.largestKeySeq, entries.at(-1)!.seq);
      assert.equal(p.smallestSeq, Math.min(...entries.map((e) => e.seq)));
      assert.equal(p.largestSeq, Math.max(...entries.map((e) => e.seq)));
      assert.equal(
        p.rawKeyBytes,
        entries.reduce((s, e) => s + e.key.length, 0),
      );
      assert.equal(
        p.rawValueBytes,
        entries.reduce((s, e) => s + e.value.length, 0),
      );
      assert.equal(p.dataBlocks, reader.index.count);
      assert.ok(p.dataBlocks > 10);
      assert.equal(p.compression, options.compression ?? "none");
      assert.equal(built.result.fileSize, built.bytes.length);
      assert.equal(reader.fileSize, built.bytes.length);
      assert.deepEqual({ ...built.result, fileSize: 0 }, { ...p, fileSize: 0 });
    });

    test("get returns the newest version at or below the sequence, tombstones included", () => {
      const rr = rng(5);
      for (let n = 0; n < 20_000; n++) {
        const e = entries[Math.floor(rr() * entries.length)]!;
        for (const seq of [e.seq, e.seq - 1, e.seq + 1, MAX_SEQUENCE, 0]) {
          const want = modelGet(entries, e.key, seq);
          const got = reader.get(e.key, seq);
          assert.equal(
            got === undefined ? "<none>" : `${got.kind}:${hex(got.value)}`,
            want === undefined ? "<none>" : `${want.kind}:${hex(want.value)}`,
            `get(${hex(e.key)}, ${seq})`,
          );
        }
      }
    });

    test("get of absent keys returns undefined", () => {
      const rr = rng(6);
      for (let n = 0; n < 5000; n++) {
        const e = entries[Math.floor(rr() * entries.length)]!;
        const k = new Uint8Array(e.key.length + 1);
        k.set(e.key);
        k[e.key.length] = Math.floor(rr() * 256);
        if (modelGet(entries, k, MAX_SEQUENCE) !== undefined) continue;
        assert.equal(reader.get(k, MAX_SEQUENCE), undefined);
      }
      assert.equal(reader.get(bytes("\xff\xff\xff\xff\xff\xff\xff\xff"), MAX_SEQUENCE), undefined);
    });

    test("iterates forward and backward over every entry", () => {
      const it = reader.iterator();
      assert.deepEqual(scanForward(it).map(show), entries.map(show));
      assert.deepEqual(scanBackward(it).map(show), entries.map(show).reverse());
      it.close();
    });

    test("seek and seekForPrev agree with the model", () => {
      const it = reader.iterator();
      const rr = rng(8);
      for (let n = 0; n < 5000; n++) {
        const e = entries[Math.floor(rr() * entries.length)]!;
        const key = rr() < 0.5 ? e.key : Uint8Array.of(...e.key, Math.floor(rr() * 256));
        const seq = rr() < 0.3 ? e.seq : Math.floor(rr() * 1_100_000);
        it.seek(key, seq);
        assert.equal(at(it), show(entries[lowerBound(entries, key, seq)]), "seek");
        it.seekForPrev(key, seq);
        assert.equal(at(it), show(entries[upperBoundForPrev(entries, key, seq)]), "seekForPrev");
      }
      it.seek(new Uint8Array(0), MAX_SEQUENCE);
      assert.equal(at(it), show(entries[0]));
      it.seekForPrev(bytes("\xff\xff\xff\xff\xff\xff\xff\xff\xff"), 0);
      assert.equal(at(it), show(entries.at(-1)));
      it.close();
    });

    test("mixed next and prev moves cross block boundaries both ways", () => {
      const it = reader.iterator();
      const rr = rng(9);
      let pos = 0;
      it.seekToFirst();
      for (let step = 0; step < 20_000; step++) {
        if (pos < 0 || pos >= entries.length) {
          assert.equal(it.valid(), false);
          pos = Math.floor(rr() * entries.length);
          it.seek(entries[pos]!.key, entries[pos]!.seq);
        }
        assert.equal(at(it), show(entries[pos]));
        const forward = rr() < 0.5;
        const steps = 1 + Math.floor(rr() * 40);
        for (let s = 0; s < steps && pos >= 0 && pos < entries.length; s++) {
          if (forward) {
            it.next();
            pos++;
          } else {
            it.prev();
            pos--;
          }
        }
      }
      it.close();
    });

    test("closes its file", async () => {
      await reader.close();
      await reader.close();
    });
  });
}

suite("small tables", () => {
  test("a single-entry table", async () => {
    const e: Entry = { key: bytes("only"), seq: 7, kind: KIND_PUT, value: bytes("one") };
    const { fs, path, result } = await buildTable([e]);
    assert.equal(result.entries, 1);
    assert.equal(result.dataBlocks, 1);
    const reader = await openTable(fs, path);
    assert.deepEqual(reader.get(bytes("only"), 7), { kind: KIND_PUT, value: bytes("one") });
    assert.equal(reader.get(bytes("only"), 6), undefined);
    assert.equal(reader.get(bytes("onlz"), 9), undefined);
    assert.equal(reader.get(bytes("a"), 9), undefined);
    const it = reader.iterator();
    assert.deepEqual(scanForward(it).map(show), [show(e)]);
    assert.deepEqual(scanBackward(it).map(show), [show(e)]);
    it.seek(bytes("p"), 0);
    assert.equal(it.valid(), false);
    it.seekForPrev(bytes("a"), 0);
    assert.equal(it.valid(), false);
    await reader.close();
  });

  test("an empty table has no data blocks and finds nothing", async () => {
    const { fs, path, result } = await buildTable([]);
    assert.equal(result.entries, 0);
    assert.equal(result.dataBlocks, 0);
    const reader = await openTable(fs, path);
    assert.equal(reader.get(bytes("a"), MAX_SEQUENCE), undefined);
    assert.equal(reader.mayContain(bytes("a")), false);
    const it = reader.iterator();
    it.seekToFirst();
    assert.equal(it.valid(), false);
    it.seekToLast();
    assert.equal(it.valid(), false);
    it.seek(bytes("a"), 1);
    assert.equal(it.valid(), false);
    it.seekForPrev(bytes("a"), 1);
    assert.equal(it.valid(), false);
    await reader.close();
  });

  test("entries with empty values and empty keys", async () => {
    const entries: Entry[] = [
      { key: new Uint8Array(0), seq: 4, kind: KIND_PUT, value: new Uint8Array(0) },
      { key: new Uint8Array(0), seq: 3, kind: KIND_DELETE, value: new Uint8Array(0) },
      { key: bytes("a"), seq: 2, kind: KIND_PUT, value: new Uint8Array(0) },
      { key: bytes("b"), seq: 1, kind: KIND_PUT, value: bytes("not empty") },
    ];
    const { fs, path } = await buildTable(entries);
    const reader = await openTable(fs, path);
    assert.deepEqual(reader.get(new Uint8Array(0), 10), {
      kind: KIND_PUT,
      value: new Uint8Array(0),
    });
    assert.deepEqual(reader.get(new Uint8Array(0), 3), {
      kind: KIND_DELETE,
      value: new Uint8Array(0),
    });
    assert.deepEqual(reader.get(bytes("a"), 10), { kind: KIND_PUT, value: new Uint8Array(0) });
    assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
    await reader.close();
  });

  test("huge values (larger than a block) make blocks of their own", async () => {
    const r = rng(3);
    const entries: Entry[] = [];
    for (let i = 0; i < 20; i++) {
      const size = i % 3 === 0 ? 3 * 4096 + i : i % 3 === 1 ? 200_000 : 10;
      const value = new Uint8Array(size);
      for (let j = 0; j < size; j += 97) value[j] = Math.floor(r() * 256);
      entries.push({
        key: bytes(`big${String(i).padStart(3, "0")}`),
        seq: 100 - i,
        kind: KIND_PUT,
        value,
      });
    }
    const { fs, path, result } = await buildTable(entries);
    assert.ok(result.dataBlocks >= 13, `${result.dataBlocks} blocks`);
    const reader = await openTable(fs, path);
    for (const e of entries) assert.equal(hex(reader.get(e.key, 1000)!.value), hex(e.value));
    assert.deepEqual(scanBackward(reader.iterator()).map(show), entries.map(show).reverse());
    await reader.close();
  });

  test("the index uses short separators between blocks", async () => {
    const entries: Entry[] = [];
    for (let i = 0; i < 13; i++) {
      // "a-----...", "c-----...", ...: one per block (1000-byte values, 1024-byte blocks).
      const key = bytes(`${String.fromCharCode(97 + 2 * i)}${"-".repeat(30)}`);
      entries.push({ key, seq: 1, kind: KIND_PUT, value: new Uint8Array(1000).fill(i) });
    }
    const { fs, path } = await buildTable(entries, { blockSize: 1024 });
    const reader = await openTable(fs, path);
    assert.equal(reader.index.count, 13);
    for (let i = 0; i < 13; i++) {
      // Separator "b", "d", ... and the successor "z": one byte + the 8-byte trailer.
      assert.equal(hex(reader.index.key(i).subarray(0, 1)), (98 + 2 * i).toString(16));
      assert.equal(reader.index.key(i).length, 9);
    }
    for (const e of entries) assert.equal(reader.get(e.key, 1)?.value[0], e.value[0]);
    for (let i = 0; i < 13; i++) {
      assert.equal(reader.get(bytes(String.fromCharCode(98 + 2 * i)), MAX_SEQUENCE), undefined);
    }
    assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
    await reader.close();
  });

  test("mayContain checks the key range and the filter; approximateOffsetOf grows with keys", async () => {
    const entries: Entry[] = [];
    for (let i = 0; i < 500; i++) {
      entries.push({
        key: bytes(`m${String(i).padStart(4, "0")}`),
        seq: 1,
        kind: KIND_PUT,
        value: new Uint8Array(50),
      });
    }
    const { fs, path, result } = await buildTable(entries, { blockSize: 1024 });
    const reader = await openTable(fs, path);
    assert.equal(reader.mayContain(bytes("m0100")), true);
    assert.equal(reader.mayContain(bytes("a")), false);
    assert.equal(reader.mayContain(bytes("z")), false);
    assert.equal(reader.approximateOffsetOf(bytes("a")), 0);
    const mid = reader.approximateOffsetOf(bytes("m0250"));
    assert.ok(mid > 10_000 && mid < 25_000, `${mid}`);
    const end = reader.approximateOffsetOf(bytes("z"));
    assert.ok(end > mid && end < result.fileSize);
    await reader.close();
  });

  test("the builder rejects keys out of order and calls out of order", async () => {
    const fs = new MemoryFileSystem();
    const file = await fs.createWritable("t.sst");
    const b = new TableBuilder(file);
    b.add(bytes("b"), 5, KIND_PUT, bytes("1"));
    const outOfOrder = (fn: () => void) => throwsWithCode(fn, "INVALID_ARGUMENT");
    outOfOrder(() => b.add(bytes("a"), 9, KIND_PUT, bytes("1")));
    outOfOrder(() => b.add(bytes("b"), 5, KIND_PUT, bytes("1")));
    outOfOrder(() => b.add(bytes("b"), 6, KIND_PUT, bytes("1")));
    outOfOrder(() => b.add(bytes("c"), -1, KIND_PUT, bytes("1")));
    outOfOrder(() => b.add(bytes(""), 9, KIND_PUT, bytes("1")));
    b.add(bytes("b"), 5, KIND_DELETE, bytes(""));
    b.add(bytes("b"), 4, KIND_PUT, bytes(""));
    b.add(bytes("bcd"), 4, KIND_PUT, bytes(""));
    outOfOrder(() => b.add(bytes("bc"), 9, KIND_PUT, bytes("1"))); // a prefix of the last key
    outOfOrder(() => b.add(bytes("bcc"), 9, KIND_PUT, bytes("1")));
    assert.equal(b.entries, 4);
    assert.ok(b.estimatedSize > 0);
    b.finish();
    assert.throws(() => b.add(bytes("z"), 1, KIND_PUT, bytes("")), /after the table was finished/);
    assert.throws(() => b.finish(), /finished/);

    const file2 = await fs.createWritable("t2.sst");
    const b2 = new TableBuilder(file2);
    b2.add(bytes("a"), 1, KIND_PUT, bytes("1"));
    b2.abandon();
    assert.throws(() => b2.finish(), /abandoned/);
    assert.equal(file2.size, 0, "nothing written before the first block fills");
  });

  test("data block entries share the whole common prefix of consecutive internal keys", async () => {
    // Keys that differ early, keys that extend the previous one, versions of one key, and
    // keys whose next byte equals the previous key's trailer bytes (kind 1, then sequence):
    // the builder's one-scan path and its whole-key path must agree with the rule.
    const user = ["a", "ab", "ab\x01", "ab\x01\x09", "ab\x02", "abc", "abd", "b", "ba", "bb"];
    const entries: Entry[] = [];
    let seq = 100;
    for (const k of user) {
      const key = Uint8Array.from(k, (c) => c.charCodeAt(0));
      entries.push({ key, seq: seq--, kind: KIND_PUT, value: bytes(`v${k.length}`) });
      entries.push({ key, seq: seq--, kind: KIND_DELETE, value: new Uint8Array(0) });
      entries.push({ key, seq: 1, kind: KIND_PUT, value: bytes("old") });
    }
    const restartInterval = 4;
    const { fs, path, bytes: data } = await buildTable(entries, { restartInterval });
    const internal = entries.map((e) => {
      const k = new Uint8Array(e.key.length + 8);
      k.set(e.key);
      putTrailer(k, e.key.length, e.seq, e.kind);
      return k;
    });
    // The only data block starts at offset 0; entries use one-byte varints here.
    let o = 0;
    let prev = new Uint8Array(0);
    internal.forEach((k, i) => {
      const shared = data[o]!;
      const unshared = data[o + 1]!;
      const valueLength = data[o + 2]!;
      let want = 0;
      if (i % restartInterval !== 0) {
        while (want < Math.min(k.length, prev.length) && k[want] === prev[want]) want++;
      }
      assert.equal(shared, want, `entry ${i}: shared prefix`);
      assert.equal(shared + unshared, k.length, `entry ${i}: key length`);
      assert.equal(hex(data.subarray(o + 3, o + 3 + unshared)), hex(k.subarray(shared)));
      o += 3 + unshared + valueLength;
      prev = k;
    });
    const reader = await openTable(fs, path);
    assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
    await reader.close();
  });

  test("the builder rejects bad options", async () => {
    const fs = new MemoryFileSystem();
    const file = await fs.createWritable("t.sst");
    for (const bad of [
      { blockSize: 0 },
      { restartInterval: 0 },
      { bloomBitsPerKey: -1 },
      { compression: "zstd" as "none" },
    ]) {
      throwsWithCode(() => new TableBuilder(file, bad), "INVALID_ARGUMENT");
    }
  });

  test("the builder streams: data blocks reach the file as they fill", async () => {
    const fs = new MemoryFileSystem();
    const file = await fs.createWritable("t.sst");
    const b = new TableBuilder(file, { blockSize: 1024 });
    let sizes = 0;
    for (let i = 0; i < 10_000; i++) {
      b.add(bytes(`k${String(i).padStart(6, "0")}`), 1, KIND_PUT, new Uint8Array(50));
      // ~64 bytes per entry: the write buffer fills every ~1000 entries.
      if (i % 1500 === 1499) {
        assert.ok(file.size > sizes, "file grows while adding");
        sizes = file.size;
      }
      // Memory stays bounded: at most the write buffer and one data block are held back.
      assert.ok(b.estimatedSize - file.size < WRITE_BUFFER_BYTES + 1024 + 100);
    }
    b.finish();
  });
});
