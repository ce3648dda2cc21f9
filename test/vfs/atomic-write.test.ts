import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { writeFileAtomically } from "../../src/vfs/atomic-write.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A directory `d` holding `d/meta` = "old", all of it durable. */
async function setup(): Promise<MemoryFileSystem> {
  const mem = new MemoryFileSystem();
  await mem.mkdir("d");
  await mem.syncDir(".");
  const f = await mem.createWritable("d/meta");
  f.append(enc.encode("old"));
  await f.sync();
  await f.close();
  await mem.syncDir("d");
  return mem;
}

function contentOf(fs: MemoryFileSystem, path: string): string | undefined {
  try {
    return dec.decode(fs.readFile(path));
  } catch {
    return undefined;
  }
}

/** The number of file operations one atomic write performs. */
async function opsOfOneWrite(): Promise<number> {
  const fs = new FaultInjectingFileSystem(await setup());
  const before = Object.values(fs.counts).reduce((a, b) => a + b, 0);
  await writeFileAtomically(fs, "d/meta", enc.encode("new"));
  return Object.values(fs.counts).reduce((a, b) => a + b, 0) - before;
}

describe("writeFileAtomically", () => {
  test("replaces the file, durably: a crash right after keeps the new content", async () => {
    const mem = await setup();
    await writeFileAtomically(mem, "d/meta", enc.encode("new"));
    assert.equal(contentOf(mem, "d/meta"), "new");
    const crashed = mem.crashClone({ unsyncedRetention: 0 });
    assert.equal(contentOf(crashed, "d/meta"), "new");
    assert.deepEqual(await crashed.list("d"), ["meta"]);
  });

  test("creates a file that did not exist", async () => {
    const mem = await setup();
    await writeFileAtomically(mem, "d/other", enc.encode("x"), { tempPath: "d/other.part" });
    assert.equal(contentOf(mem.crashClone({ unsyncedRetention: 0 }), "d/other"), "x");
  });

  test("a failure at any step throws IO_ERROR and leaves the old content in place", async () => {
    const steps = await opsOfOneWrite();
    assert.ok(steps >= 5, `expected create, append, sync, close, rename, syncDir; got ${steps}`);
    for (let n = 0; n < steps; n++) {
      const mem = await setup();
      const fs = new FaultInjectingFileSystem(mem, {
        injector: FaultInjectingFileSystem.failNth(n),
        dropUnsyncedOnSyncFailure: true,
      });
      const err = await writeFileAtomically(fs, "d/meta", enc.encode("new")).then(
        () => undefined,
        (e: unknown) => e,
      );
      // The last step (the directory sync) fails after the rename: the new name is in place
      // but not known durable, and the caller is told so.
      assert.ok(isKvError(err, "IO_ERROR"), `step ${n}: ${String(err)}`);
      const now = contentOf(mem, "d/meta");
      const afterCrash = contentOf(mem.crashClone({ unsyncedRetention: 0 }), "d/meta");
      assert.ok(now === "old" || now === "new", `step ${n}: live content ${now}`);
      assert.equal(afterCrash, "old", `step ${n}: after a crash`);
    }
  });

  test("a crash after any step leaves either the old or the new content, whole", async () => {
    const steps = await opsOfOneWrite();
    for (let n = 0; n <= steps; n++) {
      for (const unsyncedRetention of [0, 0.5, 1]) {
        const mem = await setup();
        let snapshot: MemoryFileSystem | undefined;
        let seen = 0;
        const fs = new FaultInjectingFileSystem(mem, {
          onOp: () => {
            if (seen++ === n) snapshot = mem.crashClone({ unsyncedRetention, seed: n });
          },
        });
        await writeFileAtomically(fs, "d/meta", enc.encode("new"));
        const crashed = snapshot ?? mem.crashClone({ unsyncedRetention, seed: n });
        const content = contentOf(crashed, "d/meta");
        assert.ok(content === "old" || content === "new", `crash before op ${n}: ${content}`);
      }
    }
  });

  test("refuses a temp file outside the target's directory, touching nothing", async () => {
    const mem = await setup();
    await assert.rejects(
      writeFileAtomically(mem, "d/meta", enc.encode("new"), { tempPath: "elsewhere.tmp" }),
      /not in the directory/,
    );
    assert.equal(contentOf(mem, "d/meta"), "old");
    assert.deepEqual(await mem.list("d"), ["meta"]);
  });
});
