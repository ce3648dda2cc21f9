/**
 * Power loss during the MVCC store's background work, on the in-memory file system
 * (test/support/crash-run.ts): the file system is crash-cloned before a sample of the file
 * operations of (1) a physical compaction and (2) an upgrade of a pre-MVCC store, keeping
 * half of the unsynced changes. Every clone must open, and then:
 * (1) MvccStore.open resumes the compaction if its scheduling batch survived; once done,
 *     the stored history and changes entries are the model's after the compaction (or
 *     exactly those before it, if the scheduling batch was lost), and reads agree with
 *     the model;
 * (2) a second upgrade run leaves exactly the store an uninterrupted run leaves.
 * KV_STRESS=1 crashes at every operation. A failure prints the seed (KV_SEED replays).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type KvStore, type OpenOptions, open } from "../../src/index.js";
import { keyOfHistory, revisionOfChange, revisionOfHistory } from "../../src/mvcc/layout.js";
import { upgradeLegacyKeys } from "../../src/mvcc/legacy-upgrade.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { describeOp } from "../support/crash-points.js";
import { CrashRun } from "../support/crash-run.js";
import { rng, testSeed } from "../support/random.js";
import { dump, legacyStore } from "./legacy-fixture.js";
import { Harness } from "./mvcc-harness.js";

const STRESS = process.env["KV_STRESS"] === "1";
/** Share of the non-structural operations crashed at (all with KV_STRESS=1). */
const SHARE = STRESS ? 1 : 0.15;
const STORE: OpenOptions = { writeBufferSize: 2048, blockSize: 256, compactionMode: "inline" };

function crashRun(seed: number, armed: () => boolean): CrashRun {
  const pick = rng(seed ^ 0x5bd1e995);
  return new CrashRun({
    seed,
    retention: 0.5,
    crashAt: (_i, op) =>
      armed() && (op.kind === "rename" || op.kind === "createWritable" || pick() < SHARE),
  });
}

/**
 * Opens each crash clone of `run` (failing if one does not open), runs `check` on it,
 * and closes it; a failure names the crash point.
 */
async function forEachCrash(
  run: CrashRun,
  seed: number,
  check: (db: KvStore, where: string) => Promise<void>,
): Promise<void> {
  assert.ok(run.crashes.length > 5, `only ${run.crashes.length} crash points`);
  console.log(`# ${run.crashes.length} crash points`);
  for (const crash of run.crashes) {
    const where = `seed ${seed}, crash before op ${crash.index} (${describeOp(crash.op)})`;
    const db = await open("/db", { ...STORE, fs: crash.clone }).catch((err: unknown) =>
      assert.fail(`${where}: the store does not open: ${String(err)}`),
    );
    try {
      await check(db, where);
    } catch (err) {
      console.error(where);
      throw err;
    } finally {
      await db.close();
    }
  }
}

async function historyEntries(db: KvStore): Promise<string[]> {
  return (await dump(db)).filter((e) => e.startsWith("03") || e.startsWith("04"));
}

/**
 * The history and changes entries of `dump` (historyEntries' form) once compacted to
 * `target` by the model's rule: per key, the versions above `target` and the newest at or
 * below it unless a deletion; the changes from `target` on.
 */
function compactedEntries(dump: readonly string[], target: number): string[] {
  const newest = new Map<string, { rev: number; entry: string; deleted: boolean }>();
  const kept: string[] = [];
  for (const entry of dump) {
    const [k, v] = entry.split("=") as [string, string];
    const key = Buffer.from(k, "hex");
    if (key[0] === 0x04) {
      if (revisionOfChange(key) >= target) kept.push(entry);
      continue;
    }
    const rev = revisionOfHistory(key);
    if (rev > target) {
      kept.push(entry);
      continue;
    }
    const id = Buffer.from(keyOfHistory(key)).toString("hex");
    const seen = newest.get(id);
    if (seen === undefined || seen.rev < rev) newest.set(id, { rev, entry, deleted: v === "00" });
  }
  for (const n of newest.values()) if (!n.deleted) kept.push(n.entry);
  return kept.sort();
}

/**
 * A store on a crash run's file system holding 120 random synced writes, closed, with
 * its history and changes entries; crash capture stays off until `arm(true)`.
 */
async function storeWithHistory(seed: number) {
  const state = { armed: false };
  const run = crashRun(seed, () => state.armed);
  const options = { ...STORE, fs: run.fs };
  const db = await open("/db", options);
  const h = new Harness(await MvccStore.open(db, { sync: true }), rng(seed), seed);
  for (let i = 0; i < 120; i++) await h.writeTxn();
  await h.settle();
  await h.store.close();
  const before = await historyEntries(db);
  await db.close();
  const arm = (on: boolean) => {
    state.armed = on;
  };
  return { run, options, h, before, arm };
}

describe("MVCC crash points", () => {
  it("pipelined writes cut by power loss: the store agrees with the model at its revision", async () => {
    const seed = testSeed();
    let armed = false;
    const run = crashRun(seed, () => armed);
    const db = await open("/db", { ...STORE, fs: run.fs });
    const h = new Harness(await MvccStore.open(db, { sync: true }), rng(seed), seed);
    // The highest revision whose write was acknowledged (end resolved): run.durable.
    const write = h.store.write.bind(h.store);
    h.store.write = () => {
      const w = write();
      const end = w.end.bind(w);
      w.end = (extra) =>
        end(extra).then(() => {
          run.durable = Math.max(run.durable, w.revision);
        });
      return w;
    };
    armed = true;
    for (let i = 0; i < 150; i++) await h.writeTxn();
    await h.settle();
    armed = false;
    await h.store.close();
    await db.close();
    let clone = 0;
    await forEachCrash(run, seed, async (cdb, where) => {
      const m = await MvccStore.open(cdb);
      h.store = m;
      const acked = run.crashes[clone++]!.durablePrefix;
      assert.ok(
        m.revision >= acked,
        `${where}: revision ${m.revision} below the acknowledged ${acked}`,
      );
      for (let i = 0; i < 8; i++) await h.read();
      await h.latestAt(m.revision);
      await h.changes(m.revision);
      await m.close();
    });
  });

  it("a physical compaction cut by power loss resumes and agrees with the model", async () => {
    const seed = testSeed();
    const { run, options, h, before, arm } = await storeWithHistory(seed);
    const oldCompact = h.model.compactRevision;
    const db = await open("/db", options);
    h.store = await MvccStore.open(db, { sync: true, compactionChunk: 4 });
    const target = Math.max(oldCompact + 1, h.model.revision - 10);
    arm(true);
    const { done } = h.store.compact(target);
    h.model.compact(target);
    h.expected.compact(target);
    await done;
    arm(false);
    await h.store.close();
    await db.close();
    await forEachCrash(run, seed, async (cdb, where) => {
      const m = await MvccStore.open(cdb, { compactionChunk: 4 });
      h.store = m;
      await m.resumed;
      assert.equal(m.revision, h.model.revision, where);
      if (m.compactRevision === target) {
        await h.checkStoredEntries(cdb);
        for (let i = 0; i < 10; i++) await h.read();
        await h.changes();
      } else {
        assert.equal(m.compactRevision, oldCompact, where);
        assert.deepEqual(await historyEntries(cdb), before, where);
      }
      await m.close();
    });
  });

  it("two compactions scheduled back to back, cut by power loss, finish as the model's", async () => {
    const seed = testSeed();
    const { run, options, before: unsorted, arm } = await storeWithHistory(seed);
    const before = [...unsorted].sort();
    const db = await open("/db", options);
    const m = await MvccStore.open(db, { sync: true, compactionChunk: 3 });
    const first = Math.floor(m.revision / 2);
    const second = m.revision - 5;
    assert.deepEqual(compactedEntries(before, 0), before);
    arm(true);
    const a = m.compact(first);
    const b = m.compact(second);
    await Promise.all([a.done, b.done]);
    arm(false);
    assert.deepEqual((await historyEntries(db)).sort(), compactedEntries(before, second));
    await m.close();
    await db.close();
    await forEachCrash(run, seed, async (cdb, where) => {
      const c = await MvccStore.open(cdb, { compactionChunk: 3 });
      await c.resumed;
      assert.ok([0, first, second].includes(c.compactRevision), where);
      const got = (await historyEntries(cdb)).sort();
      assert.deepEqual(got, compactedEntries(before, c.compactRevision), where);
      await c.close();
    });
  });

  it("an upgrade cut by power loss finishes, when run again, as an uninterrupted one", async () => {
    const seed = testSeed();
    let armed = false;
    const run = crashRun(seed, () => armed);
    await legacyStore(run.mem, seed);
    const db = await open("/db", { ...STORE, fs: run.fs });
    armed = true;
    await upgradeLegacyKeys(db, { batchKeys: 5 });
    armed = false;
    const want = await dump(db);
    await db.close();
    await forEachCrash(run, seed, async (cdb, where) => {
      await upgradeLegacyKeys(cdb, { batchKeys: 7 });
      assert.deepEqual(await dump(cdb), want, where);
    });
  });
});
