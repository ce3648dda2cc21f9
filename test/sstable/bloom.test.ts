import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_PUT } from "../../src/key/internal-key.js";
import {
  BloomFilter,
  BloomFilterBuilder,
  bloomHash,
  bloomProbes,
  leveldbHash,
} from "../../src/sstable/bloom.js";
import { TableReader } from "../../src/sstable/table-reader.js";
import { buildTable, bytes, type Entry, openTable } from "./helpers.js";

function keyOf(i: number): Uint8Array {
  return bytes(`key_${String(i).padStart(12, "0")}`);
}

test("the hash matches LevelDB's test vectors (unsigned tail bytes)", () => {
  const seed = 0xbc9f1d34;
  assert.equal(leveldbHash(new Uint8Array(0), seed), 0xbc9f1d34);
  assert.equal(leveldbHash(Uint8Array.of(0x62), seed), 0xef1345c4);
  assert.equal(leveldbHash(Uint8Array.of(0xc3, 0x97), seed), 0x5b663814);
  assert.equal(leveldbHash(Uint8Array.of(0xe2, 0x99, 0xa5), seed), 0x323c078f);
  assert.equal(leveldbHash(Uint8Array.of(0xe1, 0x80, 0xb9, 0x32), seed), 0xed21633a);
  const data5 = new Uint8Array(48);
  data5.set([0x01, 0xc0], 0);
  data5[16] = 0x14;
  data5[22] = 0x04;
  data5[27] = 0x14;
  data5[31] = 0x18;
  data5[32] = 0x28;
  data5[40] = 0x02;
  assert.equal(leveldbHash(data5, 0x12345678), 0xf333dabb);
  // RocksDB's table of values for the same hash and seed (tails below 0x80 only: RocksDB
  // keeps the old sign-extending tail for compatibility).
  assert.equal(bloomHash(Uint8Array.of(0x08)), 422599524);
  assert.equal(bloomHash(Uint8Array.of(0x4d, 0x76)), 2447836956);
  assert.equal(bloomHash(Uint8Array.of(0x30, 0x46, 0x0b)), 3808221797);
  assert.equal(bloomHash(Uint8Array.of(0x67, 0x53, 0x81, 0x1c)), 118283265);
});

test("the number of probes is round(bits per key × ln 2), clamped to [1, 30]", () => {
  assert.equal(bloomProbes(10), 7);
  assert.equal(bloomProbes(0.5), 1);
  assert.equal(bloomProbes(1), 1);
  assert.equal(bloomProbes(16), 11);
  assert.equal(bloomProbes(100), 30);
});

test("a filter has at least 64 bits and stores k in its last byte", () => {
  const b = new BloomFilterBuilder(10);
  b.addKey(bytes("one"));
  const data = b.finish();
  assert.equal(data.length, 9);
  assert.equal(data[8], 7);
  const empty = new BloomFilterBuilder(10).finish();
  assert.equal(empty.length, 9);
  assert.equal(new BloomFilter(empty).mayContain(bytes("one")), false);
});

test("10 bits per key on 100k keys: no false negatives, false positives below 2 %", (t) => {
  const n = 100_000;
  const b = new BloomFilterBuilder(10);
  for (let i = 0; i < n; i++) b.addKey(keyOf(i));
  const filter = new BloomFilter(b.finish());
  for (let i = 0; i < n; i++) assert.ok(filter.mayContain(keyOf(i)), `false negative for ${i}`);
  let positives = 0;
  const probes = 100_000;
  for (let i = 0; i < probes; i++) if (filter.mayContain(keyOf(n + 1_000_000 + i))) positives++;
  const rate = positives / probes;
  t.diagnostic(
    `false-positive rate ${(rate * 100).toFixed(3)} % (${positives} of ${probes}), ` +
      `${filter.data.length} bytes for ${n} keys, k = ${filter.probes}`,
  );
  assert.ok(rate < 0.02, `false-positive rate ${rate}`);
});

test("mayContainHash with a precomputed hash answers like mayContain", () => {
  const b = new BloomFilterBuilder(10);
  for (let i = 0; i < 1000; i++) b.addKey(keyOf(i));
  const filter = new BloomFilter(b.finish());
  for (let i = 0; i < 3000; i++) {
    const k = keyOf(i);
    assert.equal(filter.mayContainHash(bloomHash(k)), filter.mayContain(k));
  }
});

test("a table's filter covers user keys, not versions: every version is found", async () => {
  const entries: Entry[] = [];
  for (let i = 0; i < 2000; i++) {
    for (const seq of [30, 20, 10]) {
      entries.push({ key: keyOf(i), seq: seq + i * 100, kind: KIND_PUT, value: bytes(`v${seq}`) });
    }
  }
  const { fs, path } = await buildTable(entries);
  const reader = await openTable(fs, path);
  assert.equal(reader.hasFilter, true);
  // 2000 distinct keys at 10 bits each: 20000 bits = 2500 bytes + k.
  assert.equal(reader.footer.filter.size, 2501);
  for (let i = 0; i < 2000; i++) {
    assert.equal(reader.mayContain(keyOf(i)), true);
    assert.deepEqual(reader.get(keyOf(i), 25 + i * 100)?.value, bytes("v20"));
  }
  let ruledOut = 0;
  for (let i = 0; i < 2000; i++) if (reader.get(keyOf(10_000 + i), 1e9) === undefined) ruledOut++;
  assert.equal(ruledOut, 2000);
  assert.ok(reader.stats.filterUseful > 1900, `filterUseful ${reader.stats.filterUseful}`);
  assert.equal(reader.stats.filterChecked, 4000);
  await reader.close();
});

test("bloomBitsPerKey 0 writes no filter block; lookups still work", async () => {
  const entries: Entry[] = [{ key: bytes("a"), seq: 1, kind: KIND_PUT, value: bytes("x") }];
  const { fs, path } = await buildTable(entries, { bloomBitsPerKey: 0 });
  const reader = await openTable(fs, path);
  assert.equal(reader.hasFilter, false);
  assert.equal(reader.footer.filter.size, 0);
  assert.deepEqual(reader.get(bytes("a"), 5)?.value, bytes("x"));
  assert.equal(reader.get(bytes("b"), 5), undefined);
  assert.equal(reader.stats.filterChecked, 0);
  await reader.close();
});

test("skipFilter leaves the filter block unread; lookups still work", async () => {
  const entries: Entry[] = [];
  for (let i = 0; i < 500; i++)
    entries.push({ key: keyOf(i), seq: 1, kind: KIND_PUT, value: bytes(`v${i}`) });
  const { fs, path } = await buildTable(entries);
  const file = fs.openReadableSync(path);
  const reads: number[] = [];
  const counting = Object.assign(Object.create(file) as typeof file, {
    read(dst: Uint8Array, position: number): number {
      reads.push(position);
      return file.read(dst, position);
    },
  });
  const reader = TableReader.open(counting, 1, { skipFilter: true });
  assert.equal(reader.hasFilter, false);
  assert.ok(reader.footer.filter.size > 0);
  assert.ok(!reads.includes(reader.footer.filter.offset), "the filter block was not read");
  assert.deepEqual(reader.get(keyOf(7), 5)?.value, bytes("v7"));
  assert.equal(reader.get(keyOf(9999), 5), undefined);
  assert.equal(reader.stats.filterChecked, 0);
  await reader.close();
});

test("finish into a used scratch buffer and after reset gives the bytes of a new builder", () => {
  const fresh = (from: number, to: number): Uint8Array => {
    const b = new BloomFilterBuilder(10);
    for (let i = from; i < to; i++) b.addKey(keyOf(i));
    return b.finish();
  };
  const b = new BloomFilterBuilder(10);
  for (let i = 0; i < 5000; i++) b.addKey(keyOf(i));
  assert.equal(b.filterBytes, fresh(0, 5000).length);
  // A scratch full of set bits, as a bigger filter leaves it.
  const scratch = new Uint8Array(b.filterBytes + 100).fill(0xff);
  const big = b.finish(scratch);
  assert.equal(big.buffer, scratch.buffer, "written into the scratch");
  assert.deepEqual(big, fresh(0, 5000));
  b.reset();
  assert.equal(b.count, 0);
  for (let i = 7000; i < 7300; i++) b.addKey(keyOf(i));
  const small = b.finish(scratch);
  assert.equal(small.buffer, scratch.buffer);
  assert.deepEqual(small, fresh(7000, 7300));
  // A scratch too short is not used.
  const short = new Uint8Array(3);
  assert.notEqual(b.finish(short).buffer, short.buffer);
});
