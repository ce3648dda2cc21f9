/**
 * compactRange() resolves once its obsolete files are deleted: right after it, the
 * directory holds only the tables the current version lists and the current log (and the
 * empty log made ready for the next memtable switch, numbered above it), except
 * the tables an open iterator (or snapshot) still reads, which go once it is closed.
 * (test/db/space.test.ts measures the same on the real file system, in bytes.)
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { waitFor } from "../support/wait-for.js";

const keyOf = (i: number) => `k${String(i).padStart(6, "0")}`;

async function fill(db: KvStore): Promise<void> {
  for (let round = 0; round < 4; round++) {
    for (let start = 0; start < 2000; start += 250) {
      const batch = db.batch();
      for (let i = start; i < start + 250; i++) batch.put(keyOf(i), `${round}:${"v".repeat(60)}`);
      await db.write(batch, { sync: false });
    }
    await db.flush();
  }
}

async function tablesOnDisk(fs: MemoryFileSystem): Promise<number> {
  return (await fs.list("/db")).filter((n) => n.endsWith(".sst")).length;
}

const listed = (db: KvStore) => db.stats().levelFiles.reduce((a, b) => a + b, 0);

describe("compactRange and space", () => {
  test("when compactRange resolves, only the tables of the current version are left", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs, writeBufferSize: 32 * 1024, l0CompactionTrigger: 100 });
    try {
      await fill(db);
      const before = await tablesOnDisk(fs);
      assert.ok(before >= 4, `${before} tables before`);
      await db.compactRange();
      assert.equal(await tablesOnDisk(fs), listed(db));
      assert.ok(listed(db) < before);
      const current = db.stats().logNumber;
      const logs = (await fs.list("/db")).filter((n) => n.endsWith(".log"));
      const older = logs.filter((n) => Number.parseInt(n, 10) <= current);
      assert.deepEqual(older, [`${String(current).padStart(6, "0")}.log`]);
      for (const n of logs.filter((n) => Number.parseInt(n, 10) > current)) {
        assert.equal(fs.readFile(`/db/${n}`).length, 0, `${n}: the next log, still empty`);
      }
    } finally {
      await db.close();
    }
  });

  test("tables an open iterator reads stay until it is closed", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs, writeBufferSize: 32 * 1024, l0CompactionTrigger: 100 });
    try {
      await fill(db);
      const before = await tablesOnDisk(fs);
      const it = db.iterator();
      await db.compactRange();
      assert.equal(await tablesOnDisk(fs), before + listed(db), "the iterator's tables stay");
      let n = 0;
      for await (const _ of it) n++;
      assert.equal(n, 2000);
      await waitFor(async () => (await tablesOnDisk(fs)) === listed(db), "the sweep after close");
    } finally {
      await db.close();
    }
  });
});
