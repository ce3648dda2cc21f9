/**
 * Write stalls. A memtable switch never blocks writers: while the first flush is in
 * progress (held here by a file system whose table-file sync waits for the test), writes
 * keep being acknowledged into the new memtable. Only once that second memtable is full too
 * do writers wait (stats().writeStalls), and they resume when the flush finishes. And if the
 * flush fails, stalled writers get an error rather than waiting forever. With
 * maxWriteBufferNumber 2 (LevelDB's two memtables; the default 3 is in
 * write-buffers.test.ts).
 *
 * Level-0 back-pressure: with compactions held (their output syncs wait at a gate), level
 * 0 grows flush by flush; past l0SlowdownTrigger a growing share of write groups is
 * delayed, at l0StopTrigger writers wait, visible in stats (counters, stallState and
 * stallCause), until the compaction is let go.
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

/** True iff `p` settles within `ms` milliseconds (a 1 ms slowdown may outlast many ticks). */
async function settlesWithinMs(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = p.then(
    () => true,
    () => true,
  );
  const result = await Promise.race([settled, timeout]);
  clearTimeout(timer);
  return result;
}

describe("level-0 back-pressure", () => {
  test("past l0SlowdownTrigger a growing share of writes is delayed; at l0StopTrigger writers wait for compaction, then resume", async () => {
    const mem = new MemoryFileSystem();
    // Compaction outputs' syncs wait at the gate (the compaction job is on the stack; a
    // flush's table sync comes from level0-table.ts), so level 0 only grows.
    const fs = new GatedFileSystem(
      mem,
      (path) => path.endsWith(".sst") && (new Error().stack ?? "").includes("compaction-job"),
    );
    fs.hold();
    const db = await open("/db", {
      fs,
      writeBufferSize: 4096,
      l0CompactionTrigger: 2,
      l0SlowdownTrigger: 3,
      l0StopTrigger: 6,
      compactionMode: "inline",
    });
    // Keys spread over the whole range by every memtable, so that level-0 tables overlap
    // (non-overlapping ones would move down to level 1 without a compaction).
    const written = new Map<string, string>();
    let i = 0;
    const put = async () => {
      const k = keyOf((i * 7919) % 1000);
      const v = valueFor(i++);
      await db.put(k, v);
      written.set(k, v);
    };
    try {
      while (db.stats().levelFiles[0]! < 3) {
        await put();
        assert.ok(i < 10_000, "level 0 never reached the slowdown trigger");
      }
      let s = db.stats();
      // (The last write may already have seen 3 files: a quarter of a delay owed.)
      assert.equal(s.writeSlowdowns, 0, "no delay below the slowdown trigger");

      // From 3 files on (stop at 6), 1 in 4 groups at 3 files, 2 in 4 at 4, 3 in 4 at 5.
      let groupsPast = 0;
      while (db.stats().levelFiles[0]! < 5) {
        await put();
        groupsPast++;
        assert.ok(i < 10_000, "level 0 never reached 5 files");
      }
      s = db.stats();
      assert.ok(s.writeSlowdowns > 0, "writes past the trigger were delayed");
      assert.ok(s.writeSlowdowns < groupsPast, `${s.writeSlowdowns} of ${groupsPast} delayed`);
      assert.ok(s.writeSlowdowns >= Math.floor(groupsPast / 4) - 1, `${s.writeSlowdowns}`);
      assert.equal(s.writeStalls, 0);
      assert.equal(s.stallState, "delayed");
      assert.equal(s.stallCause, "level0");
      assert.ok(s.stallMillis > 0);

      // At 6 files a write waits, for as long as the compaction cannot finish.
      let waiting: Promise<void> | undefined;
      for (;;) {
        let done = false;
        const write = put().then(() => {
          done = true;
        });
        assert.ok(await eventually(() => done || db.stats().stallState === "stopped", 100_000));
        if (!done) {
          waiting = write;
          break;
        }
        assert.ok(i < 10_000, "no write ever waited");
      }
      s = db.stats();
      assert.equal(s.levelFiles[0], 6);
      assert.equal(s.stallState, "stopped");
      assert.equal(s.stallCause, "level0");
      assert.ok(s.writeStalls >= 1);
      assert.equal(await settlesWithinMs(waiting, 100), false, "still waiting");

      fs.release();
      await waiting;
      s = db.stats();
      assert.ok(s.levelFiles[0]! < 6, `level 0 has ${s.levelFiles[0]} files after compaction`);
      assert.ok(s.compaction.compactions >= 1);
      for (const [k, v] of written) assert.equal(text(await db.get(k)), v, k);
    } finally {
      fs.release();
      await db.close();
    }
  });
});
