/**
 * Checkpoints (db.checkpoint): the copy opens as a store with every write acknowledged
 * before the call, shares table files with the source through hard links (on the real file
 * system), survives a power loss right after the call resolves, stays intact while the
 * source keeps writing and compacting, and refuses an existing directory; with
 * `logSizeForFlush`, it copies the live log's prefix instead of flushing.
 */
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { describe, test } from "node:test";
import { isKvError, MemoryFileSystem, open } from "../../src/index.js";
import type { WritableFile } from "../../src/vfs/file-system.js";
import { tempDir } from "../support/temp-dir.js";

/** A MemoryFileSystem on which table files cannot be created while `held` (flushes wait). */
class HeldTablesFileSystem extends MemoryFileSystem {
  held = false;
  waiting = 0;
  private readonly waiters: (() => void)[] = [];

  override async createWritable(path: string): Promise<WritableFile> {
    if (this.held && path.endsWith(".sst")) {
      this.waiting++;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return super.createWritable(path);
  }

  release(): void {
    this.held = false;
    for (const w of this.waiters.splice(0)) w();
  }
}

const keyOf = (i: number) => `key${String(i).padStart(6, "0")}`;
const valueFor = (i: number, pass: number) => `value-${i}-${pass}-${"x".repeat(50)}`;

async function contents(db: Awaited<ReturnType<typeof open>>): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const [k, v] of db.iterator())
    out.set(Buffer.from(k).toString(), Buffer.from(v).toString());
  return out;
}

describe("checkpoint", () => {
  test("holds every acknowledged write, opens as a store, and is independent of the source", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs, writeBufferSize: 16 * 1024 });
    for (let i = 0; i < 3000; i++)
      await db.put(keyOf(i % 1000), valueFor(i % 1000, Math.floor(i / 1000)));
    for (let i = 0; i < 1000; i += 10) await db.delete(keyOf(i));
    await db.put("in-memtable", "yes"); // not flushed yet when checkpoint is called
    const expected = await contents(db);
    const result = await db.checkpoint("/backup");
    assert.ok(result.linked > 0);
    assert.equal(result.copied, 0);
    // The source keeps changing; the checkpoint must not.
    for (let i = 0; i < 1000; i++) await db.put(keyOf(i), "changed");
    await db.compactRange();
    await db.close();

    const copy = await open("/backup", { fs });
    assert.deepEqual(await contents(copy), expected);
    assert.equal(copy.recovery.logs.length, 0, "a checkpoint has no logs to replay");
    await copy.put("new", "write"); // it is a store of its own
    await copy.close();
    const source = await open("/db", { fs });
    assert.equal(await source.get("new"), undefined);
    assert.equal(String(await source.get(keyOf(5))), "changed");
    await source.close();
  });

  test("is durable when the call resolves (power loss right after)", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs, writeBufferSize: 16 * 1024 });
    for (let i = 0; i < 500; i++) await db.put(keyOf(i), valueFor(i, 0), { sync: false });
    const expected = await contents(db);
    await db.checkpoint("/backup");
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    const copy = await open("/backup", { fs: crashed });
    assert.deepEqual(await contents(copy), expected);
    await copy.close();
    await db.close();
  });

  test("writes racing with the checkpoint leave it a prefix of history", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs, writeBufferSize: 8 * 1024 });
    for (let i = 0; i < 200; i++) await db.put(keyOf(i), "before");
    let n = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) await db.put(`racing${String(n++).padStart(6, "0")}`, "r", { sync: false });
    })();
    await db.checkpoint("/backup");
    stop = true;
    await writer;
    await db.close();
    const copy = await open("/backup", { fs });
    const got = await contents(copy);
    for (let i = 0; i < 200; i++) assert.equal(got.get(keyOf(i)), "before");
    // Racing writes went in order: the checkpoint holds racing0..racingK-1 for some K.
    const racing = [...got.keys()].filter((k) => k.startsWith("racing")).sort();
    for (let i = 0; i < racing.length; i++) {
      assert.equal(racing[i], `racing${String(i).padStart(6, "0")}`);
    }
    await copy.close();
  });

  test("refuses a directory that exists, and a closed store", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs });
    await db.put("a", "1");
    await fs.mkdir("/taken");
    await assert.rejects(db.checkpoint("/taken"), (err) => isKvError(err, "INVALID_ARGUMENT"));
    await assert.rejects(db.checkpoint(""), (err) => isKvError(err, "INVALID_ARGUMENT"));
    await db.close();
    await assert.rejects(db.checkpoint("/later"), (err) => isKvError(err, "CLOSED"));
  });

  describe("logSizeForFlush: the live log copied instead of a flush", () => {
    test("nothing is flushed; the copy replays the log's prefix and holds every write made before", async () => {
      const fs = new MemoryFileSystem();
      const db = await open("/db", { fs, writeBufferSize: 64 * 1024 });
      for (let i = 0; i < 3000; i++)
        await db.put(keyOf(i % 1000), valueFor(i % 1000, Math.floor(i / 1000)), { sync: false });
      for (let i = 0; i < 1000; i += 10) await db.delete(keyOf(i), { sync: false });
      await db.put("in-memtable", "yes", { sync: false });
      const expected = await contents(db);
      const before = db.stats();
      assert.ok(before.memtableEntries > 0, "the memtable holds writes");
      await db.checkpoint("/backup", { logSizeForFlush: 1 << 20 });
      const after = db.stats();
      assert.equal(after.flushes, before.flushes, "no flush");
      assert.equal(after.logNumber, before.logNumber, "no log switch");
      assert.equal(after.memtableEntries, before.memtableEntries);
      for (let i = 0; i < 1000; i++) await db.put(keyOf(i), "changed", { sync: false });
      await db.compactRange();
      await db.close();

      const copy = await open("/backup", { fs });
      assert.deepEqual(copy.recovery.logs.length, 1, "the copied log is replayed");
      assert.deepEqual(await contents(copy), expected);
      await copy.close();
    });

    test("is durable when the call resolves (power loss right after)", async () => {
      const fs = new MemoryFileSystem();
      const db = await open("/db", { fs, writeBufferSize: 64 * 1024 });
      for (let i = 0; i < 500; i++) await db.put(keyOf(i), valueFor(i, 0), { sync: false });
      await db.flush();
      for (let i = 500; i < 800; i++) await db.put(keyOf(i), valueFor(i, 0), { sync: false });
      const expected = await contents(db);
      await db.checkpoint("/backup", { logSizeForFlush: 1 << 20 });
      const crashed = fs.crashClone({ unsyncedRetention: 0 });
      const copy = await open("/backup", { fs: crashed });
      assert.deepEqual(await contents(copy), expected);
      await copy.close();
      await db.close();
    });

    test("writes racing with it leave it a prefix of history", async () => {
      const fs = new MemoryFileSystem();
      const db = await open("/db", { fs, writeBufferSize: 64 * 1024 });
      for (let i = 0; i < 200; i++) await db.put(keyOf(i), "before", { sync: false });
      let n = 0;
      let stop = false;
      const writer = (async () => {
        while (!stop) await db.put(`racing${String(n++).padStart(6, "0")}`, "r", { sync: false });
      })();
      await db.checkpoint("/backup", { logSizeForFlush: 1 << 20 });
      stop = true;
      await writer;
      await db.close();
      const copy = await open("/backup", { fs });
      const got = await contents(copy);
      for (let i = 0; i < 200; i++) assert.equal(got.get(keyOf(i)), "before");
      const racing = [...got.keys()].filter((k) => k.startsWith("racing")).sort();
      assert.ok(racing.length < n, "writes after the log's prefix was taken are not in it");
      for (let i = 0; i < racing.length; i++) {
        assert.equal(racing[i], `racing${String(i).padStart(6, "0")}`);
      }
      await copy.close();
    });

    test("a log at or over the limit is flushed as without the option", async () => {
      const fs = new MemoryFileSystem();
      const db = await open("/db", { fs, writeBufferSize: 64 * 1024 });
      for (let i = 0; i < 200; i++) await db.put(keyOf(i), valueFor(i, 0), { sync: false });
      const before = db.stats();
      await db.checkpoint("/backup", { logSizeForFlush: 1024 });
      assert.equal(db.stats().flushes, before.flushes + 1);
      const copy = await open("/backup", { fs });
      assert.equal(copy.recovery.logs.length, 0);
      assert.equal(String(await copy.get(keyOf(199))), valueFor(199, 0));
      await copy.close();
      await db.close();
      await assert.rejects(
        (await open("/db2", { fs })).checkpoint("/x", { logSizeForFlush: -1 }),
        (err) => isKvError(err, "INVALID_ARGUMENT"),
      );
    });

    test("the copied log survives a flush and the sweep that follow the call", async () => {
      // The copy's first read of the source's log waits until the flush after the call
      // made that log obsolete and the sweep ran: the pin must keep it.
      let gate: Promise<void> | undefined;
      let release = () => {};
      class GatedFs extends MemoryFileSystem {
        override async openReadable(path: string) {
          if (gate !== undefined && path.startsWith("/db/") && path.endsWith(".log")) await gate;
          return super.openReadable(path);
        }
      }
      const fs = new GatedFs();
      const db = await open("/db", { fs, writeBufferSize: 64 * 1024 });
      for (let i = 0; i < 300; i++) await db.put(keyOf(i), valueFor(i, 0), { sync: false });
      const expected = await contents(db);
      const logNumber = db.stats().logNumber;
      const oldLog = `/db/${String(logNumber).padStart(6, "0")}.log`;
      assert.ok(await fs.exists(oldLog), oldLog);
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const done = db.checkpoint("/backup", { logSizeForFlush: 1 << 20 });
      await db.flush();
      assert.notEqual(db.stats().logNumber, logNumber);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the sweep after the flush
      assert.ok(await fs.exists(oldLog), "the pinned log is kept while the copy runs");
      release();
      await done;
      await new Promise((resolve) => setTimeout(resolve, 50));
      await db.flush();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(await fs.exists(oldLog), false, "unpinned, the next sweep removes it");
      const copy = await open("/backup", { fs });
      assert.deepEqual(await contents(copy), expected);
      await copy.close();
      await db.close();
    });
  });

  test("on the real file system, table files are hard links shared with the source", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const db = await open(`${dir.path}/db`, { writeBufferSize: 16 * 1024 });
    for (let i = 0; i < 2000; i++) await db.put(keyOf(i), valueFor(i, 0), { sync: false });
    const expected = await contents(db);
    const result = await db.checkpoint(`${dir.path}/backup`);
    assert.ok(result.linked > 0);
    const table = (await import("node:fs"))
      .readdirSync(`${dir.path}/backup`)
      .find((n) => n.endsWith(".sst"));
    assert.ok(table !== undefined);
    const a = statSync(`${dir.path}/db/${table}`);
    const b = statSync(`${dir.path}/backup/${table}`);
    assert.equal(a.ino, b.ino, "the same inode");
    assert.ok(a.nlink >= 2);
    await db.close();
    const copy = await open(`${dir.path}/backup`);
    assert.deepEqual(await contents(copy), expected);
    await copy.close();
  });
  test("a capture holds what was written before it, whatever the store does before it is written", async () => {
    for (const logSizeForFlush of [0, 1 << 20]) {
      const fs = new MemoryFileSystem();
      const db = await open("/db", { fs, writeBufferSize: 16 * 1024 });
      for (let i = 0; i < 1500; i++) await db.put(keyOf(i % 1000), valueFor(i % 1000, 0));
      await db.put("in-memtable", "yes");
      const expected = await contents(db);
      const capture = await db.captureCheckpoint({ logSizeForFlush });
      // After the capture: overwrites, deletes, memtable switches, flushes and a full
      // compaction, which delete the captured log and tables unless they are held.
      for (let i = 0; i < 1000; i++) await db.put(keyOf(i), "later");
      for (let i = 0; i < 1000; i += 7) await db.delete(keyOf(i));
      await db.put("in-memtable", "later");
      await db.compactRange();
      await capture.write("/backup");
      capture.release();
      capture.release(); // idempotent
      await assert.rejects(
        async () => capture.write("/other"),
        (err: unknown) => isKvError(err, "INVALID_ARGUMENT"),
        "a released capture writes nothing",
      );
      await db.close();
      const copy = await open("/backup", { fs });
      assert.deepEqual(await contents(copy), expected, `logSizeForFlush ${logSizeForFlush}`);
      await copy.close();
    }
  });

  test("a capture does not wait for a running flush: it copies that memtable's log too", async () => {
    const fs = new HeldTablesFileSystem();
    const db = await open("/db", { fs, writeBufferSize: 16 * 1024 });
    for (let i = 0; i < 300; i++) await db.put(keyOf(i), valueFor(i, 0));
    await db.flush();
    fs.held = true;
    // Fill the memtable until a switch: its flush then waits for its table file.
    let i = 300;
    while (fs.waiting === 0) {
      await db.put(keyOf(i), valueFor(i, 0));
      i++;
    }
    for (let k = 0; k < 20; k++) await db.put(`live${k}`, "in the live log");
    const expected = await contents(db);
    const capture = await db.captureCheckpoint({ logSizeForFlush: 1 << 20 });
    assert.equal(fs.waiting, 1, "captured while the flush still waited");
    for (let k = 0; k < 50; k++) await db.put(keyOf(k), "later");
    fs.release();
    await db.flush(); // the held flush ends, its log is obsolete (but pinned)
    await db.compactRange();
    await capture.write("/backup");
    capture.release();
    await db.close();
    const copy = await open("/backup", { fs });
    assert.deepEqual(await contents(copy), expected);
    assert.ok(
      copy.recovery.logs.length >= 2,
      "the flushing memtable's log and the live one replayed",
    );
    await copy.close();
  });
});
