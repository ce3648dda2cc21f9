import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { describe, test } from "node:test";
import { isKvError, KvError, MemoryFileSystem, open } from "../../src/index.js";
import { tempDir } from "../support/temp-dir.js";

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

function assertCode(err: unknown, code: string): true {
  assert.ok(err instanceof KvError, `expected a KvError, got ${String(err)}`);
  assert.equal(err.code, code);
  return true;
}

describe("KvStore API", () => {
  test("put then get returns the value, and get of an absent key returns undefined", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("apple", "red");
    assert.equal(text(await db.get("apple")), "red");
    assert.equal(await db.get("pear"), undefined);
    await db.close();
  });

  test("delete hides the key and a later put brings it back", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("k", "v1");
    await db.delete("k");
    assert.equal(await db.get("k"), undefined);
    await db.put("k", "v2");
    assert.equal(text(await db.get("k")), "v2");
    await db.close();
  });

  test("binary keys and values, and empty values, round trip byte for byte", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    const key = new Uint8Array([0, 255, 128, 0]);
    const value = new Uint8Array([255, 0, 1, 2, 254]);
    await db.put(key, value);
    await db.put(new Uint8Array([1]), new Uint8Array(0));
    assert.deepEqual(new Uint8Array((await db.get(key)) ?? [9]), value);
    assert.deepEqual(new Uint8Array((await db.get(new Uint8Array([1]))) ?? [9]), new Uint8Array(0));
    await db.close();
  });

  test("a string key reads the same as its UTF-8 bytes", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("héllo", "wörld");
    assert.equal(text(await db.get(Buffer.from("héllo", "utf8"))), "wörld");
    await db.close();
  });

  test("get returns a copy: changing it does not change the store", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("k", "abc");
    const v = await db.get("k");
    assert.ok(v);
    v[0] = 0x7a;
    assert.equal(text(await db.get("k")), "abc");
    await db.close();
  });

  test("changing the caller's buffers after put does not change the stored value", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    const key = Buffer.from("key");
    const value = Buffer.from("value");
    const done = db.put(key, value);
    value.fill(0);
    key.fill(0x41);
    await done;
    assert.equal(text(await db.get("key")), "value");
    await db.close();
  });

  test("a batch applies all its operations, in order, with consecutive sequence numbers", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("gone", "x");
    const before = db.stats().lastSequence;
    await db.write(db.batch().put("a", "1").put("b", "2").delete("gone").put("a", "3"));
    assert.equal(text(await db.get("a")), "3");
    assert.equal(text(await db.get("b")), "2");
    assert.equal(await db.get("gone"), undefined);
    assert.equal(db.stats().lastSequence, before + 4);
    await db.close();
  });

  test("a batch can be reused after write() without changing the pending write", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    const batch = db.batch().put("a", "1");
    const pending = db.write(batch);
    batch.clear().put("a", "2");
    await pending;
    assert.equal(text(await db.get("a")), "1");
    await db.close();
  });

  test("empty and non-byte keys are rejected with INVALID_ARGUMENT and change nothing", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("k", "v");
    const seq = db.stats().lastSequence;
    await assert.rejects(db.put("", "v"), (e) => assertCode(e, "INVALID_ARGUMENT"));
    await assert.rejects(db.put(new Uint8Array(0), "v"), (e) => assertCode(e, "INVALID_ARGUMENT"));
    // @ts-expect-error: a number is not a key
    await assert.rejects(db.put(42, "v"), (e) => assertCode(e, "INVALID_ARGUMENT"));
    // @ts-expect-error: null is not a value
    await assert.rejects(db.put("k", null), (e) => assertCode(e, "INVALID_ARGUMENT"));
    await assert.rejects(db.delete(""), (e) => assertCode(e, "INVALID_ARGUMENT"));
    await assert.rejects(db.get(""), (e) => assertCode(e, "INVALID_ARGUMENT"));
    // @ts-expect-error: sync must be a boolean
    await assert.rejects(db.put("k", "w", { sync: "yes" }), (e) =>
      assertCode(e, "INVALID_ARGUMENT"),
    );
    // @ts-expect-error: write takes a batch
    await assert.rejects(db.write({}), (e) => assertCode(e, "INVALID_ARGUMENT"));
    assert.equal(db.stats().lastSequence, seq);
    assert.equal(text(await db.get("k")), "v");
    await db.close();
  });

  test("a bad operation on a batch throws and leaves the batch unchanged", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    const batch = db.batch().put("a", "1");
    assert.throws(
      () => batch.put("", "x"),
      (e) => assertCode(e, "INVALID_ARGUMENT"),
    );
    assert.throws(
      // @ts-expect-error: undefined is not a key
      () => batch.delete(undefined),
      (e) => assertCode(e, "INVALID_ARGUMENT"),
    );
    assert.equal(batch.count, 1);
    await db.write(batch);
    assert.equal(text(await db.get("a")), "1");
    await db.close();
  });

  test("operations after close fail with CLOSED, and close can be called twice", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    await db.put("k", "v");
    await db.close();
    await db.close();
    await assert.rejects(db.put("k", "v"), (e) => assertCode(e, "CLOSED"));
    await assert.rejects(db.get("k"), (e) => assertCode(e, "CLOSED"));
    assert.ok(isKvError(await db.delete("k").catch((e: unknown) => e), "CLOSED"));
  });

  test("close waits for writes that are still queued", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs });
    const writes = Array.from({ length: 50 }, (_, i) => db.put(`k${i}`, `v${i}`));
    await db.close();
    await Promise.all(writes);
    const again = await open("/db", { fs });
    for (let i = 0; i < 50; i++) assert.equal(text(await again.get(`k${i}`)), `v${i}`);
    await again.close();
  });

  test("data written before close is there after reopen, including sync: false writes", async () => {
    const fs = new MemoryFileSystem();
    const db = await open("/db", { fs, sync: false });
    await db.put("a", "1");
    await db.put("b", "2", { sync: true });
    await db.delete("a");
    await db.write(db.batch().put("c", "3").put("d", "4"));
    await db.close();
    const again = await open("/db", { fs });
    assert.equal(await again.get("a"), undefined);
    assert.equal(text(await again.get("b")), "2");
    assert.equal(text(await again.get("c")), "3");
    assert.equal(text(await again.get("d")), "4");
    assert.equal(again.recovery.batches, 4);
    assert.equal(again.recovery.tornTailBytes, 0);
    // Sequence numbers continue after the replayed ones.
    assert.equal(again.stats().lastSequence, 5);
    await again.put("e", "5");
    assert.equal(again.stats().lastSequence, 6);
    await again.close();
  });

  test("reopening many times keeps every write (real file system)", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    for (let round = 0; round < 5; round++) {
      const db = await open(dir.path);
      for (let r = 0; r < round; r++) assert.equal(text(await db.get(`k${r}`)), `v${r}`);
      await db.put(`k${round}`, `v${round}`);
      await db.close();
    }
  });

  test("open creates a missing directory with mode 0700 and files with mode 0600", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    const path = `${dir.path}/nested/store`;
    const db = await open(path);
    await db.put("k", "v");
    await db.close();
    assert.equal(statSync(path).mode & 0o777, 0o700);
    for (const name of ["LOCK", "CURRENT", "MANIFEST-000001", "000002.log"]) {
      assert.equal(statSync(`${path}/${name}`).mode & 0o777, 0o600, name);
    }
  });

  test("createIfMissing: false refuses a missing directory", async () => {
    await assert.rejects(
      open("/nope", { fs: new MemoryFileSystem(), createIfMissing: false }),
      (e) => assertCode(e, "INVALID_ARGUMENT"),
    );
  });

  test("bad options are rejected with INVALID_ARGUMENT", async () => {
    const fs = new MemoryFileSystem();
    // @ts-expect-error: not a mode
    await assert.rejects(open("/db", { fs, walRecoveryMode: "yolo" }), (e) =>
      assertCode(e, "INVALID_ARGUMENT"),
    );
    await assert.rejects(open("/db", { fs, writeBufferSize: -1 }), (e) =>
      assertCode(e, "INVALID_ARGUMENT"),
    );
    // The failed opens released everything: a valid open works.
    const db = await open("/db", { fs });
    await db.close();
  });
});
