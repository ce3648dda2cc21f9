/**
 * upgradeLegacyKeys: plain pre-MVCC keys become versions at revision 1, in bounded
 * batches, deterministically; the replicated store's own keys are left alone.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isKvError } from "../../src/errors.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { hasLegacyKeys, upgradeLegacyKeys } from "../../src/mvcc/legacy-upgrade.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { testSeed } from "../support/random.js";
import { APPLIED, dump, legacyStore } from "./legacy-fixture.js";
import { showEvents, showKv } from "./mvcc-harness.js";

describe("upgradeLegacyKeys", () => {
  it("converts every plain key to revision 1 and leaves internal keys alone", async () => {
    const seed = testSeed();
    const fs = new MemoryFileSystem();
    const content = await legacyStore(fs, seed);
    const db = await open("/db", { fs });
    try {
      assert.equal(await hasLegacyKeys(db), true);
      let batches = 0;
      const result = await upgradeLegacyKeys(db, { batchKeys: 7, onBatch: () => void batches++ });
      assert.deepEqual(result, { keys: content.size, revision: 1 });
      assert.equal(await hasLegacyKeys(db), false);
      assert.equal(batches, Math.ceil(content.size / 7));
      assert.equal(
        (await db.iterator({ gte: Uint8Array.of(1), lt: Uint8Array.of(2) }).all()).length,
        0,
      );
      assert.deepEqual(await db.get(APPLIED), Buffer.alloc(16));
      const m = await MvccStore.open(db);
      assert.equal(m.revision, 1);
      const v = m.read();
      const all = await v.range(new Uint8Array(0), Uint8Array.of(0));
      v.release();
      const want = [...content.entries()]
        .map(([k, value]) => ({ key: Buffer.from(k, "hex"), value }))
        .sort((a, b) => Buffer.compare(a.key, b.key))
        .map(({ key, value }) =>
          showKv({ key, value, createRevision: 1, modRevision: 1, version: 1, lease: 0n }),
        );
      assert.deepEqual(all.kvs.map(showKv), want, `seed ${seed}`);
      const events = [];
      for await (const e of m.changes(1)) events.push(e);
      assert.deepEqual(
        showEvents(events),
        want.map((w) => `1 put ${w}`),
      );
      // A second run finds nothing to do.
      await m.close();
      assert.deepEqual(await upgradeLegacyKeys(db), { keys: 0, revision: 1 });
    } finally {
      await db.close();
    }
  });

  it("leaves a store without plain keys at revision 0", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    try {
      assert.deepEqual(await upgradeLegacyKeys(db), { keys: 0, revision: 0 });
      assert.deepEqual(await dump(db), []);
    } finally {
      await db.close();
    }
  });

  it("gives the same store whatever the batch size", async () => {
    const seed = testSeed();
    const dumps: string[][] = [];
    for (const batchKeys of [1, 5, 1000]) {
      const fs = new MemoryFileSystem();
      await legacyStore(fs, seed);
      const db = await open("/db", { fs });
      await upgradeLegacyKeys(db, { batchKeys });
      dumps.push(await dump(db));
      await db.close();
    }
    assert.deepEqual(dumps[0], dumps[1]);
    assert.deepEqual(dumps[0], dumps[2]);
  });

  it("refuses plain keys beside revisions above 1", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    try {
      const m = await MvccStore.open(db);
      for (let i = 0; i < 2; i++) {
        const w = m.write();
        await w.put(Uint8Array.of(7), Uint8Array.of(i), 0n);
        await w.end();
      }
      await m.close();
      await db.put(Uint8Array.of(1, 9), "old");
      await assert.rejects(upgradeLegacyKeys(db), (err) => isKvError(err, "CORRUPTION"));
    } finally {
      await db.close();
    }
  });
});
