/**
 * `kv-engine upgrade` (src/tools/upgrade.ts) under power loss: a single-node store written
 * before revisions (plain keys in several levels and in the log, some overwritten, some
 * deleted) is copied into a new directory with revisions; a power loss before any
 * file-changing operation of the copy (in turn, or a seeded sample) must leave the old
 * directory intact and usable (it opens with the same content and no revisions) and
 * either no new directory or a complete one (every key at revision 1, its value, nothing
 * else); never a half-written one under the new name. Run again on the crashed disk, the
 * tool then finishes (or refuses the new directory that exists), ending with a complete
 * copy.
 *
 * KV_STRESS=1 crashes at every operation; KV_SEED replays a run.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isKvError, MemoryFileSystem, open } from "../../src/index.js";
import { hasLegacyKeys } from "../../src/mvcc/legacy-upgrade.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { isRevisioned } from "../../src/mvcc/revisioned.js";
import { upgradeStore } from "../../src/tools/upgrade.js";
import {
  FaultInjectingFileSystem,
  type FileOp,
} from "../../src/vfs/fault-injecting-file-system.js";
import { latin1 } from "../support/bytes.js";
import { chooseCrashPoints, describeOp } from "../support/crash-points.js";
import { keyName } from "../support/history.js";
import { CHANGING } from "../support/member-crash.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { SMALL_LEVELS } from "../support/store-fixtures.js";

const STRESS = process.env["KV_STRESS"] === "1";
/** More keys than one of the tool's batches (1,000 rows). */
const KEYS = 1300;
/** Crash points of the default run (a sample; every one with KV_STRESS=1). */
const POINTS = 24;
const OLD = "/old";
const NEW = "/new";

type Model = Map<string, string>;

/** A pre-revisions store at OLD (data in several levels and in the log), closed. */
async function build(seed: number): Promise<{ mem: MemoryFileSystem; model: Model }> {
  const r = rng(seed);
  const mem = new MemoryFileSystem();
  const db = await open(OLD, { ...SMALL_LEVELS, fs: mem });
  const model: Model = new Map();
  for (let start = 0; start < KEYS; start += 100) {
    const b = db.batch();
    for (let i = start; i < start + 100; i++) {
      const k = keyName(i);
      const v = `v${i}.${randInt(r, 1000)}`;
      b.put(Buffer.from(k), Buffer.from(v));
      model.set(k, v);
    }
    await db.write(b);
  }
  const b = db.batch();
  for (let n = 0; n < 80; n++) {
    const k = keyName(randInt(r, KEYS));
    if (n % 3 === 0) {
      b.delete(Buffer.from(k));
      model.delete(k);
    } else {
      b.put(Buffer.from(k), Buffer.from(`w${n}`));
      model.set(k, `w${n}`);
    }
  }
  await db.write(b);
  await db.close();
  return { mem, model };
}

/** "" when `got` equals `want`, else the first differences. */
function difference(want: Model, got: Model): string {
  const lines: string[] = [];
  for (const [k, v] of want) if (got.get(k) !== v) lines.push(`${k}: want ${v}, got ${got.get(k)}`);
  for (const [k, v] of got) if (!want.has(k)) lines.push(`${k}: want none, got ${v}`);
  return lines.length === 0
    ? ""
    : `${lines.length} keys differ (want ${want.size}, got ${got.size}): ${lines.slice(0, 5).join("; ")}`;
}

/** OLD on `fs` opens, holds `model` exactly and has no revisions. */
async function assertOldIntact(fs: MemoryFileSystem, model: Model, where: string): Promise<void> {
  const db = await open(OLD, { fs, createIfMissing: false });
  try {
    const got: Model = new Map();
    for (const [k, v] of await db.iterator().all()) got.set(latin1(k), latin1(v));
    assert.equal(difference(model, got), "", `${where}: the old store changed`);
  } finally {
    await db.close();
  }
}

/** `dir` on `fs` is a complete upgraded copy of `model`: every key at revision 1, nothing else. */
async function assertComplete(fs: MemoryFileSystem, dir: string, model: Model, where: string) {
  const db = await open(dir, { fs, createIfMissing: false });
  try {
    assert.equal(await isRevisioned(db), true, `${where}: ${dir} has no revisions`);
    assert.equal(await hasLegacyKeys(db), false, `${where}: ${dir} holds plain keys`);
    const m = await MvccStore.open(db);
    try {
      assert.equal(m.revision, 1, `${where}: ${dir}'s revision`);
      const view = m.read();
      try {
        const all = await view.range(new Uint8Array([0]), new Uint8Array([0]));
        const got: Model = new Map();
        for (const kv of all.kvs) {
          assert.deepEqual(
            [kv.createRevision, kv.modRevision, kv.version],
            [1, 1, 1],
            `${where}: ${latin1(kv.key)}'s revisions`,
          );
          got.set(latin1(kv.key), latin1(kv.value));
        }
        assert.equal(difference(model, got), "", `${where}: ${dir}'s keys`);
      } finally {
        view.release();
      }
    } finally {
      await m.close();
    }
  } finally {
    await db.close();
  }
}

/**
 * Runs the tool from a copy of `base` with a power loss before its changing operation
 * `crashAt` (none: the dry run); returns the operations seen, the crashed disk and the
 * disk the run went on with.
 */
async function run(
  base: MemoryFileSystem,
  crashAt: number | undefined,
  retention: number,
  seed: number,
): Promise<{ ops: FileOp[]; crashed: MemoryFileSystem | undefined; done: MemoryFileSystem }> {
  const mem = base.crashClone({ unsyncedRetention: 1 });
  const ops: FileOp[] = [];
  let crashed: MemoryFileSystem | undefined;
  const fs = new FaultInjectingFileSystem(mem, {
    onOp: (op) => {
      if (!CHANGING.has(op.kind)) return;
      if (ops.length === crashAt) {
        crashed = mem.crashClone({
          unsyncedRetention: retention,
          seed,
          appendsSurviveAsPrefix: true,
        });
      }
      ops.push(op);
    },
  });
  await upgradeStore(OLD, NEW, fs);
  // A crash point past the last operation: the power lost once the tool returned.
  if (crashAt === ops.length) {
    crashed = mem.crashClone({ unsyncedRetention: retention, seed, appendsSurviveAsPrefix: true });
  }
  return { ops, crashed, done: mem };
}

test("a power loss at any file change of `kv-engine upgrade` leaves the old store intact and either no new one or a complete one; run again, it finishes", async (t) => {
  const seed = testSeed();
  const { mem, model } = await build(seed);
  const dry = await run(mem, undefined, 0, seed);
  await assertComplete(dry.done, NEW, model, `seed ${seed}: no crash`);
  assert.ok(dry.ops.length > 10, `seed ${seed}: only ${dry.ops.length} file changes`);
  const points = chooseCrashPoints(seed, dry.ops, POINTS, STRESS);
  // Always the last few (the rename into place, the parent directory's sync) and once the
  // tool returned (with nothing unsynced kept: what it vouches for).
  for (let i = Math.max(0, dry.ops.length - 3); i < dry.ops.length; i++) points.add(i);
  points.add(dry.ops.length);
  let complete = 0;
  for (const at of [...points].sort((a, b) => a - b)) {
    const retention = at === dry.ops.length ? 0 : [0, 0.5, 1][(at + seed) % 3]!;
    const { crashed } = await run(mem, at, retention, (seed ^ (at * 0x9e3779b1)) >>> 0);
    assert.ok(crashed !== undefined, `seed ${seed}: no crash at ${at}`);
    const where = `seed ${seed}, crash before ${at} of ${dry.ops.length} (${at === dry.ops.length ? "after the tool returned" : describeOp(dry.ops[at]!)}; retention ${retention})`;
    await assertOldIntact(crashed, model, where);
    const exists = await crashed.exists(NEW);
    if (at === dry.ops.length) assert.ok(exists, `${where}: the tool returned, ${NEW} is lost`);
    if (exists) {
      complete++;
      await assertComplete(crashed, NEW, model, where);
      await assert.rejects(upgradeStore(OLD, NEW, crashed), (err) =>
        isKvError(err, "INVALID_ARGUMENT"),
      );
    } else {
      await upgradeStore(OLD, NEW, crashed);
      await assertComplete(crashed, NEW, model, `${where}, run again`);
    }
    await assertOldIntact(crashed, model, `${where}, run again`);
  }
  const kinds = new Map<string, number>();
  for (const op of dry.ops) kinds.set(op.kind, (kinds.get(op.kind) ?? 0) + 1);
  t.diagnostic(
    `seed ${seed}: ${dry.ops.length} file changes (${[...kinds].map(([k, n]) => `${k} ${n}`).join(", ")}); crashed at ${points.size} points, ${complete} of them leaving the new store in place`,
  );
});
