/**
 * The exact bytes of a small table, against test/sstable/golden/small-table.hex (the
 * worked example of docs/format/sstable.md). A change here is a format change: bump
 * TABLE_FORMAT_VERSION and update the document. After an intended change, rewrite the file
 * with KV_REWRITE_GOLDEN=1 node --test dist/test/sstable/golden.test.js
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { KIND_DELETE, KIND_PUT } from "../../src/key/internal-key.js";
import { buildTable, bytes, type Entry, hex, openBytes, scanForward, show } from "./helpers.js";

const GOLDEN = fileURLToPath(
  new URL("../../../test/sstable/golden/small-table.hex", import.meta.url),
);

const ENTRIES: Entry[] = [
  { key: bytes("apple"), seq: 3, kind: KIND_PUT, value: bytes("red") },
  { key: bytes("banana"), seq: 2, kind: KIND_DELETE, value: bytes("") },
  { key: bytes("cherry"), seq: 1, kind: KIND_PUT, value: bytes("dark red") },
];

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

test("a 3-entry table has exactly the golden bytes", async () => {
  const { bytes: data } = await buildTable(ENTRIES, {
    blockSize: 4096,
    restartInterval: 16,
    bloomBitsPerKey: 10,
    compression: "none",
  });
  if (process.env["KV_REWRITE_GOLDEN"] === "1") {
    mkdirSync(dirname(GOLDEN), { recursive: true });
    writeFileSync(GOLDEN, toHexLines(data));
  }
  const golden = fromHexLines(readFileSync(GOLDEN, "utf8"));
  assert.equal(hex(data), hex(golden));
});

test("the golden bytes read back as the 3 entries", async () => {
  const reader = await openBytes(fromHexLines(readFileSync(GOLDEN, "utf8")));
  assert.deepEqual(scanForward(reader.iterator()).map(show), ENTRIES.map(show));
  assert.equal(reader.properties.entries, 3);
  assert.equal(reader.properties.tombstones, 1);
  await reader.close();
});
