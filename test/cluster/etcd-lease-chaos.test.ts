/**
 * Leases under faults (issue 30, point 7): real `kv-engine serve` members with every peer
 * link through a TCP proxy, the seeded nemesis (kill -9, SIGSTOP, leader isolation,
 * splits, one-way cuts, slow links), and a kill -9 of the leader in the middle of the run
 * whatever the nemesis drew (a run whose keep-alives saw no leader killed would prove
 * nothing: the count is asserted), while the loops of test/support/etcd-lease-workload.ts
 * run on every member:
 *
 * - leases kept alive every TTL/3 never expire, and are there at the end with their keys;
 * - a lease left alone has its key gone within its TTL + twice the longest election
 *   timeout (2 x 2 x election ticks x tick) after its last acknowledged renewal, per
 *   leader change in between (at least once): each new leader starts counting from the
 *   lease's replicated remaining time after the time without a leader and its grace
 *   (docs/etcd.md, "Leases"), so two failovers inside one TTL may add two such bounds, and
 *   a time without any leader (a member killed while another is cut off: no quorum) does
 *   not count at all;
 * - fenced lock holders (v3lock on leases of their own, kept alive) never both get fenced
 *   writes applied out of lock order;
 * - at the end, every member answers Maintenance.HashKV with the same hash at the same
 *   revision.
 *
 * 3 members for ~8 s by default; KV_STRESS=1 runs 5 for 2 minutes; KV_SEED replays a
 * schedule (timing differs).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { assertConverged, waitAgreedLeader } from "../support/cluster-checks.js";
import { ProcessCluster, TEST_TIMING } from "../support/cluster-processes.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import {
  type AbandonedLeases,
  abandonLeases,
  checkFencing,
  type FencedLocker,
  fencedLocker,
  type KeptLease,
  keepLease,
  type LoopContext,
  TermTracker,
} from "../support/etcd-lease-workload.js";
import { EtcdMaintenanceClient } from "../support/etcd-maintenance-client.js";
import { Nemesis } from "../support/nemesis.js";
import { rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";

const STRESS = process.env["KV_STRESS"] === "1";
const SIZE = STRESS ? 5 : 3;
const RUN_MS = STRESS ? 120_000 : 8_000;
/** The test clusters' timing (TEST_TIMING): the longest election timeout is 2 x 10 x 50 ms. */
const MAX_ELECTION_MS = 2 * 10 * 50;
const BOUND_MS = 2 * MAX_ELECTION_MS;
const KEPT_TTL = 3;
const LEFT_TTLS = [1, 2, 3];
const LOCK_TTL = 3;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const enc = (s: string) => new TextEncoder().encode(s);

describe(`etcd lease chaos: ${SIZE} member processes`, () => {
  test("leases kept alive never expire, left ones expire within TTL + 2 election timeouts, fenced locks stay ordered, HashKV agrees, through kill -9 of the leader and the nemesis", async (t) => {
    assert.deepEqual(TEST_TIMING, ["--tick-ms", "50", "--election-ticks", "10"]);
    const seed = testSeed();
    const context = `seed ${seed} (replay: KV_SEED=${seed}${STRESS ? " KV_STRESS=1" : ""})`;
    t.diagnostic(context);
    const members = Array.from({ length: SIZE }, (_, i) => `n${i + 1}`);
    const cluster = await ProcessCluster.start(members, { proxies: true });
    let nemesis: Nemesis | undefined;
    t.after(async () => {
      nemesis?.cleanup();
      await cluster.stop();
    });
    await waitAgreedLeader(cluster, members);
    const addresses = members.map((n) => cluster.member(n).clientAddress);
    const started = performance.now();
    const steps: string[] = [];
    const now = () => Math.round(performance.now() - started);
    const note = (s: string) => steps.push(`+${(now() / 1000).toFixed(2)}s ${s}`);
    let done = false;
    const ctx: LoopContext = { stop: () => done, now, note };

    const kept: KeptLease[] = members.map((n) => ({
      key: `lease/kept/${n}`,
      id: 0n,
      keepAlives: 0,
      failedKeepAlives: 0,
      violations: [],
    }));
    const left: AbandonedLeases = {
      leases: [],
      violations: [],
      worstOverrunMs: 0,
      mostChanges: 0,
    };
    const terms = new TermTracker(addresses);
    const lockers: FencedLocker[] = ["a", "b", "c"].map((name) => ({
      name,
      writes: [],
      acquisitions: 0,
      refused: 0,
    }));
    // The kept leases' loops apart: they are checked as soon as these end (the others can
    // take longer to end, e.g. a Lock call waiting up to its deadline, past KEPT_TTL).
    const keptLoops = Promise.all(
      kept.map((k, i) => keepLease(addresses, i, k.key, KEPT_TTL, ctx, k)),
    );
    const loops = Promise.all([
      keptLoops,
      abandonLeases(addresses, LEFT_TTLS, 400, BOUND_MS, terms, rng(seed + 1), ctx, left),
      ...lockers.map((l, i) =>
        fencedLocker(addresses, i, "lock/fenced", "fenced/resource", LOCK_TTL, ctx, l),
      ),
    ]);
    let leaderKills = 0;
    try {
      await sleep(1500);
      nemesis = new Nemesis(cluster, { random: rng(seed + 2), maxDown: STRESS ? 2 : 1 });
      let chaosDone = false;
      const chaos = nemesis.run(() => chaosDone);
      await sleep(RUN_MS / 2);
      chaosDone = true;
      await chaos;
      note(`nemesis: ${[...nemesis.counts].map(([k, n]) => `${k} x${n}`).join(", ")}`);
      // The leader killed while every keep-alive loop runs, whatever the nemesis drew.
      const leader = await waitAgreedLeader(cluster, members);
      await cluster.signal(leader, "SIGKILL");
      leaderKills++;
      note(`${leader} (the leader) killed`);
      await sleep(1500);
      await cluster.startMember(leader);
      note(`${leader} restarted`);
      await sleep(RUN_MS / 2);
      done = true;
      await keptLoops;

      const failures: string[] = [];
      // The kept leases are still there, with their keys.
      const client = new EtcdGrpcClient(addresses[0]!, {}, 5000);
      try {
        for (const k of kept) {
          const ttl = await client.leaseTimeToLive({ ID: k.id });
          if (ttl.TTL <= 0n)
            failures.push(`${k.key}: lease ${k.id} is gone at the end (TTL ${ttl.TTL})`);
          const r = await client.range({ key: enc(k.key) });
          if (r.kvs.length !== 1) failures.push(`${k.key}: its key is gone at the end`);
        }
      } finally {
        client.close();
      }
      await loops;
      note("loops ended");
      for (const k of kept) failures.push(...k.violations);
      failures.push(...left.violations, ...checkFencing(lockers.flatMap((l) => l.writes)));
      const judged = left.leases.filter((a) => !a.unsure && a.goneBy !== undefined).length;
      t.diagnostic(
        `${context}: kept ${kept.map((k) => `${k.key} ${k.keepAlives} keep-alives (${k.failedKeepAlives} unanswered)`).join(", ")}; left ${left.leases.length} leases, ${judged} judged, worst overrun ${Math.round(left.worstOverrunMs)} ms (bound ${BOUND_MS} per leader change; at most ${left.mostChanges} changes in one lease's window); locks ${lockers.map((l) => `${l.name} ${l.acquisitions} acquired, ${l.writes.length} fenced writes, ${l.refused} refused`).join(", ")}; leader kills ${leaderKills}`,
      );
      assert.ok(leaderKills >= 1, "no leader was killed while the keep-alives ran");
      assert.ok(judged >= 5, `only ${judged} left leases judged`);
      assert.ok(
        lockers.filter((l) => l.writes.length > 0).length >= 2,
        "fewer than two lock holders got fenced writes applied",
      );
      if (failures.length > 0) throw new Error(`${context}:\n${failures.join("\n")}`);

      await assertConverged(cluster, members, context);
      // HashKV at one revision on every member.
      const clients = addresses.map((a) => new EtcdGrpcClient(a, {}, 5000));
      try {
        const revision = Number(
          (await clients[0]!.range({ key: enc("x") })).header?.revision ?? 0n,
        );
        await waitFor(
          async () => {
            const rs = await Promise.all(
              clients.map((c) => c.range({ key: enc("x"), serializable: true })),
            );
            return rs.every((r) => Number(r.header?.revision ?? 0n) >= revision);
          },
          `every member at revision ${revision}`,
          10_000,
        );
        const hashes = await Promise.all(
          addresses.map(async (a) => {
            const m = new EtcdMaintenanceClient(a, {}, 5000);
            try {
              return await m.hashKv(BigInt(revision));
            } finally {
              m.close();
            }
          }),
        );
        t.diagnostic(`${context}: HashKV at ${revision}: ${hashes.map((h) => h.hash).join(", ")}`);
        for (const [i, h] of hashes.entries()) {
          assert.equal(
            h.hash,
            hashes[0]!.hash,
            `${members[i]}'s HashKV at ${revision} differs from ${members[0]}'s`,
          );
        }
      } finally {
        for (const c of clients) c.close();
      }
    } catch (err) {
      t.diagnostic(`${context}: steps: ${steps.join("; ")}`);
      for (const m of cluster.members.values()) {
        const file = join(tmpdir(), `etcd-lease-chaos-${process.pid}-${m.name}.log`);
        writeFileSync(file, m.stderr);
        t.diagnostic(`${context}: ${m.name}'s log in ${file}`);
      }
      for (const line of nemesis?.log ?? []) t.diagnostic(`  ${line}`);
      throw err;
    } finally {
      done = true;
      await loops.catch(() => {});
      await terms.stop();
    }
    t.diagnostic(`${context}: steps: ${steps.join("; ")}`);
  });
});
