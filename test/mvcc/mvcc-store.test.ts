/**
 * MvccStore against MvccModel (mvcc-harness.ts): seeded random runs of pipelined write
 * transactions, reads at random revisions, latest()/latestScan(), changes(), compactions
 * (physical parts running in the background meanwhile) and reopens of the KvStore, on an
 * in-memory file system with small memtables and tables so that data moves through
 * flushes and table compactions. KV_STRESS=1 runs more seeds and steps.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isKvError, KvError } from "../../src/errors.js";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { rng, testSeed } from "../support/random.js";
import { SMALL_LEVELS } from "../support/store-fixtures.js";
import { Harness } from "./mvcc-harness.js";

const STRESS = process.env["KV_STRESS"] === "1";

async function runSeed(seed: number, steps: number): Promise<void> {
  const fs = new MemoryFileSystem();
  const options = { ...SMALL_LEVELS, fs, sync: false };
  let kv: KvStore = await open("/db", options);
  const h = new Harness(await MvccStore.open(kv, { compactionChunk: 3 }), rng(seed), seed);
  const reopen = async () => {
    await h.store.close();
    await kv.close();
    kv = await open("/db", options);
    return MvccStore.open(kv, { compactionChunk: 3 });
  };
  try {
    for (let i = 0; i < steps; i++) await h.randomStep(reopen);
    await h.settle();
    await h.settleCompactions();
    await h.checkStoredEntries(kv);
    await h.read();
    await h.changes();
  } catch (err) {
    console.error(`mvcc-store: failed with seed ${seed} (KV_SEED=${seed} replays it)`);
    throw err;
  } finally {
    await h.store.close();
    await kv.close();
  }
}

describe("MvccStore against the model", () => {
  it("agrees on random pipelined writes, reads, compactions and reopens", async () => {
    const first = testSeed();
    const seeds = STRESS ? 20 : 4;
    for (let i = 0; i < seeds; i++) await runSeed(first + i, STRESS ? 3000 : 400);
  });
});

describe("MvccStore edge cases", () => {
  it("rejects an empty key and a bad lease, changing nothing", async () => {
    const kv = await open("/db", { fs: new MemoryFileSystem() });
    const m = await MvccStore.open(kv);
    try {
      const w = m.write();
      await assert.rejects(w.put(new Uint8Array(0), Uint8Array.of(1), 0n), KvError);
      await assert.rejects(w.put(Uint8Array.of(1), Uint8Array.of(1), -1n), KvError);
      await assert.rejects(w.put(Uint8Array.of(1), Uint8Array.of(1), 1n << 64n), KvError);
      assert.equal(w.revision, 1);
      await w.end();
      assert.equal(m.revision, 1);
    } finally {
      await m.close();
      await kv.close();
    }
  });

  it("rejects a revision that is not an integer, changing nothing", async () => {
    const kv = await open("/db", { fs: new MemoryFileSystem() });
    const m = await MvccStore.open(kv);
    try {
      const w = m.write();
      await w.put(Uint8Array.of(1), Uint8Array.of(1), 0n);
      await w.end();
      assert.throws(
        () => m.compact(Number.NaN),
        (err) => isKvError(err, "INVALID_ARGUMENT"),
      );
      assert.throws(
        () => m.compact(0.5),
        (err) => isKvError(err, "INVALID_ARGUMENT"),
      );
      assert.equal(m.compactRevision, 0);
      const v = m.read();
      await assert.rejects(v.range(Uint8Array.of(1), new Uint8Array(0), { revision: 1.5 }), (err) =>
        isKvError(err, "INVALID_ARGUMENT"),
      );
      v.release();
    } finally {
      await m.close();
      await kv.close();
    }
  });

  it("a write with no changes and no extra writes nothing", async () => {
    const kv = await open("/db", { fs: new MemoryFileSystem() });
    const m = await MvccStore.open(kv);
    try {
      const before = kv.stats();
      const w = m.write();
      await w.deleteRange(Uint8Array.of(1), Uint8Array.of(0));
      await w.end();
      assert.equal(m.revision, 1);
      assert.equal(kv.stats().lastSequence, before.lastSequence);
    } finally {
      await m.close();
      await kv.close();
    }
  });

  it("hold gathers ended writes into one store batch, written at release or past maxBytes", {
    timeout: 10_000,
  }, async () => {
    const kv = await open("/db", { fs: new MemoryFileSystem() });
    const m = await MvccStore.open(kv);
    let writes = 0;
    const write = kv.write.bind(kv);
    kv.write = (b, o) => {
      writes++;
      return write(b, o);
    };
    /** Puts key `k` in a write of its own; resolves once ended, to the end's promise. */
    const putOne = async (k: number): Promise<{ ended: Promise<void> }> => {
      const w = m.write();
      await w.put(Uint8Array.of(k), Uint8Array.of(k), 0n);
      return { ended: w.end() };
    };
    try {
      m.hold(1 << 20);
      const ended: Promise<void>[] = [];
      for (const k of [1, 2, 3]) ended.push((await putOne(k)).ended);
      let settled = false;
      void Promise.all(ended).then(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(settled, false, "held writes settle only at release");
      assert.equal(writes, 0);
      m.release();
      await Promise.all(ended);
      assert.equal(writes, 1, "three writes, one store batch");
      const view = m.read();
      assert.equal(view.revision, 4);
      assert.equal((await view.range(Uint8Array.of(1), Uint8Array.of(0))).count, 3);
      view.release();

      m.hold(1);
      await (await putOne(4)).ended; // past maxBytes at once: written before the release
      assert.equal(writes, 2);
      m.release();
      assert.equal(m.read().revision, 5);
    } finally {
      await m.close();
      await kv.close();
    }
  });

  it("a held group whose writes changed nothing still writes its trailer", async () => {
    const kv = await open("/db", { fs: new MemoryFileSystem() });
    const m = await MvccStore.open(kv);
    const mark = Uint8Array.of(0, 9);
    try {
      m.hold(1 << 20, (b) => b.put(mark, Uint8Array.of(7)));
      const w = m.write();
      await w.deleteRange(Uint8Array.of(1), Uint8Array.of(0)); // nothing to delete
      const ended = w.end();
      m.release();
      await ended;
      assert.deepEqual(Uint8Array.from((await kv.get(mark)) ?? []), Uint8Array.of(7));
      assert.equal(m.revision, 1);

      const before = kv.stats().lastSequence;
      m.hold(1 << 20, (b) => b.put(mark, Uint8Array.of(8)));
      m.release(); // no write ended: nothing written
      assert.equal(kv.stats().lastSequence, before);
    } finally {
      await m.close();
      await kv.close();
    }
  });
});
