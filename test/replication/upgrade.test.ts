/**
 * A cluster made before revisions (its stores in the first layout: kv.v1 only) given
 * revisions through the log: the leader started with `upgradeRevisions` proposes the
 * upgrade entry, every member converts its store at it (the same revisions everywhere:
 * every key at revision 1), later writes get revisions 2, 3, ...; a member down during the
 * upgrade converts when it replays the entry, one that fell behind the compacted log gets
 * the converted store from a snapshot; client sessions survive.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

const EMPTY = new Uint8Array(0);

test("a cluster without revisions is given them through the log, the same on every member", async (t) => {
  const c = await TestCluster.start({
    size: 3,
    member: { bootstrapWithoutRevisions: true, snapshotEntries: 60, catchUpEntries: 10 },
  });
  t.after(() => c.close());
  let leader = await c.waitForLeader();
  for (let i = 0; i < 20; i++) {
    await TestCluster.retry(() =>
      leader.put(bytes(`k${String(i).padStart(2, "0")}`), bytes(`v${i}`)),
    );
  }
  await assert.rejects(leader.view(), (e) => isKvError(e, "FAILED_PRECONDITION"));
  // n3 misses the upgrade and much after it: it catches up from a snapshot.
  await c.stop("n3");
  // Every member restarts with the option; the leader proposes the upgrade.
  for (const name of ["n1", "n2"]) {
    await c.stop(name);
    c.slot(name).extra = { upgradeRevisions: true };
    await c.startMember(name);
  }
  leader = await c.waitForLeader();
  await waitFor(
    () => c.running().every((s) => s.revision >= 1),
    "the running members converted",
    10_000,
  );
  for (const s of c.running()) {
    const view = await s.view({ serializable: true });
    try {
      const all = await view.range(bytes("k"), bytes("l"));
      assert.equal(all.kvs.length, 20, s.name);
      assert.deepEqual(
        [...new Set(all.kvs.map((kv) => `${kv.createRevision}/${kv.modRevision}/${kv.version}`))],
        ["1/1/1"],
        `${s.name}: every key at revision 1`,
      );
    } finally {
      view.release();
    }
  }
  for (let i = 0; i < 120; i++) {
    await TestCluster.retry(() =>
      leader.put(bytes(`k${String(i % 30).padStart(2, "0")}`), bytes(`w${i}`)),
    );
  }
  const view = await leader.view();
  const k05 = (await view.range(bytes("k05"), EMPTY)).kvs[0]!;
  view.release();
  assert.equal(text(k05.value), "w95");
  assert.deepEqual([k05.createRevision, k05.version], [1, 5], "k05: created at 1, four puts since");
  c.slot("n3").extra = { upgradeRevisions: true };
  await c.startMember("n3");
  await waitFor(
    () => c.slot("n3").events.some((e) => e.type === "snapshot-installed"),
    "n3 caught up from a snapshot",
    20_000,
  );
  await assertConverged(c, "after the upgrade");
});

test("a member down during the upgrade converts when it replays the entry", async (t) => {
  const c = await TestCluster.start({ size: 3, member: { bootstrapWithoutRevisions: true } });
  t.after(() => c.close());
  const leader = await c.waitForLeader();
  for (let i = 0; i < 10; i++)
    await TestCluster.retry(() => leader.put(bytes(`a${i}`), bytes("x")));
  await c.stop("n3");
  for (const name of ["n1", "n2"]) {
    await c.stop(name);
    c.slot(name).extra = { upgradeRevisions: true };
    await c.startMember(name);
  }
  await c.waitForLeader();
  await waitFor(() => c.running().every((s) => s.revision >= 1), "converted", 10_000);
  const l = await c.waitForLeader();
  await TestCluster.retry(() => l.put(bytes("a0"), bytes("y")));
  // n3 restarts without the option: it converts at the entry all the same.
  await c.startMember("n3");
  await waitFor(() => c.store("n3").revision === 2, "n3 replayed the upgrade and the put", 10_000);
  await assertConverged(c, "after n3 replayed");
});
