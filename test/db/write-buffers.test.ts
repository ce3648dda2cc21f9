/**
 * maxWriteBufferNumber: with 3 (the default), two full memtables may wait for flushes (one
 * flush runs at a time, oldest first) while writes go on into a third; writers wait only
 * when that one fills too. Everything reads back meanwhile, after the flushes and after a
 * reopen. With 2 (LevelDB's), writers wait once the second memtable fills.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { eventually, GatedFileSystem, settlesWithin } from "../support/gated-file-system.js";

const WRITE_BUFFER = 8192;
const keyOf = (i: number) => `key${String(i).padStart(5, "0")}`;
const valueFor = (i: number) => `value-${i}-${"x".repeat(100)}`;
const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

describe("maxWriteBufferNumber", () => {
  test("3 (the default): writes continue into a third memtable while two wait for their flushes", async () => {
    const mem = new MemoryFileSystem();
    const fs = new GatedFileSystem(mem);
    fs.hold();
    const db = await open("/db", { fs, writeBufferSize: WRITE_BUFFER });
    let i = 0;
    // Writes are acknowledged until two memtables are immutable (the first flush is held
    // at its table sync, the second memtable waits behind it) and the third is full.
    let stalled: Promise<void> | undefined;
    for (;;) {
      const write = db.put(keyOf(i), valueFor(i));
      if (!(await settlesWithin(write, 30))) {
        stalled = write;
        i++;
        break;
      }
      await write;
      i++;
      assert.ok(i < 3000, "writers never stalled");
    }
    let s = db.stats();
    assert.equal(s.immutableMemtables, 2, "two full memtables wait");
    assert.ok(s.memtableBytes >= WRITE_BUFFER, "the third is full");
    assert.equal(s.flushes, 0);
    assert.equal(fs.waiting, 1, "one flush at a time");
    assert.ok(s.writeStalls >= 1);
    // Reads see all three memtables.
    for (const k of [0, Math.floor(i / 2), i - 2]) {
      assert.equal(text(await db.get(keyOf(k))), valueFor(k), keyOf(k));
    }

    fs.release();
    await stalled;
    await db.flush();
    s = db.stats();
    assert.ok(s.flushes >= 3, `flushes: ${s.flushes}`);
    assert.equal(s.immutableMemtables, 0);
    assert.ok(s.levelFiles[0]! + s.levelFiles[1]! >= 3, `${s.levelFiles}`);
    for (let k = 0; k < i; k++) assert.equal(text(await db.get(keyOf(k))), valueFor(k));
    await db.close();

    const again = await open("/db", { fs: mem });
    for (let k = 0; k < i; k++) assert.equal(text(await again.get(keyOf(k))), valueFor(k));
    assert.equal((await again.iterator().all()).length, i);
    await again.close();
  });

  test("2 (LevelDB's) stalls once the second memtable fills during a flush", async () => {
    const fs = new GatedFileSystem(new MemoryFileSystem());
    fs.hold();
    const db = await open("/db", { fs, writeBufferSize: WRITE_BUFFER, maxWriteBufferNumber: 2 });
    let i = 0;
    for (;;) {
      const write = db.put(keyOf(i), valueFor(i));
      if (!(await settlesWithin(write, 30))) break;
      i++;
      assert.ok(i < 3000, "writers never stalled");
    }
    assert.equal(db.stats().immutableMemtables, 1);
    assert.ok(await eventually(() => fs.waiting === 1));
    fs.release();
    await db.close();
  });

  test("fewer than 2 is INVALID_ARGUMENT", async () => {
    for (const bad of [1, 0, 2.5, -3]) {
      await assert.rejects(
        open("/db", { fs: new MemoryFileSystem(), maxWriteBufferNumber: bad }),
        (e: unknown) => isKvError(e, "INVALID_ARGUMENT"),
        String(bad),
      );
    }
  });
});
