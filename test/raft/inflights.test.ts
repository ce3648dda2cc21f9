import assert from "node:assert/strict";
import { test } from "node:test";
import { Inflights } from "../../src/raft/inflights.js";
import { randInt, rng, testSeed } from "../support/random.js";

test("the window is full at the count limit or the byte budget", () => {
  const w = new Inflights(3, 100);
  w.add(1, 10);
  w.add(2, 10);
  assert.equal(w.full(), false);
  w.add(3, 10);
  assert.equal(w.full(), true, "count");
  assert.throws(() => w.add(4, 1), /full/);
  const b = new Inflights(10, 100);
  b.add(1, 60);
  assert.equal(b.full(), false);
  b.add(2, 60);
  assert.equal(
    b.full(),
    true,
    "bytes: a message that crosses the budget is sent, then the window is full",
  );
});

test("freeLE frees every message up to an index, from the front, across the ring's wrap", () => {
  const w = new Inflights(4, 1000);
  for (let i = 1; i <= 4; i++) w.add(i * 10, 1);
  w.freeLE(25);
  assert.equal(w.count, 2);
  assert.equal(w.bytes, 2);
  w.add(50, 1);
  w.add(60, 1); // wraps
  assert.equal(w.full(), true);
  w.freeLE(9);
  assert.equal(w.count, 4, "nothing at or below 9");
  w.freeLE(50);
  assert.equal(w.count, 1);
  w.freeLE(1000);
  assert.equal(w.count, 0);
  assert.equal(w.bytes, 0);
});

test("a random sequence of adds and frees matches a plain model", () => {
  const seed = testSeed();
  const r = rng(seed);
  const w = new Inflights(8, 50);
  const model: [number, number][] = [];
  let index = 0;
  for (let i = 0; i < 5000; i++) {
    if (r() < 0.6) {
      const full = model.length === 8 || model.reduce((s, [, b]) => s + b, 0) >= 50;
      assert.equal(w.full(), full, `seed ${seed}`);
      if (!full) {
        index += 1 + randInt(r, 3);
        const bytes = randInt(r, 20);
        w.add(index, bytes);
        model.push([index, bytes]);
      }
    } else {
      const upTo = index - randInt(r, 10);
      w.freeLE(upTo);
      while (model.length > 0 && model[0]![0] <= upTo) model.shift();
    }
    assert.equal(w.count, model.length, `seed ${seed}`);
    assert.equal(
      w.bytes,
      model.reduce((s, [, b]) => s + b, 0),
      `seed ${seed}`,
    );
  }
});
