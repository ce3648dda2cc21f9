/**
 * Crash points around a cluster's upgrade to revisions (issue 28, point 8): a member whose
 * store predates revisions loses power before each file-changing operation (in turn, or a
 * seeded sample) from its restart, through its apply of the upgrade entry (kind 7: its
 * plain keys converted in batches of 1,000) and the writes just after it, until it has
 * applied them all; in the third test the member is the leader that proposes the upgrade.
 * Its disk keeps what was synced (and unsynced writes with a seeded retention); it
 * restarts from that and catches up from the log (or, in the second test, from a snapshot
 * install), and must end like the members that never crashed: the same keys,
 * values (kv.v1's reads), create and mod revisions, versions and store revision
 * (assertConverged), the same multi-version keys byte for byte, no plain key left, and
 * the applied index consistent with what the store holds (a store that has applied the
 * upgrade entry is fully converted).
 *
 * KV_STRESS=1 crashes at every operation of the window; KV_SEED replays a run.
 */
import assert from "node:assert/strict";
import { describe, type TestContext, test } from "node:test";
import { KvStore } from "../../src/db/kv-store.js";
import { isKvError } from "../../src/errors.js";
import { REVISION_KEY } from "../../src/mvcc/layout.js";
import { hasLegacyKeys } from "../../src/mvcc/legacy-upgrade.js";
import type { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { isRevisioned } from "../../src/mvcc/revisioned.js";
import { RaftLogStorage } from "../../src/raft/storage/raft-log-storage.js";
import { decodeCommand } from "../../src/replication/command.js";
import { NodeDir, RAFT_DIR } from "../../src/replication/node-dir.js";
import { readStoreState } from "../../src/replication/open-member.js";
import type { ReplicatedStore } from "../../src/replication/replicated-store.js";
import { getFixed64 } from "../../src/util/coding.js";
import {
  FaultInjectingFileSystem,
  type FileOp,
} from "../../src/vfs/fault-injecting-file-system.js";
import { joinPath } from "../../src/vfs/file-system.js";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { chooseCrashPoints, describeOp } from "../support/crash-points.js";
import { CHANGING, isBigStoreAppend, mvccOf } from "../support/member-crash.js";
import { testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

const STRESS = process.env["KV_STRESS"] === "1";
/** Plain keys before the upgrade: two conversion batches (of at most 1,000 keys). */
const KEYS = 1500;
/** Crash points of the default run (a sample; every one with KV_STRESS=1). */
const POINTS = 4;

const key = (i: number) => `k${String(i).padStart(4, "0")}`;

/** Whether `op` writes a conversion batch: a store log append of a big batch. */
const isBatch = (op: FileOp) => isBigStoreAppend(op, 16384);

/** A copy of a stopped member's disk (every write on it kept). */
const copyOf = (fs: MemoryFileSystem) => fs.crashClone({ unsyncedRetention: 1 });

/**
 * Every key of a member's store but the replicated store's own (0x00 "applied",
 * "members", sessions): the plain keys (none after the upgrade), the multi-version keys
 * and the revision counter.
 */
async function storeKeys(m: MvccStore): Promise<string> {
  const rows = await m.store.iterator({ gte: Uint8Array.of(0x01), lt: Uint8Array.of(0x05) }).all();
  const lines = rows.map(
    ([k, v]) => `${Buffer.from(k).toString("hex")}=${Buffer.from(v).toString("hex")}`,
  );
  const rev = await m.store.get(REVISION_KEY);
  lines.push(`revision ${rev === undefined ? "absent" : getFixed64(rev, 0)}`);
  return lines.join("\n");
}

/** The index of the upgrade entry in the Raft log of the (stopped) member on `fs`. */
async function upgradeIndex(fs: MemoryFileSystem, dataDir: string): Promise<number> {
  const log = await RaftLogStorage.open(copyOf(fs), joinPath(dataDir, RAFT_DIR));
  try {
    const entries = log.entries(log.firstIndex(), log.lastIndex() + 1, Number.MAX_SAFE_INTEGER);
    const e = entries.find(
      (x) =>
        x.type !== "confChange" && x.data.length > 0 && decodeCommand(x.data).kind === "upgrade",
    );
    if (e === undefined) throw new Error(`no upgrade entry in ${dataDir}'s log`);
    return e.index;
  } finally {
    await log.close();
  }
}

/** What a crashed member's store holds before it restarts (read on a copy of its disk). */
interface Found {
  readonly applied: number;
  readonly revisioned: boolean;
  readonly plain: boolean;
}

async function inspectCrashed(fs: MemoryFileSystem, dataDir: string): Promise<Found> {
  const copy = copyOf(fs);
  const dir = await NodeDir.open(copy, dataDir);
  try {
    const store = await KvStore.open(dir.storePath, {
      fs: copy,
      sync: false,
      createIfMissing: false,
      walRecoveryMode: "pointInTime",
    });
    try {
      return {
        applied: (await readStoreState(store)).index,
        revisioned: await isRevisioned(store),
        plain: await hasLegacyKeys(store),
      };
    } finally {
      await store.close();
    }
  } finally {
    await dir.close();
  }
}

/**
 * The disks of a 3-member cluster made before revisions, with KEYS plain keys (some
 * overwritten, some deleted), stopped. `upgraded`: the two members other than `victim`
 * have applied the upgrade entry (at `upgradeAt`) and three writes after it, `victim` was
 * stopped before it; else no member has revisions (the three writes made without them).
 */
interface Template {
  readonly disks: Map<string, MemoryFileSystem>;
  readonly victim: string;
  readonly upgradeAt: number | undefined;
}

async function makeTemplate(seed: number, upgraded: boolean): Promise<Template> {
  const c = await TestCluster.start({ size: 3, seed, member: { bootstrapWithoutRevisions: true } });
  try {
    let leader = await c.waitForLeader();
    for (let start = 0; start < KEYS; start += 500) {
      const b = leader.batch();
      for (let i = start; i < Math.min(KEYS, start + 500); i++)
        b.put(bytes(key(i)), bytes(`v${i}`));
      await TestCluster.retry(() => leader.write(b));
    }
    const b = leader.batch();
    for (let i = 0; i < KEYS; i += 37) b.delete(bytes(key(i)));
    for (let i = 5; i < KEYS; i += 11) b.put(bytes(key(i)), bytes(`w${i}`));
    await TestCluster.retry(() => leader.write(b));
    await c.waitForApplied(leader.status().commit);
    const victim = [...c.slots.keys()].find((n) => n !== leader.name)!;
    const others = [...c.slots.keys()].filter((n) => n !== victim);
    if (upgraded) {
      await c.stop(victim);
      for (const name of others) {
        await c.stop(name);
        c.slot(name).extra = { upgradeRevisions: true };
        await c.startMember(name);
      }
      await waitFor(
        () => c.running().every((s) => s.revision >= 1),
        "the others converted",
        10_000,
      );
      leader = await c.waitForLeader();
    }
    await TestCluster.retry(() => leader.put(bytes(key(5)), bytes("a1")));
    await TestCluster.retry(() => leader.delete(bytes(key(10))));
    await TestCluster.retry(() => leader.put(bytes("new1"), bytes("x")));
    await c.waitForApplied(leader.status().commit);
    for (const name of c.slots.keys()) await c.stop(name);
    const disks = new Map([...c.slots].map(([n, s]) => [n, s.fs as MemoryFileSystem]));
    const upgradeAt = upgraded
      ? await upgradeIndex(disks.get(others[0]!)!, c.slot(others[0]!).dataDir)
      : undefined;
    return { disks, victim, upgradeAt };
  } finally {
    await c.close();
  }
}

/**
 * The leader, one of `names` (c.waitForLeader would wait for the crashed victim too: cut
 * off, it may sit in the leader's term without knowing it).
 */
async function leaderAmong(c: TestCluster, names: readonly string[]): Promise<ReplicatedStore> {
  let leader: ReplicatedStore | undefined;
  await waitFor(
    () => {
      leader = names.map((n) => c.store(n)).find((s) => s.status().role === "leader");
      return leader !== undefined;
    },
    `a leader among ${names.join(", ")}`,
  );
  return leader!;
}

/**
 * "log": the victim, down during the upgrade, replays it from the log at its restart, and
 * so again after the crash; "snapshot": the same, but after the crash the victim catches
 * up from a snapshot install; "leader": the victim leads and proposes the upgrade (the
 * others run without `upgradeRevisions`) and converts its store as it applies it.
 */
type Mode = "log" | "snapshot" | "leader";

/** Any running member that considers itself the leader. */
const anyLeader = (c: TestCluster) => c.running().find((s) => s.status().role === "leader");

interface RunResult {
  /** The file-changing operations of the window (the dry run's). */
  readonly ops: FileOp[];
  readonly crashed: boolean;
  /** The crashed store held revisions and plain keys: an upgrade cut midway. */
  readonly cut: boolean;
}

/**
 * One run from `tpl`'s disks: `crashAt` undefined is the dry run (counting the window's
 * operations); `batch`: the victim loses power before the store log append of its
 * conversion batch `crashAt` (0-based), every unsynced write kept; else before the
 * window's file-changing operation `crashAt`. The crashed victim restarts and catches up
 * as `mode` says.
 */
async function run(
  seed: number,
  tpl: Template,
  crashAt: number | undefined,
  mode: Mode,
  batch = false,
): Promise<RunResult> {
  // A cluster on copies of the template's disks (each member bootstraps on a fresh disk first,
  // stopped at once).
  const c = await TestCluster.start({ size: 3, seed });
  try {
    for (const name of c.slots.keys()) await c.stop(name);
    const victim = tpl.victim;
    const others = [...c.slots.keys()].filter((n) => n !== victim);
    for (const [name, fs] of tpl.disks) c.slot(name).fs = copyOf(fs);
    for (const name of others) await c.startMember(name);
    const slot = c.slot(victim);
    const mem = slot.fs as MemoryFileSystem;
    const ops: FileOp[] = [];
    let counting = true;
    let crashed: MemoryFileSystem | undefined;
    let crashOp: FileOp | undefined;
    const retention = batch ? 1 : [0, 0.5, 1][((crashAt ?? 0) + seed) % 3]!;
    let batches = 0;
    const cloneSeed = (seed ^ ((crashAt ?? 0) * 0x9e3779b1)) >>> 0;
    slot.fs = new FaultInjectingFileSystem(mem, {
      onOp: (op) => {
        if (!counting || crashed !== undefined || !CHANGING.has(op.kind)) return;
        if (batch ? isBatch(op) && batches++ === crashAt : ops.length === crashAt) {
          // Power loss before this operation: nothing more leaves the member.
          void slot.transport?.close();
          crashOp = op;
          crashed = mem.crashClone({
            unsyncedRetention: retention,
            seed: cloneSeed,
            appendsSurviveAsPrefix: true,
          });
          return;
        }
        ops.push(op);
      },
    });
    const proposer = others[0]!;
    /**
     * Writes through `proposer` until applied: an unknown outcome (the victim led) is
     * retried, each write being idempotent in its value.
     */
    const write = async (op: (s: ReplicatedStore) => Promise<void>): Promise<void> => {
      const until = Date.now() + 20_000;
      for (;;) {
        try {
          return await TestCluster.retry(() => op(c.store(proposer)), 20_000);
        } catch (err) {
          if (!isKvError(err, "OUTCOME_UNKNOWN") || Date.now() > until) throw err;
        }
      }
    };
    /** Transfers the leadership to the victim (while another member leads) until `done`. */
    const victimLeads = async (why: string, done: () => boolean): Promise<void> => {
      const victimId = c.store(victim).memberId;
      await waitFor(
        async () => {
          if (done()) return true;
          const l = anyLeader(c);
          if (l !== undefined && l.name !== victim) {
            await l.transferLeadership(victimId).catch(() => {});
          }
          return false;
        },
        why,
        20_000,
      );
    };
    const T = { timeoutMs: 2000 };
    // The window: the victim restarts, replays the upgrade entry and the writes after it
    // (or leads and proposes it), and applies the writes that follow.
    if (mode === "leader") slot.extra = { upgradeRevisions: true };
    const started = c.startMember(victim).catch((err: unknown) => {
      if (crashed === undefined) throw err;
    });
    if (mode === "leader") {
      await started;
      if (slot.store !== undefined) {
        await victimLeads(
          `seed ${seed}: ${victim} leads`,
          () => crashed !== undefined || anyLeader(c)?.name === victim,
        );
      }
    } else {
      await leaderAmong(c, others);
    }
    await write((s) => s.put(bytes(key(5)), bytes("a2"), T));
    await write((s) => s.put(bytes(key(20)), bytes("b"), T));
    await write((s) => s.delete(bytes(key(30)), T));
    await write((s) => s.put(bytes(key(10)), bytes("again"), T));
    await write((s) => s.put(bytes(key(KEYS - 1)), bytes("last"), T));
    await started;
    await waitFor(
      () => crashed !== undefined || c.running().every((s) => s.revision >= 1),
      `seed ${seed}: every member converted, or the victim crashed`,
      20_000,
    );
    const last = c.store(proposer).status().commit;
    await waitFor(
      () => crashed !== undefined || (slot.store?.status().applied ?? 0) >= last,
      `seed ${seed}: the victim applied the writes, or crashed`,
      20_000,
    );
    counting = false;
    const context = `seed ${seed}, ${victim}, crash at ${batch ? "batch " : ""}${crashAt ?? "none"} (${
      crashOp === undefined ? "none" : describeOp(crashOp)
    }; retention ${retention}; ${mode})`;
    let found: Found | undefined;
    if (crashed !== undefined) {
      const old = slot.store;
      slot.store = undefined;
      await old?.close().catch(() => {});
      found = await inspectCrashed(crashed, slot.dataDir);
      slot.fs = crashed;
      if (mode === "snapshot") {
        // The others snapshot often and keep few entries behind: the victim's log is left
        // behind the leader's, and it gets the store from a snapshot.
        for (const name of others) {
          await c.stop(name);
          c.slot(name).extra = { snapshotEntries: 20, catchUpEntries: 5 };
          await c.startMember(name);
        }
        const l = await c.waitForLeader();
        for (let i = 0; i < 60; i++) {
          await TestCluster.retry(() => l.put(bytes(key(100 + (i % 7))), bytes(`s${i}`)));
        }
        await c.startMember(victim);
        await waitFor(
          () => slot.events.some((e) => e.type === "snapshot-installed"),
          `${context}: the victim installed a snapshot`,
          20_000,
        );
      } else {
        await c.startMember(victim);
      }
      if (mode === "leader") {
        // The upgrade entry may have been lost with the victim: it leads again to propose it.
        await victimLeads(`${context}: the upgrade done after the crash`, () =>
          c.running().every((s) => s.revision >= 1),
        );
      }
      await write((s) => s.put(bytes(key(7)), bytes("after the crash"), T));
    }

    await assertConverged(c, context);
    if (found !== undefined) {
      // A store that holds the upgrade entry's applied index is fully converted.
      const upgradeAt =
        tpl.upgradeAt ??
        (await upgradeIndex(c.slot(proposer).fs as MemoryFileSystem, c.slot(proposer).dataDir));
      if (found.applied >= upgradeAt) {
        assert.ok(
          found.revisioned && !found.plain,
          `${context}: the crashed store applied the upgrade entry ${upgradeAt} (applied ${found.applied}) but is not fully converted (${JSON.stringify(found)})`,
        );
      }
    }
    const members = c.running();
    assert.equal(members.length, 3, `${context}: every member runs`);
    // An entry committed after assertConverged's barrier reaches the members a moment
    // apart (a follower learns the commit with the leader's next message): they must end
    // level, not be level at one instant.
    const applied = () => members.map((s) => s.status().applied);
    await waitFor(
      () => new Set(applied()).size === 1,
      `${context}: the same applied index everywhere (${applied()})`,
      10_000,
    );
    const layouts = await Promise.all(members.map((s) => storeKeys(mvccOf(s))));
    for (let i = 0; i < members.length; i++) {
      assert.doesNotMatch(layouts[i]!, /^01/m, `${context}: ${members[i]!.name} kept plain keys`);
      assert.equal(
        layouts[i],
        layouts[0],
        `${context}: ${members[i]!.name}'s store differs from ${members[0]!.name}'s`,
      );
    }
    // kv.v1's point reads: a converted key, an overwritten one, a deleted one, a recreated one.
    for (const s of members) {
      const got = await Promise.all(
        [key(1), key(5), key(30), key(10), key(16), "new1"].map(async (k) =>
          text(await s.get(bytes(k), { serializable: true })),
        ),
      );
      assert.deepEqual(got, ["v1", "a2", undefined, "again", "w16", "x"], `${context}: ${s.name}`);
    }
    const cut = found?.revisioned === true && found.plain;
    return { ops, crashed: crashed !== undefined, cut };
  } finally {
    await c.close();
  }
}

async function crashPoints(t: TestContext, mode: Mode, max: number): Promise<void> {
  const seed = testSeed();
  const tpl = await makeTemplate(seed, mode !== "leader");
  const dry = await run(seed, tpl, undefined, mode);
  assert.ok(dry.ops.length > 10, `seed ${seed}: only ${dry.ops.length} file changes in the window`);
  const batches = dry.ops.filter(isBatch).length;
  assert.ok(batches >= 2, `seed ${seed}: ${batches} conversion batches in the window`);
  const points = chooseCrashPoints(seed, dry.ops, max, STRESS);
  // Always the last (the writes after the upgrade); before each conversion batch with
  // every unsynced write kept (the store reopens with the upgrade cut midway).
  points.add(dry.ops.length - 1);
  const runs = [
    ...[...points].sort((a, b) => a - b).map((at) => ({ at, batch: false })),
    ...Array.from({ length: batches }, (_, at) => ({ at, batch: true })),
  ];
  let crashed = 0;
  let cut = 0;
  for (const { at, batch } of runs) {
    const r = await run(seed, tpl, at, mode, batch);
    if (r.crashed) crashed++;
    if (r.cut) cut++;
  }
  const kinds = new Map<string, number>();
  for (const op of dry.ops) kinds.set(op.kind, (kinds.get(op.kind) ?? 0) + 1);
  t.diagnostic(
    `seed ${seed} (${mode}): ${dry.ops.length} file changes in the window (${[...kinds].map(([k, n]) => `${k} ${n}`).join(", ")}; ${batches} conversion batches); crashed at ${crashed} of ${runs.length} points, ${cut} of them reopening with the upgrade cut midway`,
  );
  assert.ok(
    crashed >= runs.length / 2,
    `seed ${seed}: only ${crashed} of ${runs.length} runs reached their crash point`,
  );
  assert.ok(cut > 0, `seed ${seed}: no crash cut the upgrade midway`);
}

describe("crash points around the upgrade to revisions", () => {
  test("a member losing power before each file change from its restart through its apply of the upgrade entry and the writes after it: it reopens, replays from the log, and ends with the others' revisions, versions and bytes", async (t) => {
    await crashPoints(t, "log", POINTS);
  });

  test("the same, the crashed member catching up from a snapshot install", async (t) => {
    await crashPoints(t, "snapshot", POINTS / 2);
  });

  test("the same with the leader that proposes the upgrade losing power (writes proposed through a follower)", async (t) => {
    await crashPoints(t, "leader", POINTS / 2);
  });
});
