/**
 * The exact bytes of small tables: test/sstable/golden/small-table.hex (format version 2,
 * no compression: the worked example of docs/format/sstable.md) and small-table-lz4.hex
 * (version 2, an lz4 data block); and small-table-v1.hex, the same table as version 1
 * wrote it, which must still read. A change to the first two is a format change: bump
 * TABLE_FORMAT_VERSION and update the document (a new lz4-napi may also compress to other,
 * equally valid bytes: then the reading test must still pass on the old file). After an
 * intended change, rewrite the version 2 files with
 * KV_REWRITE_GOLDEN=1 node --test dist/test/sstable/golden.test.js
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { COMPRESSION_LZ4 } from "../../src/sstable/format.js";
import type { TableOptions } from "../../src/sstable/table-options.js";
import { buildTable, bytes, type Entry, hex, openBytes, scanForward, show } from "./helpers.js";

const golden = (name: string) =>
  fileURLToPath(new URL(`../../../test/sstable/golden/${name}`, import.meta.url));

const ENTRIES: Entry[] = [
  { key: bytes("apple"), seq: 3, kind: KIND_PUT, value: bytes("red") },
  { key: bytes("banana"), seq: 2, kind: KIND_DELETE, value: bytes("") },
  { key: bytes("cherry"), seq: 1, kind: KIND_PUT, value: bytes("dark red") },
];

/** Entries whose one data block lz4 shrinks by more than 1/8 (repeated text). */
const LZ4_ENTRIES: Entry[] = [
  { key: bytes("apple"), seq: 3, kind: KIND_PUT, value: bytes("red, ".repeat(12)) },
  { key: bytes("banana"), seq: 2, kind: KIND_DELETE, value: bytes("") },
  { key: bytes("cherry"), seq: 1, kind: KIND_PUT, value: bytes("dark red, ".repeat(6)) },
];

const OPTIONS: TableOptions = { blockSize: 4096, restartInterval: 16, bloomBitsPerKey: 10 };

/** 16 bytes per line, as lowercase hex pairs separated by spaces. */
function toHexLines(data: Uint8Array): string {
  const lines: string[] = [];
  for (let i = 0; i < data.length; i += 16) {
    lines.push([...data.subarray(i, i + 16)].map((b) => b.toString(16).padStart(2, "0")).join(" "));
  }
  return `${lines.join("\n")}\n`;
}

function fromHexLines(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text.replace(/\s+/g, ""), "hex"));
}

async function assertGolden(name: string, entries: Entry[], options: TableOptions) {
  const { bytes: data } = await buildTable(entries, options);
  if (process.env["KV_REWRITE_GOLDEN"] === "1") {
    mkdirSync(dirname(golden(name)), { recursive: true });
    writeFileSync(golden(name), toHexLines(data));
  }
  assert.equal(hex(data), hex(fromHexLines(readFileSync(golden(name), "utf8"))));
}

async function assertReads(name: string, entries: Entry[], formatVersion: number) {
  const reader = await openBytes(fromHexLines(readFileSync(golden(name), "utf8")));
  assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
  assert.equal(reader.properties.formatVersion, formatVersion);
  assert.equal(reader.properties.entries, 3);
  assert.equal(reader.properties.tombstones, 1);
  await reader.close();
}

test("a 3-entry table has exactly the golden bytes", async () => {
  await assertGolden("small-table.hex", ENTRIES, { ...OPTIONS, compression: "none" });
});

test("a 3-entry table with an lz4 block has exactly the golden bytes", async () => {
  await assertGolden("small-table-lz4.hex", LZ4_ENTRIES, { ...OPTIONS, compression: "lz4" });
  const data = fromHexLines(readFileSync(golden("small-table-lz4.hex"), "utf8"));
  const reader = await openBytes(data);
  assert.equal(reader.properties.compression, "lz4");
  assert.equal(reader.properties.compressedDataBlocks, 1);
  assert.equal(data[reader.index.blockSizes[0]!], COMPRESSION_LZ4, "the block's trailer type");
  await reader.close();
});

test("the golden bytes read back as the 3 entries, version 2 and version 1", async () => {
  await assertReads("small-table.hex", ENTRIES, 2);
  await assertReads("small-table-lz4.hex", LZ4_ENTRIES, 2);
  await assertReads("small-table-v1.hex", ENTRIES, 1);
});
