import assert from "node:assert/strict";
import { describe as suite, test } from "node:test";
import type { KvError } from "../../src/errors.js";
import { KIND_DELETE, KIND_PUT, MAX_SEQUENCE } from "../../src/key/internal-key.js";
import { FOOTER_CRC_OFFSET, FOOTER_SIZE } from "../../src/sstable/format.js";
import type { TableReader } from "../../src/sstable/table-reader.js";
import { putFixed32, putFixed64 } from "../../src/util/coding.js";
import { crc32c, maskCrc } from "../../src/util/crc32c.js";
import { assertKvError } from "../support/errors.js";
import { buildTable, bytes, type Entry, hex, openBytes, scanForward, show } from "./helpers.js";

const PATH = "db/000001.sst";

function entriesOf(n: number): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      key: bytes(`key${String(i).padStart(5, "0")}`),
      seq: 1000 - i,
      kind: i % 7 === 3 ? KIND_DELETE : KIND_PUT,
      value: i % 7 === 3 ? new Uint8Array(0) : bytes(`value-${i}-`.padEnd(50, "v")),
    });
  }
  return out;
}

function flipped(data: Uint8Array, offset: number, bit = 0): Uint8Array {
  const copy = data.slice();
  copy[offset]! ^= 1 << bit;
  return copy;
}

/** Runs fn and returns the CORRUPTION error it throws (failing on anything else). */
async function corruption(fn: () => unknown): Promise<KvError> {
  try {
    await fn();
  } catch (err) {
    const e = assertKvError(err, "CORRUPTION", { file: PATH });
    assert.ok(e.message.includes(PATH), e.message);
    return e;
  }
  assert.fail("expected a CORRUPTION error, got none");
}

/** Every answer the reader gives must be the true one. */
function checkAllCorrectOrCorrupt(reader: TableReader, entries: readonly Entry[]): void {
  for (const e of entries) {
    const got = reader.get(e.key, MAX_SEQUENCE);
    assert.ok(got !== undefined);
    assert.equal(`${got.kind}:${hex(got.value)}`, `${e.kind}:${hex(e.value)}`);
  }
  assert.deepEqual(scanForward(reader.iterator()).map(show), entries.map(show));
}

suite("a damaged table", async () => {
  const entries = entriesOf(300);
  const { bytes: good } = await buildTable(entries, { blockSize: 1024 });
  const probe = await openBytes(good);
  const { footer, index } = probe;
  await probe.close();
  assert.ok(index.count > 10);

  test("a flipped bit in a data block is CORRUPTION when that block is read, naming it", async () => {
    const blockOffset = index.blockOffsets[1]!;
    const damaged = flipped(good, blockOffset + 40, 3);
    const reader = await openBytes(damaged);
    // Entries in other blocks are still served.
    assert.deepEqual(reader.get(entries[0]!.key, MAX_SEQUENCE)?.value, entries[0]!.value);
    // Find an entry stored in block 1 via the iterator-free route: try them all.
    let errors = 0;
    for (const e of entries) {
      try {
        const got = reader.get(e.key, MAX_SEQUENCE);
        assert.equal(hex(got!.value), hex(e.value));
      } catch (err) {
        assertKvError(err, "CORRUPTION", {
          file: PATH,
          message: new RegExp(`data block at offset ${blockOffset}: checksum mismatch`),
        });
        errors++;
      }
    }
    assert.ok(errors > 0);
    const err = await corruption(() => scanForward(reader.iterator()));
    assert.match(err.message, /checksum mismatch/);
    await reader.close();
  });

  test("a flipped bit in a data block trailer's type byte is CORRUPTION", async () => {
    const trailer = index.blockOffsets[0]! + index.blockSizes[0]!;
    const reader = await openBytes(flipped(good, trailer, 1));
    await corruption(() => reader.get(entries[0]!.key, MAX_SEQUENCE));
    await reader.close();
  });

  test("a flipped bit in the index block is CORRUPTION at open", async () => {
    const err = await corruption(() => openBytes(flipped(good, footer.index.offset + 5, 6)));
    assert.match(err.message, new RegExp(`index block at offset ${footer.index.offset}`));
  });

  test("a flipped bit in the filter block is CORRUPTION at open or a correct answer", async () => {
    for (const offset of [0, 7, footer.filter.size - 1, footer.filter.size]) {
      let reader: TableReader | undefined;
      try {
        reader = await openBytes(flipped(good, footer.filter.offset + offset, 2));
      } catch (err) {
        assertKvError(err, "CORRUPTION", { file: PATH });
        continue;
      }
      checkAllCorrectOrCorrupt(reader, entries);
      await reader.close();
    }
  });

  test("a flipped bit in the properties block is CORRUPTION at open", async () => {
    await corruption(() => openBytes(flipped(good, footer.properties.offset + 2, 0)));
  });

  test("a flipped bit anywhere in the footer is CORRUPTION at open", async () => {
    for (let i = good.length - FOOTER_SIZE; i < good.length; i++) {
      await corruption(() => openBytes(flipped(good, i, i % 8)));
    }
  });

  test("impossible block handles are CORRUPTION at open, even with a valid footer CRC", async () => {
    const withHandle = (slot: number, offset: number, size: number): Uint8Array => {
      const copy = good.slice();
      const f = copy.length - FOOTER_SIZE;
      putFixed64(copy, f + slot * 12, offset);
      putFixed32(copy, f + slot * 12 + 8, size);
      putFixed32(copy, f + FOOTER_CRC_OFFSET, maskCrc(crc32c(copy, f, f + FOOTER_CRC_OFFSET)));
      return copy;
    };
    const footerStart = good.length - FOOTER_SIZE;
    let err = await corruption(() => openBytes(withHandle(0, good.length + 100, 10)));
    assert.match(err.message, /index block handle .* overlaps the footer/);
    err = await corruption(() => openBytes(withHandle(0, footerStart - 20, 30)));
    assert.match(err.message, /overlaps the footer/);
    err = await corruption(() => openBytes(withHandle(2, 0, 0)));
    assert.match(err.message, /properties block is missing/);
    err = await corruption(() => openBytes(withHandle(0, 2 ** 60, 10)));
    assert.match(err.message, /out of range/);
  });

  test("a truncated file is CORRUPTION at open", async () => {
    await corruption(() => openBytes(good.subarray(0, good.length - 1)));
    await corruption(() => openBytes(good.subarray(0, 10)));
    await corruption(() => openBytes(new Uint8Array(0)));
    const err = await corruption(() => openBytes(new Uint8Array(4096)));
    assert.match(err.message, /bad magic/);
  });

  test("with verifyChecksums false, damaged structure is still CORRUPTION", async () => {
    // Make block 0 claim an absurd restart count: no checksum needed to see it.
    const end = index.blockOffsets[0]! + index.blockSizes[0]!;
    const damaged = good.slice();
    putFixed32(damaged, end - 4, 0xffff);
    const reader = await openBytes(damaged, { verifyChecksums: false });
    await corruption(() => reader.get(entries[0]!.key, MAX_SEQUENCE));
    await reader.close();
  });
});

test("every single-bit flip in a small table is CORRUPTION or harmless", async () => {
  const entries = entriesOf(12);
  const { bytes: good } = await buildTable(entries, { blockSize: 256 });
  let detected = 0;
  for (let i = 0; i < good.length; i++) {
    const damaged = flipped(good, i, (i * 5) % 8);
    try {
      const reader = await openBytes(damaged);
      checkAllCorrectOrCorrupt(reader, entries);
      await reader.close();
    } catch (err) {
      assertKvError(err, "CORRUPTION", { file: PATH }, `byte ${i}`);
      detected++;
    }
  }
  // Every byte of a table is covered by a checksum or the magic number.
  assert.equal(detected, good.length);
});
