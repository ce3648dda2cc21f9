import assert from "node:assert/strict";
import { test } from "node:test";
import { LruCache } from "../../src/util/lru-cache.js";
import { rng } from "../support/random.js";

function cache(capacity: number, evicted: string[] = []): LruCache<string, number> {
  return new LruCache<string, number>(
    capacity,
    (v) => v,
    (k, v) => evicted.push(`${k}=${v}`),
  );
}

test("get returns what set stored and counts hits and misses", () => {
  const c = cache(100);
  c.set("a", 1);
  c.set("b", 2);
  assert.equal(c.get("a"), 1);
  assert.equal(c.get("b"), 2);
  assert.equal(c.get("c"), undefined);
  assert.equal(c.hits, 2);
  assert.equal(c.misses, 1);
  assert.equal(c.count, 2);
  assert.equal(c.size, 3);
});

test("the least recently used entries are evicted when the charge exceeds the capacity", () => {
  const evicted: string[] = [];
  const c = cache(10, evicted);
  c.set("a", 3);
  c.set("b", 3);
  c.set("c", 3);
  c.get("a"); // a is now the most recent; b is the least
  c.set("d", 3);
  assert.deepEqual(evicted, ["b=3"]);
  assert.deepEqual([...c.keys()], ["d", "a", "c"]);
  c.set("e", 7);
  assert.deepEqual(evicted, ["b=3", "c=3", "a=3"]);
  assert.equal(c.size, 10);
  assert.ok(c.size <= c.capacity);
});

test("replacing a key hands the old value to onEvict and recharges", () => {
  const evicted: string[] = [];
  const c = cache(10, evicted);
  c.set("a", 4);
  c.set("a", 6);
  assert.deepEqual(evicted, ["a=4"]);
  assert.equal(c.size, 6);
  assert.equal(c.count, 1);
});

test("a value bigger than the capacity is not stored, and goes to onEvict at once", () => {
  const evicted: string[] = [];
  const c = cache(5, evicted);
  c.set("a", 2);
  c.set("huge", 6);
  assert.deepEqual(evicted, ["huge=6"]);
  assert.equal(c.get("huge"), undefined);
  assert.equal(c.get("a"), 2);
});

test("capacity 0 keeps only entries charged 0", () => {
  const c = cache(0);
  c.set("a", 0);
  assert.equal(c.count, 1, "a zero charge fits");
  c.set("b", 1);
  assert.equal(c.peek("b"), undefined);
});

test("delete and clear remove entries through onEvict", () => {
  const evicted: string[] = [];
  const c = cache(100, evicted);
  c.set("a", 1);
  c.set("b", 2);
  c.set("c", 3);
  assert.equal(c.delete("b"), true);
  assert.equal(c.delete("b"), false);
  assert.deepEqual(evicted, ["b=2"]);
  c.clear();
  assert.deepEqual(evicted, ["b=2", "a=1", "c=3"]);
  assert.equal(c.count, 0);
  assert.equal(c.size, 0);
});

test("peek and has change neither recency nor statistics", () => {
  const evicted: string[] = [];
  const c = cache(2, evicted);
  c.set("a", 1);
  c.set("b", 1);
  assert.equal(c.peek("a"), 1);
  assert.equal(c.has("a"), true);
  c.set("c", 1);
  assert.deepEqual(evicted, ["a=1"]);
  assert.equal(c.hits + c.misses, 0);
});

test("a long random run keeps the bound and the recency order of a simple model", () => {
  const c = new LruCache<number, number>(50, (v) => v % 7);
  const model: Array<[number, number]> = []; // most recent first
  const rand = rng(1);
  for (let i = 0; i < 20_000; i++) {
    const k = Math.floor(rand() * 40);
    if (rand() < 0.5) {
      const v = Math.floor(rand() * 100);
      const j = model.findIndex(([mk]) => mk === k);
      if (j >= 0) model.splice(j, 1);
      model.unshift([k, v]);
      let total = model.reduce((s, [, mv]) => s + (mv % 7), 0);
      while (total > 50) {
        const [, mv] = model.pop()!;
        total -= mv % 7;
      }
      c.set(k, v);
    } else {
      const j = model.findIndex(([mk]) => mk === k);
      const want = j >= 0 ? model[j]![1] : undefined;
      if (j >= 0) model.unshift(...model.splice(j, 1));
      assert.equal(c.get(k), want);
    }
    assert.ok(c.size <= 50);
  }
  assert.deepEqual(
    [...c.keys()],
    model.map(([k]) => k),
  );
});

test("touch through a handle is a hit without a lookup, until the entry leaves", () => {
  const evicted: string[] = [];
  const c = cache(2, evicted);
  const a = c.set("a", 1)!;
  c.set("b", 1);
  assert.equal(a.value, 1);
  assert.equal(c.touch(a), true); // a is now the most recent: b goes first
  assert.equal(c.hits, 1);
  c.set("c", 1);
  assert.deepEqual(evicted, ["b=1"]);
  assert.equal(a.cached, true);
  c.delete("a");
  assert.equal(a.cached, false);
  assert.equal(c.touch(a), false);
  assert.equal(c.hits, 1);
  assert.equal(c.set("big", 5), undefined);
  const other = cache(10);
  const h = other.set("a", 1)!;
  assert.equal(c.touch(h), false, "a handle from another cache");
});

test("rejects a bad capacity or charge", () => {
  assert.throws(() => new LruCache<string, number>(-1, () => 1), RangeError);
  const c = new LruCache<string, number>(10, () => Number.NaN);
  assert.throws(() => c.set("a", 1), RangeError);
});
