import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  KvError,
  MemoryFileSystem,
  open,
} from "../../src/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

const isLog = (op: FileOp) => op.path.endsWith(".log");

async function failedLogOp(kind: "append" | "datasync"): Promise<void> {
  const mem = new MemoryFileSystem();
  const fs = new FaultInjectingFileSystem(mem, { dropUnsyncedOnSyncFailure: true });
  const db = await open("/db", { fs });
  for (let i = 0; i < 10; i++) await db.put(`acked${i}`, `v${i}`);
  fs.setInjector(FaultInjectingFileSystem.failNth(0, (op) => op.kind === kind && isLog(op)));
  const results = await Promise.allSettled(
    Array.from({ length: 16 }, (_, i) => db.put(`doomed${i}`, "x")),
  );
  for (const r of results) {
    assert.equal(r.status, "rejected");
    assert.ok(isKvError(r.reason, "IO_ERROR"), String(r.reason));
    assert.equal((r.reason as KvError).file, "/db/000002.log");
  }
  // The store refuses later writes with a clear error, even though the fault is gone...
  fs.setInjector(undefined);
  await assert.rejects(db.put("later", "x"), (e) => isKvError(e, "READ_ONLY"));
  await assert.rejects(db.write(db.batch().put("later", "x")), (e) => isKvError(e, "READ_ONLY"));
  // ...still serves reads, and never shows the failed writes.
  assert.equal(text(await db.get("acked3")), "v3");
  assert.equal(await db.get("doomed0"), undefined);
  await db.close();
  // A power loss now, then reopen: every acknowledged write is there.
  const crashed = mem.crashClone({ unsyncedRetention: 0 });
  for (const target of [mem, crashed]) {
    const again = await open("/db", { fs: target });
    for (let i = 0; i < 10; i++) assert.equal(text(await again.get(`acked${i}`)), `v${i}`);
    assert.equal(await again.get("later"), undefined);
    await again.put("after-reopen", "ok");
    assert.equal(text(await again.get("after-reopen")), "ok");
    await again.close();
  }
}

describe("fault injection", () => {
  test("a failed log append fails the writers of its group, then the store turns read-only", () =>
    failedLogOp("append"));

  test("a failed fdatasync fails the writers of its group, then the store turns read-only", () =>
    failedLogOp("datasync"));

  test("a writer queued behind a failed group is rejected with READ_ONLY", async () => {
    const fs = new FaultInjectingFileSystem(new MemoryFileSystem());
    const db = await open("/db", { fs });
    fs.setInjector(FaultInjectingFileSystem.failNth(0, (op) => op.kind === "datasync"));
    const first = db.put("a", "1");
    // Queue a second writer while the first group's sync is in flight.
    await Promise.resolve();
    await Promise.resolve();
    const second = db.put("b", "2");
    await assert.rejects(first, (e) => isKvError(e, "IO_ERROR"));
    await assert.rejects(second, (e) => isKvError(e, "READ_ONLY") || isKvError(e, "IO_ERROR"));
    await db.close();
  });

  test("every failing file operation of open surfaces as an error and leaves the directory usable", async () => {
    const mem = new MemoryFileSystem();
    const setup = await open("/db", { fs: mem });
    await setup.put("k", "v");
    await setup.close();
    let failures = 0;
    for (let n = 0; ; n++) {
      const fs = new FaultInjectingFileSystem(mem, {
        injector: FaultInjectingFileSystem.failNth(n),
      });
      let db: Awaited<ReturnType<typeof open>> | undefined;
      try {
        db = await open("/db", { fs });
      } catch (err) {
        assert.ok(err instanceof KvError, `op ${n}: ${String(err)}`);
        failures++;
      }
      if (db !== undefined) {
        await db.close().catch(() => {});
        const check = await open("/db", { fs: mem });
        assert.equal(text(await check.get("k")), "v");
        await check.close();
        if (fs.opCount <= n) break; // a run that reached no injected fault: done
        continue;
      }
      const check = await open("/db", { fs: mem });
      assert.equal(text(await check.get("k")), "v", `after failing op ${n}`);
      await check.close();
    }
    assert.ok(failures > 3, `only ${failures} operations of open failed`);
  });

  test("sweep: failing the Nth file operation of an open/write/close run loses nothing acknowledged", async () => {
    for (let n = 0; ; n++) {
      const mem = new MemoryFileSystem();
      const fs = new FaultInjectingFileSystem(mem, {
        injector: FaultInjectingFileSystem.failNth(n),
        dropUnsyncedOnSyncFailure: true,
      });
      const acked: string[] = [];
      let error: unknown;
      try {
        const db = await open("/db", { fs });
        try {
          for (let i = 0; i < 8; i++) {
            await Promise.all([db.put(`a${i}`, `${i}`), db.put(`b${i}`, `${i}`)]);
            acked.push(`a${i}`, `b${i}`);
          }
        } finally {
          await db.close();
        }
      } catch (err) {
        error = err;
      }
      if (error !== undefined) assert.ok(error instanceof KvError, `op ${n}: ${String(error)}`);
      for (const target of [mem, mem.crashClone({ unsyncedRetention: 0 })]) {
        const db = await open("/db", { fs: target });
        for (const k of acked) assert.equal(text(await db.get(k)), k.slice(1), `op ${n}: ${k}`);
        await db.close();
      }
      if (error === undefined && fs.opCount <= n) break;
    }
  });
});
