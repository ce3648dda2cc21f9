/**
 * The multi-process chaos suite (issue 19, points 9 and 10): real `kv-engine serve`
 * members on 127.0.0.1, every peer link through a TCP proxy, client loops recording every
 * operation, and a seeded nemesis (test/support/nemesis.ts) that kills -9 and restarts
 * members (the leader often), pauses them (SIGSTOP / SIGCONT), isolates the leader, splits
 * the cluster, cuts links one way and slows them. After healing: the history passes the
 * linearizability checker (final reads of every key included), every member serves the
 * same contents, no acknowledged write is missing, and a counter advanced by
 * compare-and-swap ends at its acknowledged increments plus at most the maybe ones.
 * A second test changes the membership under load: a fourth member added as a learner and
 * promoted, the leader removed, and a member whose data directory was wiped removed and
 * added back under a new ID, catching up from a snapshot after the log was compacted.
 *
 * 3 members for ~12 s of nemesis by default; KV_STRESS=1 runs 5 for 3 minutes; KV_SEED
 * replays a nemesis schedule.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { describe, type TestContext, test } from "node:test";
import { KvClient } from "../../src/client/kv-client.js";
import { resolveUnresolved, runWorkload, type WorkloadResult } from "../support/chaos-workload.js";
import { assertConverged, waitAgreedLeader } from "../support/cluster-checks.js";
import { addMember, joinArgs, removeMember } from "../support/cluster-membership.js";
import { freePort, ProcessCluster } from "../support/cluster-processes.js";
import { assertLinearizable, HistoryRecorder } from "../support/linearizability/index.js";
import { Nemesis } from "../support/nemesis.js";
import { rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";

const STRESS = process.env["KV_STRESS"] === "1";
const SIZE = STRESS ? 5 : 3;
const KEYS = ["a", "b", "c", "d"];
const COUNTER = "counter";
/** Client deadline per call: a paused leader holds calls until it. */
const CALL_MS = 2000;

function names(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `n${i + 1}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * After healing and convergence: final linearizable reads of every key join the history,
 * which must be linearizable; the write-once keys and the counter are checked against
 * what was acknowledged.
 */
async function checkAfterHealing(
  t: TestContext,
  context: string,
  kv: KvClient,
  recorder: HistoryRecorder,
  result: WorkloadResult,
  contents: Map<string, string>,
): Promise<void> {
  const finalClient = 1000;
  for (const key of [...KEYS, COUNTER]) {
    const h = recorder.invoke(finalClient, key, { type: "get" });
    const v = await kv.get(key, { timeoutMs: 10_000 });
    recorder.complete(h, { type: "get", value: v?.toString("utf8") });
  }
  // Every check runs; the failures are reported together (which ones caught a bug says
  // much about it).
  const failures: string[] = [];
  const check = (what: string, f: () => void) => {
    try {
      f();
    } catch (err) {
      failures.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  check("linearizability", () => {
    const checked = assertLinearizable(recorder.operations(), context, { timeoutMs: 60_000 });
    t.diagnostic(
      `${context}: ${checked.operations} operations on ${checked.keys} keys linearizable (${checked.steps} steps)`,
    );
  });
  check("errors", () => assert.deepEqual(result.unexpected, [], "unexpected errors"));
  check("acknowledged writes", () => {
    const missing = [...result.acked].filter(([k, v]) => contents.get(k) !== v);
    assert.deepEqual(missing, [], "acknowledged write-once puts missing or changed");
    const stray = [...contents.keys()].filter(
      (k) => k.startsWith("w/") && !result.acked.has(k) && !result.maybe.has(k),
    );
    assert.deepEqual(stray, [], "write-once keys nobody wrote");
    for (const [k, v] of result.maybe) {
      const got = contents.get(k);
      assert.ok(got === undefined || got === v, `${k} holds ${got}, not ${v}`);
    }
  });
  check("counter", () => {
    const counter = Number(contents.get(COUNTER) ?? "0");
    // Every increment of unknown outcome was resolved by resending it under its session
    // (the clients keep one): the counter is the acknowledged increments exactly.
    assert.equal(
      result.counterMaybe,
      0,
      `${result.counterMaybe} increments left of unknown outcome (not resolved by resending)`,
    );
    assert.equal(
      counter,
      result.counterAcked,
      `the counter is ${counter}, but ${result.counterAcked} increments were acknowledged`,
    );
  });
  check("progress", () =>
    assert.ok(result.completed > 100, `only ${result.completed} operations answered`),
  );
  if (failures.length > 0) throw new Error(`${context}:\n${failures.join("\n")}`);
}

describe(`chaos: ${SIZE} member processes`, () => {
  test("under kill -9, SIGSTOP, leader isolation, splits and one-way cuts: linearizable, converged, nothing acknowledged lost, the CAS counter exact", async (t) => {
    const seed = testSeed();
    const context = `seed ${seed} (replay: KV_SEED=${seed}${STRESS ? " KV_STRESS=1" : ""})`;
    t.diagnostic(context);
    const members = names(SIZE);
    const cluster = await ProcessCluster.start(members, { proxies: true });
    const nemesis = new Nemesis(cluster, {
      random: rng(seed),
      maxDown: STRESS ? 2 : 1,
      holdMs: [500, STRESS ? 3000 : 2000],
    });
    const clients: KvClient[] = [];
    t.after(async () => {
      nemesis.cleanup();
      for (const kv of clients) kv.close();
      await cluster.stop();
    });
    await waitAgreedLeader(cluster, members);
    const started = performance.now();
    const recorder = new HistoryRecorder(
      () => Math.round((performance.now() - started) * 1000) / 1000,
    );
    let done = false;
    const work = runWorkload(
      {
        clients: STRESS ? 6 : 3,
        counterClients: STRESS ? 3 : 2,
        keys: KEYS,
        counterKey: COUNTER,
        random: rng(seed + 1),
        endpoints: members.map((n) => cluster.member(n).clientAddress),
        client: (list) => {
          const kv = new KvClient(list, { timeoutMs: CALL_MS });
          clients.push(kv);
          return kv;
        },
        stop: () => done,
        timeoutMs: CALL_MS,
      },
      recorder,
    );
    const chaos = nemesis.run(() => done);
    await sleep(STRESS ? 180_000 : 12_000);
    done = true;
    const [result] = await Promise.all([work, chaos]);
    // Healed: each increment of unknown outcome is sent again under its session until
    // answered, so that the counter can be checked exactly.
    await resolveUnresolved(result, 60_000);
    t.diagnostic(
      `${context}: nemesis ${[...nemesis.counts].map(([k, n]) => `${k} x${n}`).join(", ")}`,
    );
    t.diagnostic(`${context}: ${result.summary()}`);
    try {
      const contents = await assertConverged(cluster, members, context);
      await checkAfterHealing(
        t,
        context,
        cluster.client(members, 10_000),
        recorder,
        result,
        contents,
      );
    } catch (err) {
      t.diagnostic(`${context}: nemesis log:`);
      for (const line of nemesis.log) t.diagnostic(`  ${line}`);
      throw err;
    }
  });

  test("membership under load: a learner added and promoted, the leader removed, a wiped member re-added under a new ID catching up from a snapshot after compaction", async (t) => {
    const seed = testSeed();
    const context = `seed ${seed}`;
    const members = names(3);
    // Small snapshot and compaction policies, so the log is compacted within seconds.
    const policy = ["--snapshot-entries", "100", "--catch-up-entries", "20"];
    const cluster = await ProcessCluster.start(members, { proxies: true, extraArgs: policy });
    t.after(() => cluster.stop());
    await waitAgreedLeader(cluster, members);
    const n4Client = await freePort();
    const n4Peer = await freePort();
    const addresses = [
      ...members.map((n) => cluster.member(n).clientAddress),
      `127.0.0.1:${n4Client}`,
    ];
    const clients: KvClient[] = [];
    const newClient = (list: readonly string[]) => {
      const c = new KvClient(list, { timeoutMs: CALL_MS });
      clients.push(c);
      return c;
    };
    t.after(() => {
      for (const c of clients) c.close();
    });
    const admin = new KvClient(addresses, { timeoutMs: 10_000 });
    clients.push(admin);
    const started = performance.now();
    const recorder = new HistoryRecorder(
      () => Math.round((performance.now() - started) * 1000) / 1000,
    );
    let done = false;
    const work = runWorkload(
      {
        clients: 3,
        counterClients: 2,
        keys: KEYS,
        counterKey: COUNTER,
        random: rng(seed + 1),
        endpoints: addresses,
        client: newClient,
        stop: () => done,
        timeoutMs: CALL_MS,
      },
      recorder,
    );
    const steps: string[] = [];
    const step = (s: string) =>
      steps.push(`+${((performance.now() - started) / 1000).toFixed(1)}s ${s}`);
    try {
      await sleep(1000);
      // A fourth member joins as a learner and is promoted once caught up.
      const n4 = await addMember(admin, {
        name: "n4",
        peerAddress: `127.0.0.1:${n4Peer}`,
        clientAddress: `127.0.0.1:${n4Client}`,
      });
      step(`added n4 ${n4.member.id.toString(16)} as learner=${n4.member.learner}`);
      assert.equal(n4.member.learner, true);
      await cluster.startMember(
        "n4",
        `127.0.0.1:${n4Client}`,
        `127.0.0.1:${n4Peer}`,
        joinArgs("n4", n4Client, n4.members, policy),
      );
      await waitFor(
        async () =>
          (await admin.memberList()).members.find((m) => m.name === "n4")?.learner === false,
        `${context}: n4 promoted`,
        20_000,
      );
      step("n4 promoted");
      // The leader is removed; the rest elect another.
      const lead = await waitAgreedLeader(cluster, ["n1", "n2", "n3", "n4"]);
      await removeMember(admin, cluster.member(lead).memberId, step);
      step(`removed the leader ${lead}`);
      const rest = ["n1", "n2", "n3", "n4"].filter((n) => n !== lead);
      await waitFor(
        async () => (await cluster.healthOf(lead)) !== "SERVING",
        `${context}: ${lead} not SERVING once removed`,
        20_000,
      );
      await cluster.signal(lead, "SIGKILL");
      await waitAgreedLeader(cluster, rest);
      // KV_STRESS=1: three rounds, each wiping another follower.
      for (let round = 0; round < (STRESS ? 3 : 1); round++) {
        // A follower loses its data: killed, wiped, removed; the log moves on and is compacted.
        const now = await waitAgreedLeader(cluster, rest);
        const followers = rest.filter((n) => n !== now);
        const wiped = followers[round % followers.length]!;
        const old = cluster.member(wiped);
        const oldId = old.memberId;
        await cluster.signal(wiped, "SIGKILL");
        rmSync(old.dataDir, { recursive: true, force: true });
        await removeMember(admin, oldId, step);
        step(`${wiped} (${oldId}) killed, wiped and removed`);
        const survivors = rest.filter((n) => n !== wiped);
        const probe = cluster.client(survivors, 2000);
        const removedAt =
          (await probe.status(cluster.member(now).clientAddress).catch(() => undefined))
            ?.lastIndex ?? 0;
        let compactedTo = 0;
        await waitFor(
          async () => {
            const l = await waitAgreedLeader(cluster, survivors);
            const s = await probe.status(cluster.member(l).clientAddress).catch(() => undefined);
            compactedTo = s?.firstIndex ?? 0;
            return compactedTo > removedAt;
          },
          `${context}: the leader's log compacted`,
          30_000,
        );
        step(`leader's log starts at ${compactedTo} (was at ${removedAt} at the removal)`);
        // Added back under a new ID, from an empty directory: it catches up from a snapshot.
        const again = await addMember(admin, {
          name: wiped,
          peerAddress: old.peerAddress,
          clientAddress: old.clientAddress,
        });
        assert.notEqual(
          again.member.id.toString(16),
          oldId,
          `${context}: a re-added member gets a new ID`,
        );
        const port = Number(old.clientAddress.split(":")[1]);
        old.args = joinArgs(wiped, port, again.members, policy);
        const logFrom = old.stderr.length;
        await cluster.startMember(wiped);
        assert.equal(old.memberId, again.member.id.toString(16));
        step(`${wiped} re-added as ${old.memberId}`);
        await waitFor(
          async () =>
            (await admin.memberList()).members.find((m) => m.name === wiped)?.learner === false,
          `${context}: ${wiped} promoted`,
          30_000,
        );
        const installed = /"event":"snapshot-installed"[^\n]*"index":(\d+)/.exec(
          old.stderr.slice(logFrom),
        );
        assert.ok(
          installed !== null,
          `${context}: ${wiped} installed no snapshot:\n${old.stderr.slice(logFrom, logFrom + 4000)}`,
        );
        assert.ok(
          Number(installed[1]) >= compactedTo - 1,
          `${context}: snapshot at ${installed[1]}, log from ${compactedTo}`,
        );
        step(`${wiped} promoted after installing the snapshot at ${installed[1]}`);
      }
      await sleep(1000);
      done = true;
      const result = await work;
      t.diagnostic(`${context}: ${steps.join("; ")}`);
      t.diagnostic(`${context}: ${result.summary()}`);
      const contents = await assertConverged(cluster, rest, context);
      await checkAfterHealing(t, context, cluster.client(rest, 10_000), recorder, result, contents);
    } catch (err) {
      t.diagnostic(`${context}: steps: ${steps.join("; ")}`);
      throw err;
    } finally {
      done = true;
      await work;
    }
  });
});
