/**
 * Crash points around apply, under a counter advanced by compare-and-swap from several
 * clients: a member (the leader, mostly) loses power exactly
 *
 * - between the Raft log's fsync and the apply (the entries are durable in the log, the
 *   store has not seen them),
 * - between the apply and the applied index reaching the disk (the store has the batch in
 *   its unsynced log; the crash keeps none, some or all of it),
 * - in the middle of installing a snapshot (every file operation of the install, in turn),
 *
 * and restarts from what its disk kept. The counter must end exactly at the acknowledged
 * increments plus at most the ones whose outcome was unknown (nothing lost, nothing
 * applied twice), the history must be linearizable, and the members must converge.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import type { ReplicatedStore } from "../../src/replication/replicated-store.js";
import {
  FaultInjectingFileSystem,
  type FileOp,
} from "../../src/vfs/fault-injecting-file-system.js";
import type { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import {
  assertLinearizable,
  HistoryRecorder,
  type KvOutput,
} from "../support/linearizability/index.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, type MemberSlot, TestCluster, text } from "./support/test-cluster.js";
import { recordedOp } from "./support/workload.js";

const STRESS = process.env["KV_STRESS"] === "1";

type CrashPoint = "afterRaftSync" | "afterApply";

/** A member's disk: the memory file system under a hook that can crash it at an armed point. */
interface Disk {
  mem: MemoryFileSystem;
  armed: CrashPoint | undefined;
  /** For afterApply: a store append was seen since the arming. */
  sawApply: boolean;
  sawRaftSync: boolean;
  crashed: MemoryFileSystem | undefined;
  retention: number;
  seed: number;
}

function wrap(slot: MemberSlot, disk: Disk, onCrash: () => void): void {
  const storeOp = (op: FileOp) => op.path.includes(`${slot.dataDir}/store`) && op.kind === "append";
  const raftSync = (op: FileOp) =>
    op.path.includes(`${slot.dataDir}/raft/`) && op.kind === "datasync";
  slot.fs = new FaultInjectingFileSystem(disk.mem, {
    onOp: (op) => {
      if (disk.armed === undefined || disk.crashed !== undefined) return;
      let now = false;
      if (disk.armed === "afterRaftSync") {
        if (raftSync(op)) disk.sawRaftSync = true;
        else if (disk.sawRaftSync && storeOp(op)) now = true;
      } else {
        if (storeOp(op)) disk.sawApply = true;
        else if (disk.sawApply && op.path.includes(`${slot.dataDir}/raft/`)) now = true;
      }
      if (!now) return;
      // Power loss before this operation: nothing more leaves the member.
      void slot.transport?.close();
      disk.crashed = disk.mem.crashClone({ unsyncedRetention: disk.retention, seed: disk.seed });
      onCrash();
    },
  });
}

/**
 * A client's session (`sessions` runs): its ID, and the sequence number of its last write.
 * A serial client that sends each write until answered has every lower one answered.
 */
interface ClientSession {
  id: number;
  seq: number;
}

async function counterRun(point: CrashPoint, seed: number, sessions = false): Promise<void> {
  const random = rng(seed);
  const c = await TestCluster.start({
    size: 3,
    seed,
    member: { snapshotEntries: 150, catchUpEntries: 30 },
  });
  try {
    const disks = new Map<string, Disk>();
    for (const [name, slot] of c.slots) {
      // Restart each member on a wrapped disk (the first start made the directories).
      await c.stop(name);
      const disk: Disk = {
        mem: slot.fs as MemoryFileSystem,
        armed: undefined,
        sawApply: false,
        sawRaftSync: false,
        crashed: undefined,
        retention: 0,
        seed: 0,
      };
      disks.set(name, disk);
      wrap(slot, disk, () => {});
      await c.startMember(name);
    }
    await c.waitForLeader();
    const started = performance.now();
    const recorder = new HistoryRecorder(() => performance.now() - started);
    let acked = 0;
    let unknown = 0;
    /** sessions: increments answered only by a resend under their session. */
    let resolved = 0;
    let done = false;
    const members = () => c.running().filter((s) => disks.get(s.name)!.crashed === undefined);
    const any = (): ReplicatedStore | undefined => {
      const all = members();
      return all.length === 0 ? undefined : all[randInt(random, all.length)]!;
    };
    const client = async (id: number) => {
      let session: ClientSession | undefined;
      while (!done) {
        const s = any();
        if (s === undefined) {
          await new Promise((r) => setTimeout(r, 10));
          continue;
        }
        if (sessions && session === undefined) {
          try {
            session = { id: (await s.openSession({ timeoutMs: 1_000 })).id, seq: 0 };
          } catch (err) {
            if (!isKvError(err)) throw err;
          }
          continue;
        }
        let current: string | undefined;
        try {
          current = text(await s.get(bytes("counter"), { timeoutMs: 1_000 }));
        } catch (err) {
          if (!isKvError(err)) throw err;
          continue;
        }
        const next = String(Number(current ?? "0") + 1);
        const result: { output?: KvOutput } = {};
        const call =
          session === undefined
            ? undefined
            : { id: session.id, seq: ++session.seq, ackedBelow: session.seq };
        const outcome = await recordedOp(
          s,
          recorder,
          id,
          "counter",
          { type: "cas", expected: current, next },
          call === undefined ? { timeoutMs: 1_000 } : { timeoutMs: 1_000, session: call },
          result,
        );
        const out = result.output;
        if (outcome === "ok" && out?.type === "cas" && out.applied) acked++;
        if (outcome !== "unknown") continue;
        if (call === undefined) {
          unknown++;
          continue;
        }
        // Sent again under its session, through any member, until answered: across
        // crashes, restarts and snapshots the cluster applies it once and answers with
        // its first result.
        for (;;) {
          const again = any();
          try {
            if (again === undefined) throw new Error("no member up");
            const r = await again.compareAndSwap(
              bytes("counter"),
              current === undefined ? undefined : bytes(current),
              bytes(next),
              { timeoutMs: 1_000, session: call },
            );
            resolved++;
            if (r.applied) acked++;
            break;
          } catch (err) {
            if (isKvError(err, "SESSION_EXPIRED")) throw err;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      }
    };
    const clients = Array.from({ length: 4 }, (_, i) => client(i));
    const crashes = STRESS ? 20 : 6;
    for (let k = 0; k < crashes; k++) {
      await new Promise((r) => setTimeout(r, 150 + randInt(random, 200)));
      const leader = c.leader();
      const names = [...c.slots.keys()];
      const name =
        leader !== undefined && random() < 0.7
          ? leader.name
          : names[randInt(random, names.length)]!;
      const disk = disks.get(name)!;
      const slot = c.slot(name);
      disk.retention = [0, 0.5, 0.5, 1][randInt(random, 4)]!;
      disk.seed = randInt(random, 1 << 20);
      disk.sawApply = false;
      disk.sawRaftSync = false;
      disk.armed = point;
      await waitFor(() => disk.crashed !== undefined, `a crash at ${point} on ${name}`, 10_000);
      const old = slot.store;
      slot.store = undefined;
      await old?.close().catch(() => {});
      // Restart on the crashed disk.
      const fresh: Disk = { ...disk, mem: disk.crashed!, armed: undefined, crashed: undefined };
      disks.set(name, fresh);
      wrap(slot, fresh, () => {});
      await c.startMember(name);
    }
    await new Promise((r) => setTimeout(r, 200));
    done = true;
    await Promise.all(clients);
    await assertConverged(c, `seed ${seed}`);
    const final = Number(
      text(await TestCluster.retry(() => c.leader()!.get(bytes("counter")))) ?? "0",
    );
    assert.ok(
      final >= acked && final <= acked + unknown,
      `seed ${seed}: counter ${final}, acknowledged increments ${acked}, unknown ${unknown}`,
    );
    // With sessions every unknown outcome was resolved by resending: exactly the acknowledged.
    if (sessions) assert.equal(final, acked, `seed ${seed}: ${resolved} resolved by resending`);
    assert.ok(acked > 10, `seed ${seed}: only ${acked} increments`);
    assertLinearizable(recorder.operations(), `seed ${seed}`, { timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
}

describe("crash points around apply", () => {
  test("between the Raft log's fsync and the apply", async () => {
    await counterRun("afterRaftSync", testSeed());
  });

  test("between the apply and the applied index reaching the disk", async () => {
    await counterRun("afterApply", testSeed());
  });

  test("with client sessions: an increment of unknown outcome sent again after crashes, restarts and snapshots is applied once, the counter exact", async () => {
    await counterRun("afterApply", testSeed(), true);
    await counterRun("afterRaftSync", testSeed(), true);
  });

  test("in the middle of a snapshot install, at each file operation", async (t) => {
    const seed = testSeed();
    // A dry run counts the file operations of one install; then each is a crash point.
    const plan = async (crashAt: number | undefined) => {
      const c = await TestCluster.start({
        size: 3,
        seed,
        member: { snapshotEntries: 30, catchUpEntries: 5 },
      });
      try {
        const leader = await c.waitForLeader();
        for (let i = 0; i < 10; i++)
          await TestCluster.retry(() => leader.put(bytes(`a${i}`), bytes("x")));
        const lagging = [...c.slots.keys()].find((n) => n !== leader.name)!;
        await c.stop(lagging);
        for (let i = 0; i < 80; i++)
          await TestCluster.retry(() => c.leader()!.put(bytes(`b${i}`), bytes(String(i))));
        const slot = c.slot(lagging);
        const mem = slot.fs as MemoryFileSystem;
        let ops = 0;
        let installing = false;
        let crashed: MemoryFileSystem | undefined;
        slot.fs = new FaultInjectingFileSystem(mem, {
          onOp: (op) => {
            // The install starts with the rename of the received directory.
            if (op.kind === "rename" && op.path.includes("/snap/incoming-")) installing = true;
            if (!installing || crashed !== undefined) return;
            if (ops === crashAt) {
              void slot.transport?.close();
              crashed = mem.crashClone({ unsyncedRetention: 0 });
            }
            ops++;
          },
        });
        const s = await c.startMember(lagging);
        await waitFor(
          () => crashed !== undefined || slot.events.some((e) => e.type === "snapshot-installed"),
          "the install or the crash",
        );
        if (crashed === undefined) {
          await new Promise((r) => setTimeout(r, 50));
          return { ops };
        }
        slot.store = undefined;
        await s.close().catch(() => {});
        slot.fs = crashed;
        await c.startMember(lagging);
        await assertConverged(c, `seed ${seed}, crash at install operation ${crashAt}`);
        const back = c.store(lagging);
        assert.equal(text(await back.get(bytes("b79"))), "79");
        assert.equal(text(await back.get(bytes("a0"))), "x");
        return { ops };
      } finally {
        await c.close();
      }
    };
    const { ops } = await plan(undefined);
    assert.ok(ops > 5, `the install did only ${ops} file operations`);
    const points = STRESS
      ? [...Array(ops).keys()]
      : [...new Set([0, 1, 2, 3, 4, 5, ops - 3, ops - 2, ops - 1, randInt(rng(seed), ops)])];
    for (const at of points) await plan(at);
    t.diagnostic(
      `seed ${seed}: ${ops} file operations in an install; crashed at ${points.length} of them`,
    );
  });
});
