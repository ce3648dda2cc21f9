/**
 * compactionNice: the flush and compaction thread runs at that nice value (Linux), the
 * event loop's thread keeps the process's; bad values are refused.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { isKvError, open } from "../../src/index.js";
import { tempDir } from "../support/temp-dir.js";

/** The nice value of each thread of this process (field 19 of /proc/self/task/N/stat). */
function threadNices(): number[] {
  return readdirSync("/proc/self/task").flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      // Fields after the command (which may hold spaces) start at "state".
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return [Number(rest[16])];
    } catch {
      return []; // the thread ended meanwhile
    }
  });
}

describe("compactionNice", { skip: process.platform !== "linux" }, () => {
  test("the worker thread runs at the nice value; the event loop keeps its own", async (t) => {
    const dir = tempDir("kv-nice-");
    t.after(() => dir.remove());
    const own = threadNices()[0];
    assert.notEqual(own, 7, "the test needs a process nice value other than 7");
    const db = await open(dir.path, { compactionNice: 7, writeBufferSize: 64 * 1024 });
    try {
      for (let i = 0; i < 2000; i++) await db.put(`k${i}`, "v".repeat(100));
      await db.flush(); // on the worker thread
      const nices = threadNices();
      assert.ok(nices.includes(7), `a thread at nice 7 among ${nices.join(",")}`);
      assert.equal(nices[0], own, "the main thread is unchanged");
    } finally {
      await db.close();
    }
  });

  test("refuses values outside 0-19", async (t) => {
    const dir = tempDir("kv-nice-");
    t.after(() => dir.remove());
    for (const bad of [-1, 20, 1.5]) {
      await assert.rejects(
        open(dir.path, { compactionNice: bad }),
        (err: unknown) => isKvError(err, "INVALID_ARGUMENT"),
        String(bad),
      );
    }
  });
});
