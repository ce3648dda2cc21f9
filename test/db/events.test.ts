/**
 * Store events (src/db/events.ts): an open summary, one event per flush and compaction
 * with figures that add up to the store's own counters, stall state changes that pair up,
 * background errors, and listeners that throw without breaking anything.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  MemoryFileSystem,
  open,
  type StoreEvent,
} from "../../src/index.js";
import { GatedFileSystem } from "../support/gated-file-system.js";
import { waitFor } from "../support/wait-for.js";

const keyOf = (i: number) => `key${String(i).padStart(6, "0")}`;
const value = "v".repeat(200);

function ofType<T extends StoreEvent["type"]>(events: StoreEvent[], type: T) {
  return events.filter((e): e is Extract<StoreEvent, { type: T }> => e.type === type);
}

describe("store events", () => {
  test("open, flush and compaction events report what the store did", async () => {
    const fs = new MemoryFileSystem();
    const events: StoreEvent[] = [];
    const options = { fs, writeBufferSize: 16 * 1024, onEvent: (e: StoreEvent) => events.push(e) };
    const db = await open("/db", options);
    assert.equal(events[0]?.type, "open");
    for (let i = 0; i < 3000; i++) await db.put(keyOf(i % 1000), value, { sync: false });
    await db.flush();
    await db.compactRange();
    // Then one file in level 0 (below the compaction trigger, so only compactRange takes it).
    for (let i = 0; i < 50; i++) await db.put(keyOf(i), "late", { sync: false });
    await db.flush();
    assert.equal(db.stats().levelFiles[0], 1);
    await db.compactRange();
    const stats = db.stats();
    const flushes = ofType(events, "flush");
    assert.equal(flushes.length, stats.flushes);
    assert.equal(
      flushes.reduce((n, e) => n + e.bytes, 0),
      stats.flushBytes,
    );
    assert.ok(flushes.every((e) => e.entries > 0 && e.durationMs >= 0));
    const compactions = ofType(events, "compaction");
    assert.equal(compactions.filter((e) => !e.trivialMove).length, stats.compaction.compactions);
    assert.equal(compactions.filter((e) => e.trivialMove).length, stats.compaction.trivialMoves);
    assert.ok(
      compactions.some((e) => e.manual),
      "compactRange's compactions are marked manual",
    );
    assert.ok(
      compactions.some((e) => !e.manual),
      "the store compacted on its own too",
    );
    assert.equal(
      compactions.reduce((n, e) => n + e.bytesWritten, 0),
      stats.compaction.bytesWritten,
    );
    await db.close();

    // A crash that keeps the unsynced log: the open event counts the replay.
    events.length = 0;
    const again = await open("/db", options);
    for (let i = 0; i < 10; i++) await again.put(`late${i}`, value, { sync: false });
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    await again.close();
    const reopened = await open("/db", { fs: crashed, onEvent: (e) => events.push(e) });
    const opened = ofType(events, "open").at(-1);
    assert.ok(opened !== undefined);
    assert.ok(opened.entriesReplayed >= 10, `${opened.entriesReplayed} entries replayed`);
    assert.equal(opened.entriesReplayed, reopened.recovery.entries);
    assert.equal(opened.lastSequence, reopened.stats().lastSequence);
    assert.equal(String(await reopened.get("late9")), value);
    await reopened.close();
  });

  test("stall state changes are reported once each and pair up", async () => {
    const fs = new GatedFileSystem(new MemoryFileSystem(), (path) => path.endsWith(".sst"));
    const events: StoreEvent[] = [];
    const db = await open("/db", {
      fs,
      writeBufferSize: 8192,
      onEvent: (e) => events.push(e),
    });
    fs.hold(); // flushes wait in their table sync: the second memtable fills, writers stall
    const writes: Promise<void>[] = [];
    // One write at a time (a batch of concurrent writes would form one commit group): the
    // write that finds both memtables full stalls, so stop waiting for it after a while.
    for (let i = 0; i < 1000 && ofType(events, "stall").length === 0; i++) {
      const w = db.put(keyOf(i), value, { sync: false });
      writes.push(w);
      await Promise.race([w, new Promise((resolve) => setTimeout(resolve, 5))]);
    }
    const first = ofType(events, "stall")[0]!;
    assert.equal(first.state, "stopped");
    assert.equal(first.cause, "memtable");
    fs.release();
    await Promise.all(writes);
    await db.put("after", "x");
    const stalls = ofType(events, "stall");
    for (let i = 1; i < stalls.length; i++) {
      assert.notEqual(stalls[i]!.state, stalls[i - 1]!.state, "a change is reported once");
    }
    assert.equal(stalls.at(-1)!.state, "normal");
    assert.equal(db.stats().writeStalls > 0, true);
    await db.close();
  });

  test("a failed flush is reported as a background error", async () => {
    const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
    const events: StoreEvent[] = [];
    const db = await open("/db", { fs, writeBufferSize: 8192, onEvent: (e) => events.push(e) });
    fs.setInjector(
      FaultInjectingFileSystem.failWhere(
        (op) => (op.kind === "sync" || op.kind === "datasync") && op.path.endsWith(".sst"),
      ),
    );
    await assert.rejects(async () => {
      for (let i = 0; i < 2000; i++) await db.put(keyOf(i), value, { sync: false });
    });
    await waitFor(() => ofType(events, "background-error").length > 0, "the error event");
    const [err] = ofType(events, "background-error");
    assert.equal(err?.code, "IO_ERROR");
    assert.match(err?.message ?? "", /flush failed/);
    await db.close().catch(() => {});
  });

  test("a listener that throws breaks nothing", async () => {
    const db = await open("/db", {
      fs: new MemoryFileSystem(),
      writeBufferSize: 8192,
      onEvent: () => {
        throw new Error("listener bug");
      },
    });
    for (let i = 0; i < 500; i++) await db.put(keyOf(i), value);
    await db.flush();
    assert.ok(db.stats().flushes > 0);
    assert.equal(String(await db.get(keyOf(7))), value);
    await db.close();
  });

  test("onEvent must be a function", async () => {
    await assert.rejects(
      open("/db", { fs: new MemoryFileSystem(), onEvent: 5 as unknown as () => void }),
      (err) => isKvError(err, "INVALID_ARGUMENT"),
    );
  });
});
