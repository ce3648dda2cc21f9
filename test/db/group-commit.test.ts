import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FaultInjectingFileSystem, isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { GatedFileSystem } from "../support/gated-file-system.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

describe("group commit", () => {
  test("64 concurrent durable writers share far fewer fdatasyncs than writes", async () => {
    const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
    const db = await open("/db", { fs });
    const before = fs.count("datasync");
    const rounds = 10;
    for (let r = 0; r < rounds; r++) {
      await Promise.all(Array.from({ length: 64 }, (_, i) => db.put(`k${r}.${i}`, "v")));
    }
    const syncs = fs.count("datasync") - before;
    assert.ok(syncs >= 1, "durable writes must sync");
    assert.ok(syncs <= rounds * 2, `expected at most ${rounds * 2} syncs, got ${syncs}`);
    assert.equal(db.stats().commit.batches, rounds * 64);
    assert.equal(db.stats().commit.syncs, syncs);
    await db.close();
  });

  test("writers that arrive while a sync is in flight join the next group", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const db = await open(dir.path);
    // 64 loops, each keeping one durable put in flight: the real fdatasync takes long
    // enough that the others queue behind it.
    let n = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (n < 2000) await db.put(`k${n++}`, "v");
      }),
    );
    const { batches, syncs, maxGroupSize } = db.stats().commit;
    assert.equal(batches, 2000);
    assert.ok(syncs * 8 < batches, `${syncs} syncs for ${batches} writes`);
    assert.ok(maxGroupSize > 8, `largest group ${maxGroupSize}`);
    await db.close();
  });

  test("sync: false writes are acknowledged without an fdatasync", async () => {
    const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
    const db = await open("/db", { fs, sync: false });
    const before = fs.count("datasync");
    for (let i = 0; i < 20; i++) await db.put(`k${i}`, "v");
    assert.equal(fs.count("datasync") - before, 0);
    assert.ok(fs.count("append") >= 20);
    await db.put("durable", "v", { sync: true });
    assert.equal(fs.count("datasync") - before, 1);
    await db.close();
  });

  test("bursts of queued writers, mixed durable and not, commit in call order", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem(), sync: false });
    // Bursts larger than the queue array the store keeps, alternating with lone writes;
    // each burst writes every key again, so the last value tells the order of commits.
    let round = 0;
    for (const size of [3000, 1, 5, 2000, 1]) {
      round++;
      const writes: Promise<void>[] = [];
      for (let i = 0; i < size; i++) {
        const sync = i % 97 === 5;
        writes.push(db.put(`k${i % 50}`, `r${round}.${i}`, { sync }));
      }
      await Promise.all(writes);
      for (let k = 0; k < Math.min(size, 50); k++) {
        const last = k + 50 * Math.floor((size - 1 - k) / 50);
        assert.equal(Buffer.from((await db.get(`k${k}`))!).toString(), `r${round}.${last}`);
      }
    }
    const { batches, groups, syncs } = db.stats().commit;
    assert.equal(batches, 3000 + 1 + 5 + 2000 + 1);
    assert.ok(groups < batches / 5, `${groups} groups`);
    assert.ok(syncs > 0);
    await db.close();
  });
});

describe("lone durable writers", () => {
  test("a lone durable write syncs on the event-loop thread; a group syncs off it", async () => {
    const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
    const db = await open("/db", { fs });
    for (let i = 0; i < 10; i++) await db.put(`lone${i}`, "v");
    assert.equal(db.stats().commit.blockingSyncs, 10);
    await Promise.all(Array.from({ length: 32 }, (_, i) => db.put(`group${i}`, "v")));
    const { syncs, blockingSyncs } = db.stats().commit;
    assert.equal(blockingSyncs, 10, "a group of 32 must not block the event loop");
    assert.ok(syncs > blockingSyncs);
    await db.close();
  });

  test("blockingLoneSync: false never syncs on the event-loop thread", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem(), blockingLoneSync: false });
    for (let i = 0; i < 10; i++) await db.put(`lone${i}`, "v");
    assert.equal(db.stats().commit.blockingSyncs, 0);
    assert.equal(db.stats().commit.syncs, 10);
    await db.close();
  });

  test("a failed blocking sync fails the lone writer and turns the store read-only", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem);
    const db = await open("/db", { fs });
    await db.put("kept", "v");
    fs.setInjector(FaultInjectingFileSystem.failNth(0, (op) => op.kind === "datasync"));
    await assert.rejects(db.put("lost", "v"), (e) => isKvError(e, "IO_ERROR"));
    await assert.rejects(db.put("later", "v"), (e) => isKvError(e, "READ_ONLY"));
    await db.close();
    const again = await open("/db", { fs: mem.crashClone({ unsyncedRetention: 0 }) });
    assert.equal(Buffer.from((await again.get("kept")) ?? []).toString(), "v");
    await again.close();
  });

  test("a write whose signal fires while it is queued is dropped; one already committing is not", async (t) => {
    const fs = new GatedFileSystem(new MemoryFileSystem(), (path) => path.endsWith(".log"));
    const db = await open("/db", { fs, blockingLoneSync: false });
    t.after(() => fs.release());
    fs.hold();
    const first = new AbortController();
    const queued = new AbortController();
    const a = db.put("a", "1", { signal: first.signal });
    await waitFor(() => fs.waiting > 0, "the first group's log sync");
    const c = db.put("c", "3", { signal: queued.signal });
    const d = db.put("d", "4");
    queued.abort();
    first.abort(); // too late: its group is in its sync
    await assert.rejects(c, (err) => isKvError(err, "ABORTED"));
    fs.release();
    await a;
    await d;
    assert.equal(String(await db.get("a")), "1");
    assert.equal(await db.get("c"), undefined);
    assert.equal(String(await db.get("d")), "4");
    assert.equal(db.stats().lastSequence, 2);
    const aborted = new AbortController();
    aborted.abort();
    await assert.rejects(db.put("e", "5", { signal: aborted.signal }), (err) =>
      isKvError(err, "ABORTED"),
    );
    await assert.rejects(db.put("e", "5", { signal: "no" as unknown as AbortSignal }), (err) =>
      isKvError(err, "INVALID_ARGUMENT"),
    );
    await db.close();
    const reopened = await open("/db", { fs });
    assert.equal(await reopened.get("c"), undefined);
    assert.equal(reopened.stats().lastSequence, 2);
    await reopened.close();
  });
});
