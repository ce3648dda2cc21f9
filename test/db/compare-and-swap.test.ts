/**
 * KvStore.compareAndSwap: decided in the commit path, so it is atomic against every other
 * write, queued or concurrent; a swap that fails writes nothing.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FaultInjectingFileSystem, isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { rng, testSeed } from "../support/random.js";

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString();

describe("compareAndSwap", () => {
  test("swaps iff the value matches; absent and delete are expressible", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    let r = await db.compareAndSwap("k", "x", "y");
    assert.deepEqual([r.applied, r.current], [false, undefined], "absent does not match a value");
    r = await db.compareAndSwap("k", undefined, "1");
    assert.deepEqual([r.applied, text(r.current)], [true, "1"]);
    r = await db.compareAndSwap("k", undefined, "2");
    assert.deepEqual([r.applied, text(r.current)], [false, "1"], "present does not match absent");
    r = await db.compareAndSwap("k", "1", "2");
    assert.deepEqual([r.applied, text(r.current)], [true, "2"]);
    assert.equal(text(await db.get("k")), "2");
    r = await db.compareAndSwap("k", "2", undefined);
    assert.deepEqual([r.applied, r.current], [true, undefined]);
    assert.equal(await db.get("k"), undefined);
    r = await db.compareAndSwap("k", undefined, new Uint8Array([0, 1]));
    assert.equal(r.applied, true);
    r = await db.compareAndSwap("k", new Uint8Array([0, 1, 2]), "z");
    assert.equal(r.applied, false, "a longer value with the same prefix is not equal");
    await db.close();
  });

  test("a failed swap writes nothing to the log; an applied one survives a reopen", async () => {
    const mem = new MemoryFileSystem();
    const fs = new FaultInjectingFileSystem(mem);
    const db = await open("/db", { fs });
    await db.put("k", "1");
    const appends = fs.count("append");
    assert.equal((await db.compareAndSwap("k", "0", "9")).applied, false);
    assert.equal(fs.count("append"), appends);
    assert.equal(db.stats().commit.batches, 1);
    assert.equal((await db.compareAndSwap("k", "1", "2")).applied, true);
    assert.equal(db.stats().commit.batches, 2);
    const crashed = mem.crashClone({ unsyncedRetention: 0 });
    await db.close();
    const again = await open("/db", { fs: crashed });
    assert.equal(text(await again.get("k")), "2", "a durable CAS is synced like a put");
    await again.close();
  });

  test("a swap queued behind writes of the same turn sees them", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    // Durable writes of one turn share a group: the swap must still see the put before it,
    // and the put after it must not be visible to its comparison.
    const p1 = db.put("k", "a");
    const c1 = db.compareAndSwap("k", "a", "b");
    const c2 = db.compareAndSwap("k", "b", "c");
    const p2 = db.put("k", "d");
    const c3 = db.compareAndSwap("k", "d", "e");
    await p1;
    await p2;
    const results = await Promise.all([c1, c2, c3]);
    assert.deepEqual(
      results.map((r) => [r.applied, text(r.current)]),
      [
        [true, "b"],
        [true, "c"],
        [true, "e"],
      ],
    );
    assert.equal(text(await db.get("k")), "e");
    await db.close();
  });

  test("concurrent increments by CAS never lose or double an increment", async () => {
    const seed = testSeed();
    const random = rng(seed);
    const db = await open("/db", { fs: new MemoryFileSystem(), sync: random() < 0.5 });
    const clients = 16;
    const perClient = 40;
    const seen = new Set<number>();
    let conflicts = 0;
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let done = 0; done < perClient; ) {
          const raw = await db.get("counter");
          const n = raw === undefined ? 0 : Number(text(raw));
          if (random() < 0.2) await db.put(`noise${c}`, String(n));
          const r = await db.compareAndSwap(
            "counter",
            raw === undefined ? undefined : String(n),
            String(n + 1),
          );
          if (r.applied) {
            assert.ok(!seen.has(n + 1), `seed ${seed}: value ${n + 1} written twice`);
            seen.add(n + 1);
            done++;
          } else {
            conflicts++;
            assert.notEqual(text(r.current), String(n), `seed ${seed}: refused a match`);
          }
        }
      }),
    );
    assert.equal(text(await db.get("counter")), String(clients * perClient), `seed ${seed}`);
    assert.ok(conflicts > 0, `seed ${seed}: the clients never raced`);
    await db.close();
  });

  test("bad input is refused before anything is queued; a fired signal aborts", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    for (const call of [
      () => db.compareAndSwap("", undefined, "v"),
      () => db.compareAndSwap("k", 5 as unknown as string, "v"),
      () => db.compareAndSwap("k", undefined, {} as unknown as string),
    ]) {
      await assert.rejects(call(), (err) => isKvError(err, "INVALID_ARGUMENT"));
    }
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(db.compareAndSwap("k", undefined, "v", { signal: ac.signal }), (err) =>
      isKvError(err, "ABORTED"),
    );
    assert.equal(await db.get("k"), undefined);
    assert.equal(db.stats().commit.batches, 0);
    await db.close();
    await assert.rejects(db.compareAndSwap("k", undefined, "v"), (err) => isKvError(err, "CLOSED"));
  });

  test("writeDecided: a decision that throws rejects that write alone", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem() });
    const before = db.put("a", "1");
    const bad = db.writeDecided(() => {
      throw new Error("no");
    });
    const after = db.compareAndSwap("a", "1", "2");
    await before;
    await assert.rejects(bad, /no/);
    assert.equal((await after).applied, true);
    assert.equal(await db.writeDecided(() => undefined), false);
    await db.close();
  });
});
