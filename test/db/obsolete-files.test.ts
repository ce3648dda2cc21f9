/**
 * The background sweep of obsolete files (src/db/obsolete-files.ts): one sweep at a time,
 * a sweep asked for while one runs is run once more after it, none is started once the
 * store is closing, and a background sweep's failure is swallowed (its files wait for the
 * next one) while a direct `sweep()` reports it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type LiveSet, ObsoleteFileSweeper } from "../../src/db/obsolete-files.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import type { FileSystem } from "../../src/vfs/file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { waitFor } from "../support/wait-for.js";

/** /db holding the tables 1, 2 and 3. */
async function tables(): Promise<MemoryFileSystem> {
  const mem = new MemoryFileSystem();
  await mem.mkdir("/db");
  for (const n of [1, 2, 3]) await (await mem.createWritable(`/db/00000${n}.sst`)).close();
  return mem;
}

function liveSet(live: ReadonlySet<number>): () => LiveSet {
  return () => ({
    liveTables: live,
    pendingOutputs: new Set(),
    minLogNumber: 0,
    pinnedLogs: new Set(),
    currentLogNumber: 0,
    manifestNumber: 0,
  });
}

function sweeperOf(
  fs: FileSystem,
  live: Set<number>,
  onRemoved: (sweep: number, removed: readonly number[]) => void,
  closing = () => false,
) {
  let sweeps = 0;
  const sweeper = new ObsoleteFileSweeper(
    fs,
    "/db",
    liveSet(live),
    (removed) => onRemoved(++sweeps, removed),
    closing,
  );
  return { sweeper, sweeps: () => sweeps };
}

test("a sweep asked for while one runs runs once more, after it", async () => {
  const mem = await tables();
  const live = new Set([1, 2]);
  const removed: number[][] = [];
  const { sweeper, sweeps } = sweeperOf(mem, live, (sweep, tables) => {
    removed.push([...tables]);
    if (sweep === 1) {
      // Still inside the first sweep: table 2 became obsolete meanwhile.
      live.delete(2);
      sweeper.schedule();
      sweeper.schedule();
    }
  });
  sweeper.schedule();
  await waitFor(() => sweeps() === 2, "the second sweep");
  await sweeper.idle();
  assert.deepEqual(removed, [[3], [2]], "two sweeps, not three");
  assert.deepEqual(await mem.list("/db"), ["000001.sst"]);
});

test("no sweep is started again once the store is closing", async () => {
  const mem = await tables();
  const live = new Set([1, 2]);
  let closing = false;
  const { sweeper, sweeps } = sweeperOf(
    mem,
    live,
    (sweep) => {
      if (sweep === 1) {
        live.delete(2);
        closing = true;
        sweeper.schedule();
      }
    },
    () => closing,
  );
  sweeper.schedule();
  await waitFor(() => sweeps() === 1, "the first sweep");
  await sweeper.idle();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(sweeps(), 1);
  assert.deepEqual(await mem.list("/db"), ["000001.sst", "000002.sst"]);
});

test("a background sweep swallows a failure; sweep() reports it", async () => {
  const mem = await tables();
  const fs = new FaultInjectingFileSystem(mem, { injector: (op) => op.kind === "remove" });
  const { sweeper, sweeps } = sweeperOf(fs, new Set([1]), () => {});
  sweeper.schedule();
  await sweeper.idle();
  assert.equal(sweeps(), 0, "the failed sweep removed nothing it could report");
  await assert.rejects(
    sweeper.sweep(),
    (err: unknown) => (err as { code?: unknown }).code === "EIO",
  );
  assert.deepEqual(await mem.list("/db"), ["000001.sst", "000002.sst", "000003.sst"]);
});
