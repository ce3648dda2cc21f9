/**
 * The manifest writer (src/version/manifest-writer.ts), the one route to a new manifest:
 * once it resolves, a crash keeps the new manifest current; a crash or a failure at any
 * step before leaves CURRENT naming a complete manifest (the old one or the new one), never
 * a missing or partial one.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { readCurrent } from "../../src/version/current-file.js";
import { readManifestOfCurrent } from "../../src/version/manifest-replay.js";
import { installManifest, snapshotEdit, writeManifest } from "../../src/version/manifest-writer.js";
import { VersionSet } from "../../src/version/version-set.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { DIR, memoryDir, meta } from "./helpers.js";

/** The number of the manifest each test writes (the store's own is MANIFEST-000001). */
const NEW = 9;

/** /db holding a new store (MANIFEST-000001 and CURRENT), all of it durable. */
async function store(): Promise<MemoryFileSystem> {
  const mem = await memoryDir();
  const vs = await VersionSet.create(mem, DIR);
  await vs.close();
  return mem;
}

/** The snapshot each test writes: two tables and the counters. */
function snapshot() {
  return snapshotEdit(
    [
      { level: 1, file: meta(4, "a", "f") },
      { level: 1, file: meta(5, "g", "m") },
    ],
    { logNumber: 6, nextFileNumber: NEW + 1, lastSequence: 77 },
  );
}

/** The number of file operations one writeManifest performs. */
async function opsOfOneWrite(): Promise<number> {
  const fs = new FaultInjectingFileSystem(await store());
  const before = Object.values(fs.counts).reduce((a, b) => a + b, 0);
  await installManifest(fs, DIR, NEW, snapshot());
  return Object.values(fs.counts).reduce((a, b) => a + b, 0) - before;
}

/** CURRENT's manifest in `mem` replays, and is either the old one or the one written. */
async function assertWholeManifest(mem: MemoryFileSystem, what: string): Promise<number> {
  const state = await readManifestOfCurrent(mem, DIR);
  const number = await readCurrent(mem, DIR);
  if (number === 1) {
    assert.equal(state.version.allFiles().length, 0, what);
    assert.equal(state.lastSequence, 0, what);
  } else {
    assert.equal(number, NEW, what);
    assert.deepEqual(
      state.version.levels[1]!.map((f) => f.number),
      [4, 5],
      what,
    );
    assert.deepEqual(
      [state.logNumber, state.nextFileNumber, state.lastSequence],
      [6, NEW + 1, 77],
      what,
    );
  }
  return number;
}

describe("writeManifest", () => {
  test("returns the writer open for edits; CURRENT names the manifest durably", async () => {
    const mem = await store();
    const writer = await writeManifest(mem, DIR, NEW, snapshot());
    assert.ok(writer.size > 0);
    await writer.close();
    const crashed = mem.crashClone({ unsyncedRetention: 0 });
    assert.equal(await assertWholeManifest(crashed, "after a crash"), NEW);
  });

  test("takes the steps of docs/format/manifest.md in order", async () => {
    const fs = new FaultInjectingFileSystem(await store(), { keepLog: true });
    await installManifest(fs, DIR, NEW, snapshot());
    assert.deepEqual(
      fs.log.map((op) => [op.kind, op.path, ...(op.to === undefined ? [] : [op.to])].join(" ")),
      [
        "createWritable /db/MANIFEST-000009",
        "append /db/MANIFEST-000009",
        "datasync /db/MANIFEST-000009",
        // The manifest's name is durable before anything names it.
        "syncDir /db",
        "createWritable /db/000009.dbtmp",
        "append /db/000009.dbtmp",
        "sync /db/000009.dbtmp",
        "close /db/000009.dbtmp",
        "rename /db/000009.dbtmp /db/CURRENT",
        "syncDir /db",
        "close /db/MANIFEST-000009",
      ],
    );
  });

  test("a crash before any step leaves CURRENT naming a complete manifest", async () => {
    assert.ok((await opsOfOneWrite()) >= 8, "manifest create, append, sync, dir sync, CURRENT");
    for (const unsyncedRetention of [0, 0.5, 1]) {
      // One run, cloned as a crash would leave it before each operation and after the last.
      const mem = await store();
      const crashes: MemoryFileSystem[] = [];
      const fs = new FaultInjectingFileSystem(mem, {
        onOp: (_op, index) => crashes.push(mem.crashClone({ unsyncedRetention, seed: index })),
      });
      await installManifest(fs, DIR, NEW, snapshot());
      crashes.push(mem.crashClone({ unsyncedRetention, seed: crashes.length }));
      for (const [n, crashed] of crashes.entries()) {
        await assertWholeManifest(crashed, `crash before op ${n}, retention ${unsyncedRetention}`);
      }
    }
  });

  test("a failure at any step throws IO_ERROR; after a crash the old manifest is current", async () => {
    const steps = await opsOfOneWrite();
    for (let n = 0; n < steps; n++) {
      const mem = await store();
      const fs = new FaultInjectingFileSystem(mem, {
        injector: FaultInjectingFileSystem.failNth(n),
        dropUnsyncedOnSyncFailure: true,
      });
      const err = await installManifest(fs, DIR, NEW, snapshot()).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (err === undefined) {
        // Only the writer's close may fail unnoticed: everything was durable before it.
        assert.equal(n, steps - 1, `step ${n} failed silently`);
        continue;
      }
      assert.ok(isKvError(err, "IO_ERROR"), `step ${n}: ${String(err)}`);
      assert.ok(err.file !== undefined, `step ${n}: the error names a file`);
      const crashed = mem.crashClone({ unsyncedRetention: 0 });
      assert.equal(await assertWholeManifest(crashed, `step ${n}`), 1, `step ${n}`);
    }
  });
});
