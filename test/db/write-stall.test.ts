/**
 * Write stalls. A memtable switch never blocks writers: while the first flush is in
 * progress (held here by a file system whose table-file sync waits for the test), writes
 * keep being acknowledged into the new memtable. Only once that second memtable is full too
 * do writers wait (stats().writeStalls), and they resume when the flush finishes. And if the
 * flush fails, stalled writers get an error rather than waiting forever. With
 * maxWriteBufferNumber 2 (LevelDB's two memtables; the default 3 is in
 * write-buffers.test.ts).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { eventually, GatedFileSystem, settlesWithin, ticks } from "../support/gated-file-system.js";

const WRITE_BUFFER = 8192;

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

const keyOf = (i: number) => `key${String(i).padStart(5, "0")}`;
const valueFor = (i: number) => `value-${i}-${"x".repeat(100)}`;

describe("write stalls", () => {
  test("writers are acknowledged while the first flush runs, wait only once the next memtable is full, and all complete when the flush finishes", async () => {
    const mem = new MemoryFileSystem();
    const fs = new GatedFileSystem(mem);
    fs.hold();
    const db = await open("/db", { fs, writeBufferSize: WRITE_BUFFER, maxWriteBufferNumber: 2 });
    let i = 0;

    // 1. Fill the first memtable; the write after it switches memtables and starts a flush
    //    whose table sync is held.
    while (db.stats().immutableMemtables === 0) {
      assert.ok(
        await settlesWithin(db.put(keyOf(i), valueFor(i))),
        `write ${i} was not acknowledged`,
      );
      i++;
      assert.ok(i < 1000, "the memtable never switched");
    }
    const firstMemtable = i - 1; // entries before the switching write
    assert.ok(await eventually(() => fs.waiting === 1), "the flush reached its table sync");
    let s = db.stats();
    assert.equal(s.flushes, 0);
    assert.equal(s.writeStalls, 0);
    assert.equal(s.immutableMemtables, 1);

    // 2. While the flush is held, writes go on being acknowledged until the new memtable is
    //    full; the first write that finds it full waits.
    let acknowledgedDuringFlush = 0;
    let stalled: Promise<void> | undefined;
    let stalledKey = -1;
    for (;;) {
      const bytesBefore = db.stats().memtableBytes;
      const write = db.put(keyOf(i), valueFor(i));
      if (await settlesWithin(write, 30)) {
        await write;
        assert.ok(
          bytesBefore < WRITE_BUFFER,
          `write ${i} into a full memtable (${bytesBefore} bytes) should have waited`,
        );
        acknowledgedDuringFlush++;
        i++;
        assert.ok(i < 2000, "writers never stalled");
        continue;
      }
      assert.ok(
        bytesBefore >= WRITE_BUFFER,
        `write ${i} waited although the memtable had room (${bytesBefore} of ${WRITE_BUFFER} bytes)`,
      );
      stalled = write;
      stalledKey = i++;
      break;
    }
    assert.ok(
      acknowledgedDuringFlush >= 5,
      `only ${acknowledgedDuringFlush} writes were acknowledged while the flush ran`,
    );
    s = db.stats();
    assert.ok(s.writeStalls > 0, "the wait is counted in writeStalls");
    assert.equal(s.flushes, 0, "the flush is still held");
    assert.equal(s.immutableMemtables, 1);

    // More writers queue behind the stalled one; none completes, reads still work.
    const queued: Promise<void>[] = [];
    for (let j = 0; j < 20; j++, i++) queued.push(db.put(keyOf(i), valueFor(i)));
    queued.push(db.write(db.batch().put("batch-a", "1").delete(keyOf(0))));
    assert.equal(await settlesWithin(Promise.race([stalled, ...queued]), 30), false);
    assert.equal(text(await db.get(keyOf(0))), valueFor(0), "a read from the immutable memtable");
    assert.equal(text(await db.get(keyOf(firstMemtable + 2))), valueFor(firstMemtable + 2));
    assert.equal(await db.get(keyOf(stalledKey)), undefined, "the stalled write is not visible");
    const it = db.iterator({ limit: 3 });
    assert.equal((await it.all()).length, 3, "iterators work during a stall");

    // 3. Let the flush finish: every write completes and everything reads back.
    fs.release();
    await Promise.all([stalled, ...queued]);
    await db.flush();
    s = db.stats();
    assert.ok(s.flushes >= 2, `flushes: ${s.flushes}`);
    assert.ok(s.writeStalls >= 1);
    assert.ok(s.stallMillis > 0, "the time writers waited is counted");
    const check = async (where: string, d: typeof db) => {
      assert.equal(await d.get(keyOf(0)), undefined, `${where}: deleted by the batch`);
      assert.equal(text(await d.get("batch-a")), "1", where);
      for (let k = 1; k < i; k++)
        assert.equal(text(await d.get(keyOf(k))), valueFor(k), `${where}: ${keyOf(k)}`);
      assert.equal((await d.iterator({ lt: "key" }).all()).length, 1, where);
      assert.equal((await d.iterator({ gte: "key" }).all()).length, i - 1, where);
    };
    await check("after the flush", db);
    await db.close();
    const again = await open("/db", { fs: mem });
    await check("after reopening", again);
    await again.close();
  });

  test("a writer stalled behind a flush that fails gets an error instead of waiting forever", async () => {
    const mem = new MemoryFileSystem();
    const fs = new GatedFileSystem(mem);
    fs.hold();
    const db = await open("/db", { fs, writeBufferSize: WRITE_BUFFER, maxWriteBufferNumber: 2 });
    const acknowledged: number[] = [];
    const pending: Array<Promise<unknown>> = [];
    let stalled = false;
    for (let i = 0; i < 2000 && !stalled; i++) {
      const w = db.put(keyOf(i), valueFor(i));
      if (await settlesWithin(w, 30)) {
        await w;
        acknowledged.push(i);
      } else {
        pending.push(
          w.then(
            () => "ok",
            (e: unknown) => e,
          ),
        );
        stalled = true;
      }
    }
    assert.ok(stalled, "writers stalled");
    assert.ok(db.stats().writeStalls > 0);
    fs.fail(Object.assign(new Error("EIO: simulated sync failure"), { code: "EIO" }));
    const [outcome] = await Promise.all(pending);
    assert.ok(isKvError(outcome), `the stalled writer got ${String(outcome)}`);
    assert.ok(["IO_ERROR", "READ_ONLY"].includes(outcome.code), outcome.code);
    await assert.rejects(
      db.put("later", "x"),
      (e) => isKvError(e, "READ_ONLY") || isKvError(e, "IO_ERROR"),
    );
    assert.ok(db.stats().backgroundError !== undefined, "the flush failure is reported in stats");
    // Reads still serve every acknowledged write.
    for (const k of acknowledged) assert.equal(text(await db.get(keyOf(k))), valueFor(k));
    await db.close().catch(() => {});
    await ticks(2);
    // After a reopen (the gate no longer fails) every acknowledged write is there.
    const again = await open("/db", { fs: mem });
    for (const k of acknowledged)
      assert.equal(text(await again.get(keyOf(k))), valueFor(k), keyOf(k));
    await again.put("after", "reopen");
    await again.flush();
    await again.close();
  });
});
