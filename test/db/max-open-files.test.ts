/**
 * More table files than `maxOpenFiles`: the table cache evicts readers, and reads must
 * still work (opening tables again as needed), however many level-0 tables a read must
 * consult. Found by the model test with maxOpenFiles: 10.
 *
 * The get case runs in a child process with a time and memory limit: when it fails it
 * spins in microtasks without ever yielding to the event loop, so no timer in this process
 * could stop it.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import { open } from "../../src/index.js";
import { tempDir } from "../support/temp-dir.js";

const INDEX_URL = new URL("../../src/index.js", import.meta.url).href;

const text = (v: Uint8Array | undefined) =>
  v === undefined ? undefined : Buffer.from(v).toString("utf8");

describe("more table files than maxOpenFiles", () => {
  test("a get that must look through more level-0 tables than maxOpenFiles answers", () => {
    // 12 tables all spanning "a".."z", so a get of "b" must consult all 12, with room for
    // 10 open readers. Compaction is held off (high level-0 triggers) to keep 12 tables.
    const script = `
      import { MemoryFileSystem, open } from ${JSON.stringify(INDEX_URL)};
      const fs = new MemoryFileSystem();
      let db = await open("/db", { fs, maxOpenFiles: 10, l0CompactionTrigger: 100, l0SlowdownTrigger: 100, l0StopTrigger: 100 });
      for (let i = 0; i < 12; i++) {
        await db.put("a", "a" + i);
        await db.put("z", "z" + i);
        await db.flush();
      }
      await db.close();
      db = await open("/db", { fs, maxOpenFiles: 10, l0CompactionTrigger: 100, l0SlowdownTrigger: 100, l0StopTrigger: 100 });
      const b = await db.get("b");
      const a = await db.get("a");
      console.log(JSON.stringify({ files: db.stats().levelFiles[0], b: b === undefined ? null : String(b), a: String(a) }));
      await db.close();
    `;
    const child = spawnSync(
      process.execPath,
      ["--max-old-space-size=192", "--input-type=module", "-e", script],
      { encoding: "utf8", timeout: 15_000, killSignal: "SIGKILL" },
    );
    const why =
      child.signal !== null
        ? `the child was killed by ${child.signal} (out of memory or out of time: a get that never returns)`
        : `the child exited with ${child.status}: ${child.stderr.split("\n").slice(0, 6).join("\n")}`;
    assert.equal(child.status, 0, why);
    assert.deepEqual(JSON.parse(child.stdout.trim()), { files: 12, b: null, a: "a11" });
  });

  test("an iterator over more tables than maxOpenFiles yields every entry (real file system)", async (t) => {
    const dir = tempDir();
    t.after(dir.remove);
    let db = await open(dir.path, {
      maxOpenFiles: 10,
      l0CompactionTrigger: 100,
      l0SlowdownTrigger: 100,
      l0StopTrigger: 100,
    });
    for (let i = 0; i < 12; i++) {
      await db.put(`k${String(i).padStart(2, "0")}`, `v${i}`);
      await db.flush();
    }
    assert.equal(db.stats().levelFiles[0], 12);
    await db.close();
    db = await open(dir.path, {
      maxOpenFiles: 10,
      l0CompactionTrigger: 100,
      l0SlowdownTrigger: 100,
      l0StopTrigger: 100,
    });
    try {
      const all = await db.iterator().all();
      assert.deepEqual(
        all.map(([k, v]) => `${text(k)}=${text(v)}`),
        Array.from({ length: 12 }, (_, i) => `k${String(i).padStart(2, "0")}=v${i}`),
      );
      const reverse = await db.iterator({ reverse: true }).all();
      assert.equal(reverse.length, 12);
    } finally {
      await db.close();
    }
  });
});
