/**
 * Failover and chaos in one process: a leader killed as by a power loss (its disk
 * crash-cloned, nothing more sent) is replaced, restarts from what it had synced and
 * catches up; clients running against a nemesis of crashes and partitions see a
 * linearizable history, and afterwards every member holds the same data.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertLinearizable, HistoryRecorder } from "../support/linearizability/index.js";
import { randInt, rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";
import { assertConverged } from "./support/converged.js";
import { bytes, TestCluster } from "./support/test-cluster.js";
import { runMixed } from "./support/workload.js";

const STRESS = process.env["KV_STRESS"] === "1";

describe("failover", () => {
  test("a crashed leader is replaced; it restarts from its synced data and catches up", async (t) => {
    const c = await TestCluster.start({ size: 3 });
    t.after(() => c.close());
    const old = await c.waitForLeader();
    const acked: string[] = [];
    for (let i = 0; i < 30; i++) {
      await TestCluster.retry(() => old.put(bytes(`k${i}`), bytes(`v${i}`)));
      acked.push(`k${i}`);
    }
    const oldName = old.name;
    await c.crash(oldName, 0);
    const fresh = await c.waitForLeader();
    assert.notEqual(fresh.name, oldName);
    for (let i = 30; i < 60; i++) {
      await TestCluster.retry(() => fresh.put(bytes(`k${i}`), bytes(`v${i}`)));
      acked.push(`k${i}`);
    }
    await c.startMember(oldName);
    await assertConverged(c, "after the restart");
    const back = c.store(oldName);
    for (const k of acked) assert.ok((await back.get(bytes(k))) !== undefined, `${k} lost`);
  });

  test("clients under crashes and partitions see a linearizable history; members converge", async (t) => {
    const seed = testSeed();
    const random = rng(seed);
    const size = STRESS ? 5 : 3;
    const c = await TestCluster.start({ size, seed, network: { seed } });
    t.after(() => c.close());
    await c.waitForLeader();
    const names = [...c.slots.keys()];
    const started = performance.now();
    const recorder = new HistoryRecorder(() => performance.now() - started);
    const runMs = STRESS ? 60_000 : 6_000;
    let done = false;
    const down = new Set<string>();
    const nemesis = (async () => {
      while (!done) {
        await new Promise((r) => setTimeout(r, 200 + randInt(random, 300)));
        if (done) break;
        const action = randInt(random, 4);
        const leader = c.leader();
        if (action === 0 && down.size < Math.floor((size - 1) / 2)) {
          // Kill (the leader, mostly) as a power loss would; restart a little later.
          const up = names.filter((n) => !down.has(n));
          const victim =
            leader !== undefined && random() < 0.7 ? leader.name : up[randInt(random, up.length)]!;
          down.add(victim);
          await c.crash(victim, random() < 0.5 ? 0 : random(), randInt(random, 1000));
          setTimeout(() => {
            void c.startMember(victim).then(() => down.delete(victim));
          }, 100 + randInt(random, 400));
        } else if (action === 1 && leader !== undefined) {
          c.network.isolate(leader.memberId);
          await new Promise((r) => setTimeout(r, 200 + randInt(random, 600)));
          c.network.heal();
        } else if (action === 2) {
          const ids = c.running().map((s) => s.memberId);
          const cut = randInt(random, ids.length - 1) + 1;
          c.network.partition(ids.slice(0, cut), ids.slice(cut));
          await new Promise((r) => setTimeout(r, 200 + randInt(random, 600)));
          c.network.heal();
        } else {
          // A one-way cut from a random member to another.
          const ids = c.running().map((s) => s.memberId);
          if (ids.length >= 2) {
            c.network.cut(ids[0]!, ids[1]!);
            await new Promise((r) => setTimeout(r, 200 + randInt(random, 400)));
            c.network.heal();
          }
        }
      }
      c.network.heal();
    })();
    const clients = runMixed(
      {
        clients: STRESS ? 8 : 4,
        keys: ["a", "b", "c", "d"],
        random,
        members: () => c.running(),
        stop: () => done,
        timeoutMs: 1_000,
      },
      recorder,
    );
    await new Promise((r) => setTimeout(r, runMs));
    done = true;
    await Promise.all([nemesis, clients]);
    await waitFor(() => down.size === 0, "every member restarted", 10_000);
    const history = recorder.operations();
    const completed = history.filter((o) => o.output !== undefined).length;
    assert.ok(completed > 50, `seed ${seed}: only ${completed} operations completed`);
    const unknown = history.filter((o) => o.output === undefined).length;
    t.diagnostic(`seed ${seed}: ${completed} operations completed, ${unknown} unknown`);
    assertLinearizable(history, `seed ${seed}`, { timeoutMs: 30_000 });
    await assertConverged(c, `seed ${seed}`);
  });
});
