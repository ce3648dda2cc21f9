/**
 * LocalSnapshots: a snapshot describes each file by size and CRC-32C; a table file is
 * read for that once per store (tables never change), so a snapshot of a large store
 * reads only the tables written since the last one; the CRCs stay those of the files.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { open } from "../../src/db/kv-store.js";
import { LocalSnapshots } from "../../src/replication/local-snapshots.js";
import { NodeDir } from "../../src/replication/node-dir.js";
import { crc32cExtend } from "../../src/util/crc32c.js";
import { parseFileName } from "../../src/version/file-names.js";
import type { ReadableFile } from "../../src/vfs/file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

/** Counts the table files of snapshot directories opened for reading. */
class CountingFileSystem extends MemoryFileSystem {
  readonly tablesRead: string[] = [];

  override async openReadable(path: string): Promise<ReadableFile> {
    const name = path.split("/").pop()!;
    if (path.includes("/snap/") && parseFileName(name)?.type === "table") {
      this.tablesRead.push(name);
    }
    return super.openReadable(path);
  }
}

async function crcOf(fs: MemoryFileSystem, path: string): Promise<number> {
  const f = await fs.openReadable(path);
  try {
    const buf = new Uint8Array(f.size);
    f.read(buf, 0);
    return crc32cExtend(0, buf, 0, buf.length) >>> 0;
  } finally {
    await f.close();
  }
}

describe("local snapshots", () => {
  test("a table is read once per store; the descriptor's CRCs are the files'", async () => {
    const fs = new CountingFileSystem();
    const dir = await NodeDir.open(fs, "/m");
    const store = await open("/m/store", { fs, writeBufferSize: 4096 });
    const snaps = await LocalSnapshots.load(dir);
    const value = "v".repeat(200);
    try {
      for (let i = 0; i < 200; i++) await store.put(`a${1000 + i}`, value);
      await store.compactRange();
      const first = await snaps.create(store, 10, 1);
      const firstTables = first.files.filter((f) => parseFileName(f.name)?.type === "table");
      assert.ok(firstTables.length >= 2, "the first snapshot has tables");
      assert.equal(fs.tablesRead.length, firstTables.length);
      fs.tablesRead.length = 0;
      // New tables beside the old ones ("z" keys do not overlap them).
      for (let i = 0; i < 100; i++) await store.put(`z${1000 + i}`, value);
      await store.flush();
      const second = await snaps.create(store, 20, 1);
      const kept = second.files.filter((f) => firstTables.some((t) => t.name === f.name));
      assert.ok(kept.length >= 1, "some tables are in both snapshots");
      for (const f of kept) {
        assert.ok(!fs.tablesRead.includes(f.name), `${f.name} is not read again`);
      }
      assert.ok(fs.tablesRead.length >= 1, "the new tables are read");
      for (const f of second.files) {
        assert.equal(f.crc32c, await crcOf(fs, `${second.path}/${f.name}`), f.name);
      }
    } finally {
      await store.close();
    }
  });
});
