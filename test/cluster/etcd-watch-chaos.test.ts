/**
 * etcd's Watch under faults (issue 29, point 7), in the manner of etcd's robustness tests:
 * real `kv-engine serve` members with every peer link through a TCP proxy, the client
 * loops of the etcd chaos test (test/support/etcd-chaos-workload.ts) writing through
 * etcd's KV API, the seeded nemesis (kill -9, SIGSTOP, leader isolation, splits, one-way
 * cuts, slow links) in two phases, and between them a membership change: a follower
 * killed, wiped, removed and added back under a new ID (catching up from a snapshot when
 * the log moved past it). Two watchers start on every member, on the workload's prefix at
 * the revision after the cluster's first: one with prev_kv and `hasleader`, one resuming
 * from its bookmarks (progress notifications); each resumes on the next member after any
 * error, stream end or stall with start_revision = the last revision it saw + 1
 * (test/support/etcd-resuming-watcher.ts).
 *
 * After healing and a final linearizable read, once every watcher has caught up with it:
 * the watchers' streams pass checkWatchHistory (every acknowledged write exactly once in
 * every watcher at the revision its response carried, in order, nothing invented, the
 * streams alike, create/mod revision, version and prev_kv as the events imply, ending in
 * the final read's state), no stream sent an event at or below a progress notification
 * it sent before or split a revision, the history of transactions is linearizable, and
 * every member's HashKV-like digest (test/support/etcd-hash-kv.ts) is the same.
 *
 * 3 members for ~15 s by default; KV_STRESS=1 runs 5 for 3 minutes with three membership
 * changes; KV_SEED replays a schedule (timing differs).
 */
import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import { assertConverged, waitAgreedLeader } from "../support/cluster-checks.js";
import { addMember, joinArgs, removeMember } from "../support/cluster-membership.js";
import { ProcessCluster } from "../support/cluster-processes.js";
import { finalRangeRead, runEtcdWorkload } from "../support/etcd-chaos-workload.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { hashKv } from "../support/etcd-hash-kv.js";
import { ResumingWatcher } from "../support/etcd-resuming-watcher.js";
import { checkTxnLinearizability } from "../support/linearizability/index.js";
import { Nemesis } from "../support/nemesis.js";
import { rng, testSeed } from "../support/random.js";
import { waitFor } from "../support/wait-for.js";
import { checkWatchHistory } from "../support/watch-history-check.js";

const STRESS = process.env["KV_STRESS"] === "1";
const SIZE = STRESS ? 5 : 3;
const KEYS = ["k/a", "k/b", "k/c", "k/d"];
const RANGE = { key: "k/", end: "k0" };
const CALL_MS = 2000;
/** Nemesis phases (a membership change between two), milliseconds each. */
const PHASES = STRESS ? [45_000, 45_000, 45_000, 45_000] : [5000, 5000];
/** A small snapshot policy, so that a member added back catches up from a snapshot. */
const POLICY = ["--snapshot-entries", "100", "--catch-up-entries", "20"];

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A follower killed, wiped and removed, then added back under a new ID from an empty data
 * directory (its peer links still through the proxies); resolves once it is promoted.
 */
async function replaceFollower(
  cluster: ProcessCluster,
  members: readonly string[],
  note: (s: string) => void,
): Promise<void> {
  const admin = cluster.client(members, 10_000);
  try {
    const leader = await waitAgreedLeader(cluster, members);
    const wiped = members.find((n) => n !== leader)!;
    const old = cluster.member(wiped);
    const oldId = old.memberId;
    await cluster.signal(wiped, "SIGKILL");
    rmSync(old.dataDir, { recursive: true, force: true });
    await removeMember(admin, oldId, note);
    note(`${wiped} (${oldId}) killed, wiped and removed`);
    const again = await addMember(admin, {
      name: wiped,
      peerAddress: old.peerAddress,
      clientAddress: old.clientAddress,
    });
    const dial = old.args.indexOf("--peer-dial-override");
    const overrides = dial >= 0 ? old.args.slice(dial, dial + 2) : [];
    const port = Number(old.clientAddress.split(":")[1]);
    old.args = joinArgs(wiped, port, again.members, [...POLICY, ...overrides]);
    const logFrom = old.stderr.length;
    await cluster.startMember(wiped);
    await waitFor(
      async () =>
        (await admin.memberList().catch(() => undefined))?.members.find((m) => m.name === wiped)
          ?.learner === false,
      `${wiped} promoted`,
      60_000,
    ).catch((err: unknown) => {
      const failed = /^.*"event":"failed".*$/m.exec(old.stderr.slice(logFrom));
      throw failed === null ? err : new Error(`${String(err)}; ${wiped} logged: ${failed[0]}`);
    });
    const installed = /"event":"snapshot-installed"[^\n]*"index":(\d+)/.exec(
      old.stderr.slice(logFrom),
    );
    note(
      `${wiped} added back as ${old.memberId}, promoted${installed === null ? "" : ` after installing a snapshot at ${installed[1]}`}`,
    );
  } finally {
    admin.close();
  }
}

/** Every member's digest over (floor, revision] is the same. */
async function assertSameHashes(
  t: TestContext,
  cluster: ProcessCluster,
  members: readonly string[],
  floor: number,
  context: string,
): Promise<void> {
  const clients = members.map((n) => new EtcdGrpcClient(cluster.member(n).clientAddress, {}, 5000));
  try {
    const first = await clients[0]!.range({ key: new Uint8Array([0]), serializable: true });
    const revision = Number(first.header?.revision ?? 0n);
    const hashes = await Promise.all(
      members.map((n, i) => hashKv(clients[i]!, cluster.member(n).clientAddress, floor, revision)),
    );
    t.diagnostic(
      `${context}: HashKV-like digest over (${floor}, ${revision}]: ${hashes[0]!.hash} (${hashes[0]!.keys} keys, ${hashes[0]!.events} events)`,
    );
    for (let i = 1; i < members.length; i++) {
      assert.deepEqual(
        hashes[i],
        hashes[0],
        `${context}: ${members[i]} and ${members[0]} differ over (${floor}, ${revision}]`,
      );
    }
  } finally {
    for (const c of clients) c.close();
  }
}

describe(`etcd watch chaos: ${SIZE} member processes`, () => {
  test("watchers resuming across members under kill -9, SIGSTOP, isolation, splits, one-way cuts and a member replaced: every acknowledged write once, in order, at its revision; streams alike; linearizable; members alike", async (t) => {
    const seed = testSeed();
    const context = `seed ${seed} (replay: KV_SEED=${seed}${STRESS ? " KV_STRESS=1" : ""})`;
    t.diagnostic(context);
    const members = Array.from({ length: SIZE }, (_, i) => `n${i + 1}`);
    const cluster = await ProcessCluster.start(members, { proxies: true, extraArgs: POLICY });
    const nemeses: Nemesis[] = [];
    t.after(async () => {
      for (const n of nemeses) n.cleanup();
      await cluster.stop();
    });
    await waitAgreedLeader(cluster, members);
    const addresses = members.map((n) => cluster.member(n).clientAddress);
    const probe = new EtcdGrpcClient(addresses[0]!, {}, 5000);
    const startRevision =
      Number((await probe.range({ key: new Uint8Array([0]) })).header?.revision ?? 0n) + 1;
    probe.close();
    const started = performance.now();
    const now = () => Math.round((performance.now() - started) * 1000) / 1000;
    const steps: string[] = [];
    const note = (s: string) => steps.push(`+${(now() / 1000).toFixed(2)}s ${s}`);

    let watchDone = false;
    const byName = new Map(members.map((n) => [n, cluster.member(n).clientAddress]));
    const watchers = members.flatMap((first) =>
      [false, true].map(
        (bookmarks) =>
          new ResumingWatcher({
            name: `${first}${bookmarks ? "-bookmarks" : "-prev-kv"}`,
            members: byName,
            first,
            key: RANGE.key,
            rangeEnd: RANGE.end,
            startRevision,
            prevKv: !bookmarks,
            requireLeader: !bookmarks,
            bookmarks,
            progressEveryMs: 100,
            stallMs: 2000,
          }),
      ),
    );
    const watching = Promise.all(watchers.map((w) => w.run(() => watchDone)));

    let done = false;
    const work = runEtcdWorkload({
      clients: STRESS ? 6 : 4,
      keys: KEYS,
      range: RANGE,
      random: rng(seed + 1),
      endpoints: addresses,
      stop: () => done,
      timeoutMs: CALL_MS,
      now,
    });
    try {
      for (const [i, ms] of PHASES.entries()) {
        if (i > 0) await replaceFollower(cluster, members, note);
        const nemesis = new Nemesis(cluster, {
          random: rng(seed + 2 + i),
          maxDown: STRESS ? 2 : 1,
          holdMs: [500, STRESS ? 3000 : 2000],
        });
        nemeses.push(nemesis);
        let phaseDone = false;
        const chaos = nemesis.run(() => phaseDone);
        await sleep(ms);
        phaseDone = true;
        await chaos;
        note(`phase ${i + 1}: ${[...nemesis.counts].map(([k, n]) => `${k} x${n}`).join(", ")}`);
      }
      done = true;
      const result = await work;
      t.diagnostic(`${context}: ${result.summary()}`);
      const read = await finalRangeRead(addresses, RANGE, result, now);
      const first = read.results[0];
      const final = { revision: read.revision, kvs: first?.type === "range" ? first.kvs : [] };
      await waitFor(
        () => watchers.every((w) => w.through >= final.revision),
        `every watcher through the final read's revision ${final.revision}`,
        30_000,
      );
      watchDone = true;
      await watching;
      for (const w of watchers) {
        t.diagnostic(
          `${context}: ${w.name}: ${w.events.length} events, ${w.progress.length} progress notifications, ${w.resumes.length} resumes, gaps ${JSON.stringify(w.gaps)}`,
        );
      }
      const failures: string[] = [];
      for (const w of watchers) failures.push(...w.violations);
      const compactedTo = result.compactions.reduce((a, c) => Math.max(a, c.revision), 0);
      failures.push(
        ...checkWatchHistory({
          history: result.history,
          watchers,
          compactedTo,
          final,
        }),
      );
      const txn = checkTxnLinearizability(result.history, { timeoutMs: 60_000 });
      if (txn.verdict !== "ok") {
        failures.push(
          `linearizability: ${txn.verdict === "unknown" ? "undecided within the budget" : txn.explanation}`,
        );
      }
      if (result.unexpected.length > 0) {
        failures.push(`unexpected errors: ${[...new Set(result.unexpected)].join("; ")}`);
      }
      if (failures.length > 0) {
        const file = join(tmpdir(), `etcd-watch-chaos-${process.pid}-${Date.now()}.json`);
        writeFileSync(
          file,
          JSON.stringify({ result, watchers: watchers.map((w) => ({ ...w })), final }),
        );
        throw new Error(`${context} (history and streams in ${file}):\n${failures.join("\n")}`);
      }
      t.diagnostic(`${context}: ${txn.operations} operations linearizable`);
      await assertConverged(cluster, members, context);
      await assertSameHashes(t, cluster, members, compactedTo, context);
    } catch (err) {
      t.diagnostic(`${context}: steps: ${steps.join("; ")}`);
      for (const m of cluster.members.values()) {
        const file = join(tmpdir(), `etcd-watch-chaos-${process.pid}-${m.name}.log`);
        writeFileSync(file, m.stderr);
        t.diagnostic(`${context}: ${m.name}'s log in ${file}`);
      }
      for (const n of nemeses) for (const line of n.log) t.diagnostic(`  ${line}`);
      for (const w of watchers) {
        t.diagnostic(`  ${w.name} through ${w.through}`);
        for (const line of w.resumes) t.diagnostic(`  ${w.name} ${line}`);
      }
      throw err;
    } finally {
      done = true;
      watchDone = true;
      await Promise.allSettled([work, watching]);
    }
    t.diagnostic(`${context}: steps: ${steps.join("; ")}`);
  });
});
