/**
 * Snapshot isolation: iterators and snapshots read the store as it was when they were
 * created, however many writes (overwrites, deletes, new keys, many in flight), memtable
 * switches and flushes happen while they are being consumed. And the bookkeeping: releasing
 * a snapshot or closing an iterator (explicitly, at its end, or by leaving `for await`)
 * drops it from stats().openSnapshots / openIterators.
 *
 * KV_STRESS=1 runs 100k writes instead of 10k. A failure prints the seed; KV_SEED=<seed>
 * replays it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  isKvError,
  type KvIterator,
  type KvStore,
  MemoryFileSystem,
  open,
} from "../../src/index.js";
import { randInt, rng, testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] !== undefined;
const WRITES = STRESS ? 100_000 : 10_000;
const IN_FLIGHT = 64;

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

const keyOf = (i: number) => `key-${String(i).padStart(6, "0")}`;

type Model = Map<string, string>;

function sorted(model: Model, reverse = false): Array<[string, string]> {
  const out = [...model].sort((a, b) => Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0])));
  return reverse ? out.reverse() : out;
}

/** An iterator consumed a little at a time, checked entry by entry against `expected`. */
class SlowReader {
  pos = 0;

  constructor(
    readonly name: string,
    readonly it: KvIterator,
    readonly expected: Array<[string, string]>,
    readonly keysOnly = false,
  ) {}

  get done(): boolean {
    return this.pos > this.expected.length;
  }

  /** Reads up to n entries (and the end, once reached). */
  async advance(n: number, where: string): Promise<void> {
    for (let i = 0; i < n && !this.done; i++) {
      const next = await this.it.next();
      const want = this.expected[this.pos];
      if (want === undefined) {
        assert.equal(next.done, true, `${this.name} (${where}): expected the end at ${this.pos}`);
      } else {
        assert.equal(
          next.done,
          false,
          `${this.name} (${where}): ended at ${this.pos} of ${this.expected.length}`,
        );
        const [k, v] = next.value!;
        const got = `${text(k)}=${this.keysOnly ? "" : text(v)}`;
        const exp = `${want[0]}=${this.keysOnly ? "" : want[1]}`;
        if (got !== exp) {
          assert.fail(`${this.name} (${where}): entry ${this.pos}: expected ${exp}, got ${got}`);
        }
      }
      this.pos++;
    }
  }
}

async function populate(db: KvStore, model: Model, r: () => number): Promise<void> {
  // Part of the data in tables (with overwrites and deletes across them), part in the
  // memtable.
  for (let i = 0; i < 2000; i++) {
    const v = `initial-${i}-${"i".repeat(randInt(r, 60))}`;
    model.set(keyOf(i), v);
    await db.put(keyOf(i), v);
  }
  await db.flush();
  for (let i = 0; i < 1000; i++) {
    const k = keyOf(randInt(r, 3000));
    if (r() < 0.2) {
      model.delete(k);
      await db.delete(k);
    } else {
      const v = `second-${i}-${"s".repeat(randInt(r, 60))}`;
      model.set(k, v);
      await db.put(k, v);
    }
  }
  await db.flush();
  for (let i = 0; i < 300; i++) {
    const k = keyOf(randInt(r, 3200));
    const v = `in-memtable-${i}`;
    model.set(k, v);
    await db.put(k, v);
  }
  await db.delete(keyOf(7));
  model.delete(keyOf(7));
}

describe("snapshot isolation", () => {
  test("iterators and a snapshot opened before 10k concurrent writes and several flushes read exactly the earlier data", async (t) => {
    const seed = testSeed();
    const r = rng(seed);
    try {
      const db = await open("/db", { fs: new MemoryFileSystem(), writeBufferSize: 256 * 1024 });
      const before: Model = new Map();
      await populate(db, before, r);
      assert.ok(db.stats().memtableEntries > 0, "some data is still in the memtable");
      assert.ok(db.stats().levelFiles.reduce((a, b) => a + b, 0) >= 2, "some data is in tables");

      const flushesBefore = db.stats().flushes;
      const snap = db.snapshot();
      const readers = [
        new SlowReader("forward iterator", db.iterator(), sorted(before)),
        new SlowReader("reverse iterator", db.iterator({ reverse: true }), sorted(before, true)),
        new SlowReader(
          "bounded iterator at the snapshot",
          db.iterator({ snapshot: snap, gte: keyOf(500), lt: keyOf(2500) }),
          sorted(before).filter(([k]) => k >= keyOf(500) && k < keyOf(2500)),
        ),
        new SlowReader(
          "keysOnly reverse iterator at the snapshot",
          db.iterator({ snapshot: snap, reverse: true, keysOnly: true, gt: keyOf(100) }),
          sorted(before, true).filter(([k]) => k > keyOf(100)),
          true,
        ),
      ];
      // Not touched until every write is done: it must not even have opened its tables.
      const untouched = new SlowReader(
        "iterator first read after the writes",
        db.iterator(),
        sorted(before),
      );
      assert.equal(db.stats().openIterators, 5);
      assert.equal(db.stats().openSnapshots, 1);

      // 10k writes, up to 64 in flight, while the readers advance a few entries at a time.
      const after: Model = new Map(before);
      const existing = [...before.keys()];
      let nextNew = 10_000;
      const inFlight = new Set<Promise<void>>();
      const explicitFlushes: Promise<void>[] = [];
      for (let i = 0; i < WRITES; i++) {
        const p = r();
        let write: Promise<void>;
        if (p < 0.45) {
          const k = existing[randInt(r, existing.length)]!;
          const v = `overwrite-${i}`;
          after.set(k, v);
          write = db.put(k, v, { sync: r() < 0.5 });
        } else if (p < 0.65) {
          const k = existing[randInt(r, existing.length)]!;
          after.delete(k);
          write = db.delete(k);
        } else if (p < 0.9) {
          const k = keyOf(nextNew++);
          const v = `new-${i}`;
          after.set(k, v);
          write = db.put(k, v, { sync: false });
        } else {
          const b = db.batch();
          for (let j = 0; j < 5; j++) {
            const k = r() < 0.5 ? existing[randInt(r, existing.length)]! : keyOf(nextNew++);
            if (r() < 0.3) {
              b.delete(k);
              after.delete(k);
            } else {
              b.put(k, `batch-${i}-${j}`);
              after.set(k, `batch-${i}-${j}`);
            }
          }
          write = db.write(b);
        }
        const tracked: Promise<void> = write.finally(() => inFlight.delete(tracked));
        inFlight.add(tracked);
        if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
        if (i === Math.floor(WRITES / 3) || i === Math.floor((2 * WRITES) / 3)) {
          explicitFlushes.push(db.flush());
        }
        if (i % 40 === 0) {
          const reader = readers[randInt(r, readers.length)]!;
          await reader.advance(1 + randInt(r, 12), `after write ${i}`);
        }
      }
      await Promise.all(inFlight);
      await Promise.all(explicitFlushes);
      const flushes = db.stats().flushes - flushesBefore;
      assert.ok(flushes >= 2, `only ${flushes} flushes happened during the writes`);
      t.diagnostic(
        `seed ${seed}: ${WRITES} writes, ${flushes} flushes, ${db.stats().commit.maxGroupSize} batches in the largest group`,
      );

      for (const reader of [...readers, untouched]) {
        await reader.advance(Number.POSITIVE_INFINITY, "after the writes");
        assert.equal(reader.it.isClosed, true, `${reader.name} is closed at its end`);
      }
      assert.equal(db.stats().openIterators, 0, "iterators read to their end are closed");

      // The snapshot still reads the old state, by get and by a new iterator.
      for (let i = 0; i < nextNew; i++) {
        if (i >= 3200 && i < 10_000) continue;
        const k = keyOf(i);
        assert.equal(
          text(await db.get(k, { snapshot: snap })),
          before.get(k),
          `get ${k} at the snapshot`,
        );
      }
      const atSnapshot = await db.iterator({ snapshot: snap }).all();
      assert.deepEqual(
        atSnapshot.map(([k, v]) => [text(k), text(v)]),
        sorted(before),
        "a new iterator at the old snapshot",
      );
      // And the store itself has every write.
      const now = await db.iterator().all();
      assert.deepEqual(
        now.map(([k, v]) => [text(k), text(v)]),
        sorted(after),
        "the current state",
      );

      snap.release();
      assert.equal(db.stats().openSnapshots, 0);
      await db.close();
    } catch (err) {
      throw new Error(
        `seed ${seed} (replay with KV_SEED=${seed}): ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  });

  test("get with a snapshot returns the values as of the snapshot after later writes and flushes", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem(), writeBufferSize: 4096 });
    await db.put("a", "a1");
    await db.put("b", "b1");
    await db.flush();
    await db.put("c", "c1"); // in the memtable when the snapshot is taken
    const snap = db.snapshot();
    await db.put("a", "a2");
    await db.delete("b");
    await db.delete("c");
    await db.put("d", "d1");
    await db.flush();
    for (let i = 0; i < 200; i++) await db.put(`filler${i}`, "x".repeat(50)); // flushes on its own
    await db.put("a", "a3");
    await db.flush();
    assert.ok(db.stats().flushes >= 4, `flushes: ${db.stats().flushes}`);
    assert.equal(text(await db.get("a", { snapshot: snap })), "a1");
    assert.equal(text(await db.get("b", { snapshot: snap })), "b1");
    assert.equal(text(await db.get("c", { snapshot: snap })), "c1");
    assert.equal(await db.get("d", { snapshot: snap }), undefined);
    assert.equal(await db.get("filler3", { snapshot: snap }), undefined);
    assert.equal(text(await db.get("a")), "a3");
    assert.equal(await db.get("b"), undefined);
    assert.equal(await db.get("c"), undefined);
    assert.equal(text(await db.get("d")), "d1");
    assert.deepEqual(
      (await db.scan(undefined, undefined, 0, { snapshot: snap })).map(([k, v]) => `${k}=${v}`),
      ["a=a1", "b=b1", "c=c1"],
    );
    snap.release();
    await db.close();
  });

  test("releasing snapshots and closing iterators brings openSnapshots and openIterators back down", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem(), writeBufferSize: 4096 });
    for (let i = 0; i < 50; i++) await db.put(`k${i}`, `v${i}`);
    await db.flush();
    const s1 = db.snapshot();
    const s2 = db.snapshot();
    assert.equal(db.stats().openSnapshots, 2);
    const it1 = db.iterator();
    const it2 = db.iterator({ snapshot: s1 });
    const it3 = db.iterator({ reverse: true });
    assert.equal(db.stats().openIterators, 3);

    s1.release();
    assert.equal(db.stats().openSnapshots, 1);
    s1.release(); // idempotent
    assert.equal(db.stats().openSnapshots, 1);
    assert.equal(s1.released, true);
    // A released snapshot can no longer start reads...
    await assert.rejects(db.get("k1", { snapshot: s1 }), (e) => isKvError(e, "INVALID_ARGUMENT"));
    assert.throws(
      () => db.iterator({ snapshot: s1 }),
      (e) => isKvError(e, "INVALID_ARGUMENT"),
    );
    // ...but an iterator created from it before the release keeps its own view.
    await db.put("k1", "changed");
    await db.flush();
    const first = await it2.next();
    assert.equal(first.done, false);
    assert.equal(text(first.value![0]), "k0");

    await it1.next(); // started
    it1.close();
    assert.equal(db.stats().openIterators, 2);
    it1.close(); // idempotent
    assert.equal(db.stats().openIterators, 2);
    assert.equal((await it1.next()).done, true, "a closed iterator yields nothing");
    it2.close();
    it3.close(); // never started
    assert.equal(db.stats().openIterators, 0);
    assert.equal((await it3.next()).done, true);

    // Reading to the end closes an iterator by itself.
    const it4 = db.iterator({ gte: "k4" });
    assert.equal(db.stats().openIterators, 1);
    await it4.all();
    assert.equal(db.stats().openIterators, 0);
    assert.equal(it4.isClosed, true);

    s2.release();
    assert.equal(db.stats().openSnapshots, 0);
    await db.close();
  });

  test("leaving for await early with break (or a throw) closes the iterator", async () => {
    const db = await open("/db", { fs: new MemoryFileSystem(), writeBufferSize: 4096 });
    for (let i = 0; i < 100; i++) await db.put(`k${String(i).padStart(3, "0")}`, `v${i}`);
    await db.flush();
    for (let i = 100; i < 120; i++) await db.put(`k${i}`, `v${i}`);

    const it = db.iterator();
    let seen = 0;
    for await (const [k] of it) {
      assert.ok(k.length > 0);
      if (++seen === 10) break;
    }
    assert.equal(seen, 10);
    assert.equal(it.isClosed, true, "break closed the iterator");
    assert.equal(db.stats().openIterators, 0);
    assert.equal((await it.next()).done, true);

    const it2 = db.iterator({ reverse: true });
    await assert.rejects(async () => {
      for await (const _entry of it2) throw new Error("stop");
    }, /stop/);
    assert.equal(it2.isClosed, true, "a throw out of for await closed the iterator");
    assert.equal(db.stats().openIterators, 0);
    await db.close();
  });
});
