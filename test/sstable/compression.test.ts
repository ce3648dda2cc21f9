import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { open } from "../../src/index.js";
import { KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import {
  COMPRESSION_DEFLATE,
  COMPRESSION_LZ4,
  COMPRESSION_NONE,
} from "../../src/sstable/format.js";
import { resolveTableOptions } from "../../src/sstable/table-options.js";
import {
  buildTable,
  bytes,
  type Entry,
  hex,
  openBytes,
  openTable,
  randomBytes,
  rng,
  scanBackward,
  scanForward,
  show,
} from "./helpers.js";

function textEntries(n: number): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      key: bytes(`user:${String(i).padStart(8, "0")}`),
      seq: n - i,
      kind: KIND_PUT,
      value: bytes(`{"name":"user ${i}","email":"user${i}@example.com","active":true}`),
    });
  }
  return out;
}

test("deflate tables round trip and are smaller", async () => {
  const entries = textEntries(20_000);
  const plain = await buildTable(entries, { compression: "none" });
  const packed = await buildTable(entries, { compression: "deflate" });
  assert.equal(plain.result.compressedDataBlocks, 0);
  assert.equal(packed.result.compression, "deflate");
  assert.equal(packed.result.compressedDataBlocks, packed.result.dataBlocks);
  assert.ok(
    packed.bytes.length < plain.bytes.length / 2,
    `${packed.bytes.length} vs ${plain.bytes.length} bytes`,
  );
  const reader = await openTable(packed.fs, packed.path);
  assert.equal(reader.properties.compression, "deflate");
  for (const e of entries) assert.equal(hex(reader.get(e.key, MAX_SEQUENCE)!.value), hex(e.value));
  assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
  assert.deepEqual(scanBackward(reader.iterator()).map(show), entries.map(show).reverse());
  const first = reader.index.blockOffsets[0]! + reader.index.blockSizes[0]!;
  assert.equal(packed.bytes[first], COMPRESSION_DEFLATE);
  await reader.close();
});

test("lz4 tables round trip and are smaller", async () => {
  const entries = textEntries(20_000);
  const plain = await buildTable(entries, { compression: "none" });
  const packed = await buildTable(entries, { compression: "lz4" });
  assert.equal(packed.result.compression, "lz4");
  assert.equal(packed.result.compressedDataBlocks, packed.result.dataBlocks);
  assert.ok(
    packed.bytes.length < plain.bytes.length / 2,
    `${packed.bytes.length} vs ${plain.bytes.length} bytes`,
  );
  const reader = await openTable(packed.fs, packed.path);
  assert.equal(reader.properties.compression, "lz4");
  for (const e of entries) assert.equal(hex(reader.get(e.key, MAX_SEQUENCE)!.value), hex(e.value));
  assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
  assert.deepEqual(scanBackward(reader.iterator()).map(show), entries.map(show).reverse());
  const first = reader.index.blockOffsets[0]! + reader.index.blockSizes[0]!;
  assert.equal(packed.bytes[first], COMPRESSION_LZ4);
  await reader.close();
});

test("an lz4 block whose stored length is impossible is CORRUPTION, even unverified", async () => {
  const entries = textEntries(200);
  const { bytes: data } = await buildTable(entries, { compression: "lz4" });
  const probe = await openBytes(data);
  const offset = probe.index.blockOffsets[0]!;
  const size = probe.index.blockSizes[0]!;
  await probe.close();
  for (const length of [0xffffffff, size * 300, 1]) {
    const damaged = Uint8Array.from(data);
    new DataView(damaged.buffer).setUint32(offset, length, true);
    const reader = await openBytes(damaged, { verifyChecksums: false });
    assert.throws(
      () => scanForward(reader.iterator()),
      (err: unknown) =>
        isKvError(err, "CORRUPTION") &&
        /block at offset 0: cannot decompress/.test(err.message) &&
        // The bound on the length is checked before lz4 allocates anything.
        (length === 1 || /is impossible for/.test(err.message)),
      `length ${length}`,
    );
    await reader.close();
  }
  // Checked (the default), the same damage is a checksum mismatch before any decoding.
  const damaged = Uint8Array.from(data);
  damaged[offset + 1]! ^= 0x10;
  const reader = await openBytes(damaged);
  assert.throws(() => scanForward(reader.iterator()), /checksum mismatch/);
  await reader.close();
});

test("compression options: none, lz4 and deflate; anything else is INVALID_ARGUMENT", () => {
  for (const c of ["none", "lz4", "deflate"] as const) {
    assert.equal(resolveTableOptions({ compression: c }).compression, c);
  }
  assert.equal(resolveTableOptions({}).compression, "none");
  assert.throws(
    () => resolveTableOptions({ compression: "zstd" as never }),
    (err: unknown) => isKvError(err, "INVALID_ARGUMENT"),
  );
});

test("a block that does not shrink by 12.5 % is stored uncompressed", async () => {
  const r = rng(11);
  const entries: Entry[] = [];
  for (let i = 0; i < 2000; i++) {
    entries.push({
      key: bytes(`k${String(i).padStart(6, "0")}`),
      seq: 1,
      kind: KIND_PUT,
      value: randomBytes(r, 100),
    });
  }
  for (const compression of ["deflate", "lz4"] as const) {
    const { fs, path, result, bytes: data } = await buildTable(entries, { compression });
    assert.equal(result.compression, compression);
    assert.equal(result.compressedDataBlocks, 0);
    const reader = await openTable(fs, path);
    for (let i = 0; i < reader.index.count; i++) {
      const trailer = reader.index.blockOffsets[i]! + reader.index.blockSizes[i]!;
      assert.equal(data[trailer], COMPRESSION_NONE, `${compression} block ${i}`);
    }
    assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
    await reader.close();
  }
});

test("mixed compressible and incompressible blocks round trip", async () => {
  const r = rng(12);
  const entries: Entry[] = [];
  for (let i = 0; i < 3000; i++) {
    const compressible = Math.floor(i / 100) % 2 === 0;
    entries.push({
      key: bytes(`m${String(i).padStart(6, "0")}`),
      seq: 5,
      kind: KIND_PUT,
      value: compressible ? new Uint8Array(120).fill(i & 0xff) : randomBytes(r, 120),
    });
  }
  for (const compression of ["deflate", "lz4"] as const) {
    const { fs, path, result } = await buildTable(entries, { compression });
    assert.ok(result.compressedDataBlocks > 0, compression);
    assert.ok(result.compressedDataBlocks < result.dataBlocks, compression);
    const reader = await openTable(fs, path);
    for (const e of entries) assert.equal(hex(reader.get(e.key, 9)!.value), hex(e.value));
    await reader.close();
  }
});

test("a store with lz4 tables (flushed and compacted in the worker) reads back, also reopened with none", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "kv-lz4-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const value = (i: number) => `{"id":${i},"name":"user ${i % 97}","email":"user${i}@example.com"}`;
  const db = await open(dir, {
    compression: "lz4",
    writeBufferSize: 64 * 1024,
    l0CompactionTrigger: 2,
    sync: false,
  });
  for (let i = 0; i < 20_000; i += 500) {
    const batch = db.batch();
    for (let j = i; j < i + 500; j++) batch.put(`k${String(j).padStart(6, "0")}`, value(j));
    await db.write(batch);
  }
  await db.compactRange();
  const stats = db.stats();
  assert.ok(stats.compaction.bytesWritten > 0, "the worker compacted");
  await db.close();
  const tables = readdirSync(dir).filter((f) => f.endsWith(".sst"));
  assert.ok(tables.length > 0);
  for (const f of tables) {
    const reader = await openBytes(readFileSync(join(dir, f)));
    assert.equal(reader.properties.compression, "lz4", f);
    assert.equal(reader.properties.compressedDataBlocks, reader.properties.dataBlocks, f);
    await reader.close();
  }
  const again = await open(dir, { compression: "none" });
  let n = 0;
  for await (const [k, v] of again.iterator()) {
    assert.equal(Buffer.from(v).toString(), value(Number(Buffer.from(k).toString().slice(1))));
    n++;
  }
  assert.equal(n, 20_000);
  await again.close();
});
