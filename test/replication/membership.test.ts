/**
 * Membership: a member added under load joins as a learner and is promoted once caught
 * up; removing the leader hands the cluster to the others and the removed member serves
 * nothing (and refuses to start again); leadership transfers; status per member. The
 * clients' history across the changes is linearizable.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { isKvError } from "../../src/errors.js";
import { PutRequestSchema } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { assertLinearizable, HistoryRecorder } from "../support/linearizability/index.js";
import { rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";
import { runMixed } from "./support/workload.js";

describe("membership", () => {
  test("under load, a member is added (learner, then voter) and the leader removed; the history stays linearizable", async (t) => {
    const seed = testSeed();
    const random = rng(seed);
    const c = await TestCluster.start({
      size: 3,
      seed,
      member: { snapshotEntries: 200, catchUpEntries: 50 },
    });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const started = performance.now();
    const recorder = new HistoryRecorder(() => performance.now() - started);
    let done = false;
    const clients = runMixed(
      {
        clients: 4,
        keys: ["a", "b", "c"],
        random,
        members: () => c.running().filter((s) => !s.status().removed),
        stop: () => done,
        timeoutMs: 2_000,
      },
      recorder,
    );
    await new Promise((r) => setTimeout(r, 500));
    const slot = c.addSlot("n4", "127.0.0.1:7004", "127.0.0.1:8004");
    const added = await TestCluster.retry(() =>
      c.store("n2").addMember({
        name: "n4",
        peerAddress: slot.peerAddress,
        clientAddress: slot.clientAddress,
      }),
    );
    assert.equal(added.learner, true);
    assert.equal(added.name, "n4");
    slot.extra = {
      initialClusterState: "existing",
      join: { clusterId: leader.clusterId, memberId: added.id },
    };
    const n4 = await c.startMember("n4", `${c.initialCluster},n4=${slot.peerAddress}`);
    await waitFor(
      () => c.running().every((s) => s.members().some((m) => m.id === n4.memberId && !m.learner)),
      "n4 promoted to voter everywhere",
    );
    assert.equal(n4.status().role === "learner", false);
    await waitFor(
      () =>
        (c
          .leader()
          ?.members()
          .find((m) => m.id === n4.memberId)?.clientAddress ?? "") === slot.clientAddress,
      "n4's client address published",
    );
    // Remove whoever leads now.
    const lead = await c.waitForLeader();
    await TestCluster.retry(() => lead.removeMember(lead.memberId));
    await waitFor(() => lead.status().removed, "the removed leader knows it");
    await waitFor(
      () => c.running().some((s) => s !== lead && s.status().role === "leader"),
      "a new leader",
    );
    await new Promise((r) => setTimeout(r, 500));
    done = true;
    await clients;
    assert.ok(lead.status().removed);
    // A removed member serves nothing and says so as UNAVAILABLE (nothing done), so that
    // clients go on to another member.
    const removedAnswer = (err: unknown) =>
      isKvError(err, "UNAVAILABLE") && /removed/.test(String(err));
    await assert.rejects(lead.put(bytes("x"), bytes("y")), removedAnswer);
    await assert.rejects(lead.get(bytes("x")), removedAnswer);
    const history = recorder.operations();
    t.diagnostic(`seed ${seed}: ${history.length} operations`);
    assertLinearizable(history, `seed ${seed}`, { timeoutMs: 30_000 });
    // The removed member leaves; the other three agree; it cannot start again.
    await c.stop(lead.name);
    await assertConverged(c, `seed ${seed}`);
    await assert.rejects(
      c.startMember(lead.name),
      (err) => isKvError(err, "FAILED_PRECONDITION") && /removed/.test(String(err)),
    );
    const voters = c.leader()!.members();
    assert.equal(voters.length, 3);
    assert.ok(voters.every((m) => !m.learner && m.id !== lead.memberId));
  });

  test("leadership moves to the member named, and status describes every member", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    await TestCluster.retry(() => leader.put(bytes("k"), bytes("v")));
    const target = c.running().find((s) => s !== leader)!;
    await leader.transferLeadership(target.memberId);
    await waitFor(() => c.leader() === target, "the target leads");
    // A follower can ask too (the core forwards the request).
    const back = c.running().find((s) => s !== target)!;
    await back.transferLeadership(leader.memberId);
    await waitFor(() => c.leader() === leader, "leadership back");
    const st = leader.status();
    assert.equal(st.role, "leader");
    assert.equal(st.leader, leader.memberId);
    assert.ok(st.commit >= 2 && st.applied <= st.commit);
    const view = leader.members();
    assert.equal(view.length, 3);
    for (const m of view) {
      assert.ok(m.progress !== undefined, "the leader reports each member's progress");
      if (m.id !== leader.memberId) {
        assert.ok(m.lastContactMs !== undefined && m.lastContactMs < 5_000);
      }
    }
    assert.equal(text(await target.get(bytes("k"))), "v");
    await assert.rejects(leader.transferLeadership(12345), (err) =>
      isKvError(err, "FAILED_PRECONDITION"),
    );
    const stats = leader.clusterStats();
    assert.ok(stats.leaderChanges >= 1 && stats.isLeader && stats.proposalsCommitted >= 1);
  });

  test("adding a member with a taken name or address is refused before it is proposed", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    await assert.rejects(leader.addMember({ name: "n2", peerAddress: "127.0.0.1:7777" }), (err) =>
      isKvError(err, "FAILED_PRECONDITION"),
    );
    await assert.rejects(leader.addMember({ name: "n9", peerAddress: "127.0.0.1:7002" }), (err) =>
      isKvError(err, "FAILED_PRECONDITION"),
    );
    await assert.rejects(leader.addMember({ name: "bad name", peerAddress: "x:1" }), (err) =>
      isKvError(err, "INVALID_ARGUMENT"),
    );
    await assert.rejects(leader.removeMember(4242), (err) => isKvError(err, "FAILED_PRECONDITION"));
  });
});

test("a member added and not yet caught up (no snapshot installed) refuses the multi-version API as UNAVAILABLE, not as a store that predates revisions", async (t) => {
  const c = await TestCluster.start({ size: 3 });
  t.after(() => c.close());
  const leader = await c.waitForLeader();
  const slot = c.addSlot("n4", "127.0.0.1:7004", "127.0.0.1:8004");
  const added = await TestCluster.retry(() =>
    c.store("n2").addMember({ name: "n4", peerAddress: slot.peerAddress }),
  );
  slot.extra = {
    initialClusterState: "existing",
    join: { clusterId: leader.clusterId, memberId: added.id },
  };
  // Cut off before it starts: it gets no snapshot.
  c.network.isolate(added.id);
  const n4 = await c.startMember("n4", `${c.initialCluster},n4=${slot.peerAddress}`);
  const put = create(PutRequestSchema, { key: bytes("k"), value: bytes("v") });
  for (const call of [
    () => n4.request({ kind: "put", request: put }),
    () => n4.view({ serializable: true }),
  ]) {
    await assert.rejects(call, (err: unknown) => {
      assert.ok(isKvError(err), String(err));
      assert.equal(err.code, "UNAVAILABLE", err.message);
      return true;
    });
  }
});
