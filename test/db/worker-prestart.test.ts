/**
 * The flush worker thread starts at the first write (so it has loaded, tens of
 * milliseconds, before the first flush needs it: a bulk load fills a memtable in ~10 ms),
 * not at open: a store that is only read never starts it. Private state is inspected here
 * because nothing public shows a thread start.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type KvStore, open } from "../../src/index.js";
import { tempDir } from "../support/temp-dir.js";

function workerThread(db: KvStore): unknown {
  const internals = db as unknown as {
    compactions: { worker?: { thread?: unknown } };
  };
  return internals.compactions.worker?.thread;
}

test("the worker starts at the first write, before the first flush", async () => {
  const d = tempDir("kv-prestart-");
  const writeBufferSize = 256 << 10;
  const db = await open(d.path, { writeBufferSize, sync: false });
  try {
    assert.equal(await db.get("a"), undefined);
    assert.equal(workerThread(db), undefined, "not started by open or a read");
    await db.put("a", "1");
    assert.notEqual(workerThread(db), undefined, "started by the first write");
    assert.equal(db.stats().flushes, 0, "before any flush");
    let i = 0;
    const value = Buffer.alloc(100, 1);
    for (; i < 3000; i++) await db.put(`key-${i}`, value);
    await db.flush();
    assert.ok(db.stats().flushes >= 2);
    assert.deepEqual(await db.get("key-2999"), value);
  } finally {
    await db.close();
    d.remove();
  }
});
