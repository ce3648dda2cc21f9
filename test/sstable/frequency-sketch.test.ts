import assert from "node:assert/strict";
import { test } from "node:test";
import { FrequencySketch } from "../../src/sstable/frequency-sketch.js";

test("counts requests per block, at least as many as were added, up to 15", () => {
  const sketch = new FrequencySketch(1000);
  for (let b = 0; b < 200; b++) {
    for (let i = 0; i < b % 7; i++) sketch.add(b % 5, b * 4096);
  }
  for (let b = 0; b < 200; b++) {
    const est = sketch.estimate(b % 5, b * 4096);
    assert.ok(est >= b % 7, `block ${b}: ${est} < ${b % 7}`);
  }
  // With 2 × 1000 counters per row and 200 keys, collisions in all 4 rows are rare.
  let exact = 0;
  for (let b = 0; b < 200; b++) if (sketch.estimate(b % 5, b * 4096) === b % 7) exact++;
  assert.ok(exact >= 190, `${exact} exact estimates of 200`);
  for (let i = 0; i < 100; i++) sketch.add(9, 0);
  assert.equal(sketch.estimate(9, 0), 15, "saturates at 15");
  assert.equal(sketch.estimate(9, 2 ** 40), 0, "offsets past 2^32 are told apart");
});

test("halves every count after 10 × capacity additions", () => {
  const sketch = new FrequencySketch(10);
  for (let i = 0; i < 8; i++) sketch.add(1, 0);
  assert.equal(sketch.estimate(1, 0), 8);
  for (let i = 0; i < 91; i++) sketch.add(2, 0);
  assert.equal(sketch.estimate(1, 0), 8, "99 additions: not aged yet");
  sketch.add(3, 0);
  assert.equal(sketch.estimate(1, 0), 4, "the 100th addition ages every counter");
});
