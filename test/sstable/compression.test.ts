import assert from "node:assert/strict";
import { test } from "node:test";
import { KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import { COMPRESSION_DEFLATE, COMPRESSION_NONE } from "../../src/sstable/format.js";
import {
  buildTable,
  bytes,
  type Entry,
  hex,
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
  const { fs, path, result, bytes: data } = await buildTable(entries, { compression: "deflate" });
  assert.equal(result.compression, "deflate");
  assert.equal(result.compressedDataBlocks, 0);
  const reader = await openTable(fs, path);
  for (let i = 0; i < reader.index.count; i++) {
    const trailer = reader.index.blockOffsets[i]! + reader.index.blockSizes[i]!;
    assert.equal(data[trailer], COMPRESSION_NONE, `block ${i}`);
  }
  assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
  await reader.close();
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
  const { fs, path, result } = await buildTable(entries, { compression: "deflate" });
  assert.ok(result.compressedDataBlocks > 0);
  assert.ok(result.compressedDataBlocks < result.dataBlocks);
  const reader = await openTable(fs, path);
  for (const e of entries) assert.equal(hex(reader.get(e.key, 9)!.value), hex(e.value));
  await reader.close();
});
