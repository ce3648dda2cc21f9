/**
 * db.getSync: the same answers as get (memtables, tables, tombstones, snapshots), including
 * when it must open tables evicted by maxOpenFiles on the spot; errors are thrown, not
 * returned.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { FaultInjectingFileSystem, isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { rng } from "../support/random.js";

const key = (i: number) => `k${String(i).padStart(5, "0")}`;
const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString();

test("getSync answers like get, opening evicted tables synchronously", async () => {
  const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
  // Tiny memtables and maxOpenFiles 10: far more tables than stay open.
  const db = await open("/db", {
    fs,
    writeBufferSize: 4096,
    targetFileSize: 4096,
    maxOpenFiles: 10,
  });
  const random = rng(7);
  const model = new Map<string, string>();
  for (let n = 0; n < 6000; n++) {
    const k = key(Math.floor(random() * 3000));
    if (random() < 0.15) {
      await db.delete(k);
      model.delete(k);
    } else {
      const v = `v${n}`.padEnd(100, ".");
      await db.put(k, v, { sync: false });
      model.set(k, v);
    }
  }
  const snap = db.snapshot();
  const frozen = new Map(model);
  for (let i = 0; i < 200; i++) await db.put(key(i), "after-snapshot", { sync: false });
  for (let i = 0; i < 200; i++) model.set(key(i), "after-snapshot");
  assert.ok(db.stats().levelFiles.reduce((a, b) => a + b, 0) > 10, "more tables than maxOpenFiles");
  const opensBefore = fs.counts.openReadable;
  for (let i = 0; i < 3020; i += 3) {
    const k = key(i);
    assert.equal(text(db.getSync(k)), model.get(k), k);
    assert.equal(text(db.getSync(k, { snapshot: snap })), frozen.get(k), `${k} at the snapshot`);
    assert.equal(text(db.getSync(k)), text(await db.get(k)));
  }
  assert.ok(fs.counts.openReadable > opensBefore, "getSync opened evicted tables itself");
  snap.release();
  await db.close();
  assert.throws(
    () => db.getSync(key(1)),
    (err) => isKvError(err, "CLOSED"),
  );
});

test("getSync throws: bad keys, failed table opens, missing tables", async () => {
  const mem = new MemoryFileSystem();
  const fs = new FaultInjectingFileSystem(mem);
  const db = await open("/db", {
    fs,
    writeBufferSize: 4096,
    targetFileSize: 4096,
    maxOpenFiles: 10,
  });
  for (let i = 0; i < 3000; i++) await db.put(key(i), "x".repeat(40), { sync: false });
  await db.flush();
  assert.throws(
    () => db.getSync(""),
    (err) => isKvError(err, "INVALID_ARGUMENT"),
  );
  // Fail every table open: some key lives in a table that is not open now.
  fs.setInjector(FaultInjectingFileSystem.failWhere((op) => op.kind === "openReadable"));
  let failed = 0;
  for (let i = 0; i < 3000; i += 50) {
    try {
      db.getSync(key(i));
    } catch (err) {
      assert.ok(isKvError(err, "IO_ERROR"), String(err));
      failed++;
    }
  }
  assert.ok(failed > 0, "some get needed a table that was not open");
  fs.setInjector(undefined);
  // A table gone from the directory: CORRUPTION naming it.
  const tables = (await mem.list("/db")).filter((n) => n.endsWith(".sst"));
  for (const t of tables) await mem.remove(`/db/${t}`);
  let corrupt = 0;
  for (let i = 0; i < 3000; i += 50) {
    try {
      db.getSync(key(i));
    } catch (err) {
      assert.ok(isKvError(err, "CORRUPTION") && /is missing/.test(err.message), String(err));
      corrupt++;
    }
  }
  assert.ok(corrupt > 0);
  await db.close().catch(() => {});
});
