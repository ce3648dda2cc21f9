import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { AutoCompactor, parseAutoCompaction } from "../../src/etcd/auto-compaction.js";

describe("parseAutoCompaction", () => {
  test("reads etcd's forms: durations, bare hours, revisions; 0 is off", () => {
    assert.deepEqual(parseAutoCompaction("periodic", "1h"), {
      mode: "periodic",
      retention: 3_600_000,
    });
    assert.deepEqual(parseAutoCompaction("periodic", "1h30m"), {
      mode: "periodic",
      retention: 5_400_000,
    });
    assert.deepEqual(parseAutoCompaction("periodic", "5s"), { mode: "periodic", retention: 5000 });
    assert.deepEqual(parseAutoCompaction("periodic", "2"), {
      mode: "periodic",
      retention: 7_200_000,
    });
    assert.deepEqual(parseAutoCompaction("periodic", "0.5"), {
      mode: "periodic",
      retention: 1_800_000,
    });
    assert.deepEqual(parseAutoCompaction("revision", "1000"), {
      mode: "revision",
      retention: 1000,
    });
    assert.equal(parseAutoCompaction("periodic", "0"), undefined);
    assert.equal(parseAutoCompaction("revision", "0"), undefined);
  });

  test("refuses other modes and malformed retentions", () => {
    for (const [mode, retention] of [
      ["hourly", "1h"],
      ["periodic", "1x"],
      ["periodic", "h"],
      ["periodic", "1h 30m"],
      ["revision", "1h"],
      ["revision", "-5"],
      ["revision", "1.5"],
    ] as const) {
      assert.throws(
        () => parseAutoCompaction(mode, retention),
        (e) => isKvError(e, "INVALID_ARGUMENT"),
        `${mode} ${retention}`,
      );
    }
  });
});

describe("AutoCompactor", () => {
  test("periodic: compacts to the revision of one retention ago, then every retention", () => {
    const c = new AutoCompactor({ mode: "periodic", retention: 10_000 });
    const compacted: Array<[number, number]> = [];
    // The revision grows by 7 per second.
    for (let t = 0; t <= 30_000; t += 250) {
      const target = c.poll(t, 1 + (t / 1000) * 7, false);
      if (target !== undefined) {
        compacted.push([t, target]);
        c.finished(true, t);
      }
    }
    assert.deepEqual(compacted, [
      [10_000, 1],
      [20_000, 71],
      [30_000, 141],
    ]);
  });

  test("periodic: nothing while paused (not the leader); a failure is retried at the next sample", () => {
    const c = new AutoCompactor({ mode: "periodic", retention: 10_000 });
    for (let t = 0; t <= 20_000; t += 1000) assert.equal(c.poll(t, 100 + t, true), undefined);
    const first = c.poll(21_000, 30_000, false);
    assert.equal(first, 100 + 11_000, "the oldest sample kept: ten seconds ago");
    assert.equal(c.poll(22_000, 30_000, false), undefined, "one at a time");
    c.finished(false, 22_000);
    assert.equal(c.poll(22_000, 30_000, false), 100 + 12_000, "retried with the window moved on");
  });

  test("revision: every 5 minutes to revision - retention, not twice to the same", () => {
    const c = new AutoCompactor({ mode: "revision", retention: 1000 });
    const minute = 60_000;
    assert.equal(c.poll(0, 5000, false), undefined);
    assert.equal(c.poll(4 * minute, 5000, false), undefined, "before the first check");
    assert.equal(c.poll(5 * minute, 5000, false), 4000);
    c.finished(true, 5 * minute);
    assert.equal(c.poll(10 * minute, 5000, false), undefined, "the same revision again");
    assert.equal(c.poll(15 * minute, 800, false), undefined, "not positive");
    assert.equal(c.poll(20 * minute, 9000, true), undefined, "paused");
    assert.equal(c.poll(25 * minute, 9000, false), 8000);
  });
});
