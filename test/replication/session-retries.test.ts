/**
 * Client sessions on a running cluster (docs/cluster.md, "Retries that apply once"): a
 * session opened on one member serves writes through any member; a write sent again
 * under its session and sequence number (through another member) is applied once and
 * answers with its first result; the leader's clock entries
 * advance the cluster time every member holds.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KvStore } from "../../src/db/kv-store.js";
import { CLOCK_KEY } from "../../src/replication/session-table.js";
import { getFixed64 } from "../../src/util/coding.js";
import { bytes, TestCluster, text } from "./support/test-cluster.js";

const member = { electionTicks: 10, proposalTimeoutMs: 20_000 };

describe("client sessions in a cluster", () => {
  test("a write sent again under its session applies once, through any member", async (t) => {
    const c = await TestCluster.start({ size: 3, member });
    t.after(() => c.close());
    const leader = await c.waitForLeader();
    const [f1, f2] = ["n1", "n2", "n3"].filter((n) => n !== leader.name).map((n) => c.store(n));
    const session = await TestCluster.retry(() => f1!.openSession());
    assert.ok(session.id > 0);
    await TestCluster.retry(() => f1!.put(bytes("n"), bytes("0")));
    // Increment 1, answered; then the same write again (a client that did not get the
    // answer): through another member, it answers with the first result, changing nothing.
    const call = { id: session.id, seq: 1, ackedBelow: 1 };
    const first = await f1!.compareAndSwap(bytes("n"), bytes("0"), bytes("1"), { session: call });
    assert.equal(first.applied, true);
    const again = await f2!.compareAndSwap(bytes("n"), bytes("0"), bytes("1"), { session: call });
    assert.deepEqual(again, first);
    assert.equal(text(await f2!.get(bytes("n"))), "1");
    // Without a session the same call is a new write: its comparison fails now.
    const plain = await f2!.compareAndSwap(bytes("n"), bytes("0"), bytes("1"));
    assert.equal(plain.applied, false);
    // The next increment in the session.
    const next = await f2!.compareAndSwap(bytes("n"), bytes("1"), bytes("2"), {
      session: { id: session.id, seq: 2, ackedBelow: 2 },
    });
    assert.equal(next.applied, true);
  });

  test("the leader's clock entries advance the cluster time on every member", async (t) => {
    const c = await TestCluster.start({ size: 3, member });
    t.after(() => c.close());
    await c.waitForLeader();
    await TestCluster.retry(() => c.store("n1").openSession());
    // Clock entries about once a second: after 2.5 s every member applied at least one.
    await new Promise((r) => setTimeout(r, 2500));
    await c.waitForApplied(c.store("n1").status().commit);
    const paths = new Map(["n1", "n2", "n3"].map((n) => [n, c.store(n).storePath]));
    for (const n of ["n1", "n2", "n3"]) await c.stop(n);
    for (const [n, path] of paths) {
      const store = await KvStore.open(path, { fs: c.slot(n).fs });
      const v = await store.get(CLOCK_KEY);
      await store.close();
      assert.ok(v !== undefined && getFixed64(v, 0) >= 1000, `${n}: cluster time ${String(v)}`);
    }
  });
});
