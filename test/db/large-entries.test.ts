/**
 * Large keys and values go through every layer: the log (records spanning many 32 KiB
 * blocks), the memtable, a flush (blocks far over the block size), compaction, reopen.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemoryFileSystem, open } from "../../src/index.js";

test("a 5 MiB value and a 64 KiB key survive log replay, flush, compaction and reopen", async () => {
  const fs = new MemoryFileSystem();
  const bigValue = Buffer.alloc(5 << 20);
  for (let i = 0; i < bigValue.length; i++) bigValue[i] = (i * 31 + 7) & 0xff;
  const bigKey = Buffer.alloc(64 << 10, 0x6b);
  let db = await open("/db", { fs });
  await db.put("big", bigValue);
  await db.put(bigKey, "long key");
  await db.put("small", "s");
  await db.close();
  // Replayed from the log:
  db = await open("/db", { fs });
  assert.ok(Buffer.from((await db.get("big"))!).equals(bigValue));
  assert.equal(String(await db.get(bigKey)), "long key");
  await db.flush();
  await db.compactRange();
  await db.close();
  // Read from tables:
  db = await open("/db", { fs });
  assert.ok(Buffer.from((await db.get("big"))!).equals(bigValue));
  assert.equal(String(await db.get(bigKey)), "long key");
  const keys = (await db.iterator({ keysOnly: true }).all()).map(([k]) => k.length);
  assert.deepEqual(keys, [3, 64 << 10, 5]);
  await db.close();
});
