/**
 * walBytesPerSync: once that many bytes of the log are written and not synced, the store
 * starts an fdatasync nobody waits for. Unsynced writes then reach the disk as the log
 * grows (a power loss keeping none of the unsynced data still finds them), and a failed
 * background sync is a log failure like any other: writes are refused, reads go on. And
 * the next log is made ready ahead of the memtable switch that needs it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { StoreEvent } from "../../src/db/events.js";
import { FaultInjectingFileSystem, isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { waitFor } from "../support/wait-for.js";

const value = "v".repeat(100);
const keyOf = (i: number) => `k${String(i).padStart(6, "0")}`;

describe("walBytesPerSync", () => {
  test("unsynced writes reach the disk without a durable write: a power loss keeps them", async () => {
    for (const walBytesPerSync of [0, 8192]) {
      const mem = new MemoryFileSystem();
      const db = await open("/db", { fs: mem, sync: false, walBytesPerSync });
      for (let b = 0; b < 20; b++) {
        const batch = db.batch();
        for (let i = b * 50; i < (b + 1) * 50; i++) batch.put(keyOf(i), value);
        await db.write(batch);
      }
      const started = db.stats().commit.backgroundSyncs;
      await new Promise((r) => setTimeout(r, 20)); // the last background sync completes
      const clone = mem.crashClone({ unsyncedRetention: 0 });
      await db.close();
      const after = await open("/db", { fs: clone });
      let found = 0;
      for (let i = 0; i < 1000; i++) if ((await after.get(keyOf(i))) !== undefined) found++;
      await after.close();
      if (walBytesPerSync === 0) {
        assert.equal(started, 0);
        assert.equal(found, 0, "without background syncs nothing unsynced survives");
      } else {
        // ~130 KB of log: a sync once 8 KiB are unsynced and none is in flight.
        assert.ok(started >= 3, `${started} background syncs`);
        assert.ok(found >= 700, `${found} of 1000 unsynced puts survived`);
      }
    }
  });

  test("a failed background sync refuses later writes (a log failure) and reads go on", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem);
    const events: StoreEvent[] = [];
    const db = await open("/db", {
      fs,
      sync: false,
      walBytesPerSync: 4096,
      onEvent: (e) => events.push(e),
    });
    await db.put("before", "x");
    fs.setInjector(FaultInjectingFileSystem.failNth(0, (op) => op.kind === "datasync"));
    const batch = db.batch();
    for (let i = 0; i < 100; i++) batch.put(keyOf(i), value);
    await db.write(batch); // acknowledged: the failure is in the background sync after it
    await waitFor(() => events.some((e) => e.type === "log-failed"), "the log-failed event");
    const failed = events.find((e) => e.type === "log-failed");
    assert.equal(failed?.type === "log-failed" && failed.op, "sync");
    await assert.rejects(db.put("after", "y"), (err) => isKvError(err, "READ_ONLY"));
    assert.equal((await db.get("before"))?.toString(), "x");
    await db.close().catch(() => {});
  });

  test("the log of the next memtable switch is created ahead of it, empty, and removed at close", async () => {
    const mem = new MemoryFileSystem();
    const db = await open("/db", { fs: mem, sync: false, writeBufferSize: 16 * 1024 });
    const logsNow = async () => (await mem.list("/db")).filter((n) => n.endsWith(".log"));
    for (let i = 0; i < 400; i++) await db.put(keyOf(i), value);
    assert.ok(db.stats().flushes >= 1);
    const current = db.stats().logNumber;
    const newer = (await logsNow()).filter((n) => Number.parseInt(n, 10) > current);
    assert.equal(newer.length, 1, `the next log is ready: ${await logsNow()}`);
    assert.equal(mem.readFile(`/db/${newer[0]}`).length, 0);
    await db.close();
    const left = (await logsNow()).filter((n) => Number.parseInt(n, 10) > current);
    assert.deepEqual(left, [], "close removes the unused next log");
    const again = await open("/db", { fs: mem });
    for (let i = 0; i < 400; i++) assert.equal((await again.get(keyOf(i)))?.length, 100);
    await again.close();
  });
});
