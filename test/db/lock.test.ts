import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KvError, MemoryFileSystem, open } from "../../src/index.js";
import { exited, firstLine, fixture, startNode } from "../support/child.js";
import { tempDir } from "../support/temp-dir.js";

function isLocked(err: unknown): true {
  assert.ok(err instanceof KvError, `expected a KvError, got ${String(err)}`);
  assert.equal(err.code, "LOCKED");
  assert.match(err.message, /in use/);
  return true;
}

describe("data-directory lock", () => {
  test("a second open in the same process fails with LOCKED until the first closes", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const db = await open(dir.path);
    await assert.rejects(open(dir.path), isLocked);
    await db.put("k", "v");
    await db.close();
    const again = await open(dir.path);
    assert.equal(Buffer.from((await again.get("k")) ?? []).toString(), "v");
    await again.close();
  });

  test("the in-memory file system enforces the lock too", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs });
    await assert.rejects(open("/db", { fs }), isLocked);
    await db.close();
    await (await open("/db", { fs })).close();
  });

  test("an open from another process fails, and kill -9 of the holder releases the lock", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const holder = startNode(fixture("hold-store-open"), [dir.path]);
    t.after(() => holder.kill("SIGKILL"));
    assert.equal(await firstLine(holder), "open");
    // This process cannot open it...
    await assert.rejects(open(dir.path), isLocked);
    // ...nor can a third process.
    const other = startNode(fixture("hold-store-open"), [dir.path]);
    assert.equal(await firstLine(other), "LOCKED");
    await exited(other);
    // kill -9 gives no chance to clean up; the kernel drops the lock with the process.
    holder.kill("SIGKILL");
    await exited(holder);
    const db = await open(dir.path);
    await db.close();
  });

  test("a process holding the lock blocks this one until it is killed", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const db = await open(dir.path);
    const child = startNode(fixture("hold-store-open"), [dir.path]);
    assert.equal(await firstLine(child), "LOCKED");
    await exited(child);
    await db.close();
  });
});
