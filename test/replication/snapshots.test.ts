/**
 * Snapshots: the log is compacted behind store checkpoints; a member that fell behind the
 * compaction catches up from a streamed snapshot, installed by switching its store; a
 * wiped member removed and added back under a new ID does too, while its old identity is
 * refused.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

const SMALL_LOG = { snapshotEntries: 40, catchUpEntries: 10 };

async function writeMany(c: TestCluster, from: number, to: number): Promise<void> {
  const leader = await c.waitForLeader();
  const pending: Promise<void>[] = [];
  for (let i = from; i < to; i++) {
    pending.push(
      TestCluster.retry(() => leader.put(bytes(`k${String(i).padStart(4, "0")}`), bytes(`v${i}`))),
    );
    if (pending.length >= 16) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
}

describe("snapshots", () => {
  test("a member behind the compacted log catches up from a snapshot and switches its store", async (t) => {
    const c = await TestCluster.start({ size: 3, member: SMALL_LOG });
    t.after(() => c.close());
    await writeMany(c, 0, 20);
    await c.stop("n3");
    await writeMany(c, 20, 200);
    const leader = await c.waitForLeader();
    await waitFor(() => leader.status().snapshotIndex > 100, "a snapshot on the leader");
    assert.ok(leader.status().firstIndex > 30, "the leader compacted its log");
    const n3 = await c.startMember("n3");
    await waitFor(
      () => c.slot("n3").events.some((e) => e.type === "snapshot-installed"),
      "a snapshot installed on n3",
    );
    await assertConverged(c, "after catch-up");
    assert.match(n3.storePath, /\/n3\/store-\d+$/);
    const fs = c.slot("n3").fs as MemoryFileSystem;
    assert.deepEqual(
      (await fs.list("/n3")).filter((n) => n.startsWith("store")),
      [n3.storePath.split("/").pop()],
      "the old store is removed",
    );
    assert.equal(text(await n3.get(bytes("k0199"))), "v199");
    assert.ok(
      leader.clusterStats().snapshotsSent + c.store("n2").clusterStats().snapshotsSent >= 1,
    );
    // It restarts from the installed store.
    await c.stop("n3");
    await c.startMember("n3");
    assert.equal(text(await TestCluster.retry(() => c.store("n3").get(bytes("k0150")))), "v150");
  });

  test("a wiped member is removed and added back under a new ID; its old identity is refused", async (t) => {
    const c = await TestCluster.start({ size: 3, member: SMALL_LOG });
    t.after(() => c.close());
    await writeMany(c, 0, 60);
    const oldId = c.store("n3").memberId;
    await c.crash("n3", 1);
    const oldDisk = c.slot("n3").fs as MemoryFileSystem;
    await writeMany(c, 60, 150);
    const leader = await c.waitForLeader();
    await TestCluster.retry(() => leader.removeMember(oldId));
    assert.ok(leader.members().every((m) => m.id !== oldId));
    const slot = c.slot("n3");
    const added = await TestCluster.retry(() =>
      leader.addMember({
        name: "n3",
        peerAddress: slot.peerAddress,
        clientAddress: slot.clientAddress,
      }),
    );
    assert.notEqual(added.id, oldId);
    assert.equal(added.learner, true);
    // The wiped member starts empty and joins with the IDs MemberAdd gave.
    slot.fs = new MemoryFileSystem();
    slot.extra = {
      initialClusterState: "existing",
      join: { clusterId: leader.clusterId, memberId: added.id },
    };
    const fresh = await c.startMember("n3");
    assert.equal(fresh.memberId, added.id);
    await waitFor(
      () => slot.events.some((e) => e.type === "snapshot-installed"),
      "the new member installs a snapshot",
    );
    await waitFor(
      () => leader.members().some((m) => m.id === added.id && !m.learner),
      "the new member promoted to voter",
    );
    await writeMany(c, 150, 170);
    await assertConverged(c, "after the re-add");
    // The old incarnation, started from its old disk, is refused by the others.
    const refusedBefore = c.network.counts.refused;
    const ghostSlot = c.addSlot("ghost", "127.0.0.1:7999", "127.0.0.1:8999");
    ghostSlot.fs = oldDisk;
    ghostSlot.dataDir = "/n3";
    // It believes it is n3 of the cluster; it has no way to learn it was removed but
    // from its peers, who refuse its messages.
    const ghost = await import("../../src/replication/replicated-store.js").then(
      ({ ReplicatedStore }) =>
        ReplicatedStore.open({
          dataDir: "/n3",
          fs: oldDisk,
          name: "n3",
          initialCluster: c.initialCluster,
          transport: c.network.transport(),
          tickMs: 20,
        }),
    );
    t.after(() => ghost.close());
    await waitFor(
      () => c.network.counts.refused > refusedBefore,
      "the removed member's messages refused",
    );
    assert.ok(leader.members().every((m) => m.id !== oldId));
    await assert.rejects(ghost.put(bytes("x"), bytes("y"), { timeoutMs: 300 }), (err) =>
      isKvError(err),
    );
  });

  test("a snapshot stream that breaks midway is retried and the follower still catches up", async (t) => {
    const c = await TestCluster.start({
      size: 3,
      member: SMALL_LOG,
      network: { snapshotChunkBytes: 512 },
    });
    t.after(() => c.close());
    await writeMany(c, 0, 10);
    await c.stop("n3");
    await writeMany(c, 10, 150);
    let breaks = 3;
    c.network.onSnapshotChunk = (_from, _to, _file, offset) => {
      if (offset > 0 && breaks > 0) {
        breaks--;
        throw new Error("stream broken by the test");
      }
    };
    await c.startMember("n3");
    await waitFor(
      () => c.slot("n3").events.some((e) => e.type === "snapshot-installed"),
      "a snapshot installed",
    );
    assert.equal(breaks, 0);
    const fs = c.slot("n3").fs as MemoryFileSystem;
    assert.deepEqual(
      (await fs.list("/n3/snap")).filter((n) => n.startsWith("incoming")),
      [],
      "broken streams leave nothing behind",
    );
    await assertConverged(c, "after broken streams");
  });
});
