/**
 * etcd's transactions under faults (issue 28, point 8): real `kv-engine serve` members,
 * every peer link through a TCP proxy, the seeded nemesis of the kv.v1 chaos test
 * (test/support/nemesis.ts: kill -9 and restarts, SIGSTOP, leader isolation, splits,
 * one-way cuts, slow links), and client loops through etcd's KV API on every member
 * (test/support/etcd-chaos-workload.ts: Kubernetes-style creates and updates, multi-key
 * txns, puts, deletes, linearizable ranges, ranges at older revisions, compactions).
 * After healing, with a final linearizable read of every key: the history of transactions
 * is linearizable with every header revision and every kv's revisions and version
 * (checkTxnLinearizability), every read at a revision answered what the history pins at
 * that revision and "compacted" only after a compaction above it (checkRevisionReads),
 * and every member holds the same keys at the same revisions.
 *
 * 3 members for ~12 s by default; KV_STRESS=1 runs 5 for 3 minutes; KV_SEED replays a
 * schedule (the nemesis's draws and the workload's choices; timing differs).
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, type TestContext, test } from "node:test";
import { assertConverged, waitAgreedLeader } from "../support/cluster-checks.js";
import { ProcessCluster } from "../support/cluster-processes.js";
import {
  type EtcdWorkloadResult,
  finalRangeRead,
  runEtcdWorkload,
} from "../support/etcd-chaos-workload.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { rangeAt } from "../support/etcd-txn-wire.js";
import { checkRevisionReads } from "../support/linearizability/check-revision-reads.js";
import { checkTxnLinearizability } from "../support/linearizability/index.js";
import { Nemesis } from "../support/nemesis.js";
import { rng, testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] === "1";
const SIZE = STRESS ? 5 : 3;
const KEYS = ["k/a", "k/b", "k/c", "k/d"];
const RANGE = { key: "k/", end: "k0" };
/** Client deadline per call: a paused leader holds calls until it. */
const CALL_MS = 2000;
const WORK_MS = STRESS ? 180_000 : 12_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Once converged: every member's serializable range of the keys (at the newest revision,
 * and at a few revisions answered in the run) is the same, revisions and versions included.
 */
async function assertSameRevisions(
  cluster: ProcessCluster,
  members: readonly string[],
  revisions: readonly number[],
  context: string,
): Promise<void> {
  const clients = members.map((n) => new EtcdGrpcClient(cluster.member(n).clientAddress, {}, 5000));
  try {
    const answers = await Promise.all(
      clients.map((c) =>
        c.range({
          key: new TextEncoder().encode(RANGE.key),
          rangeEnd: new TextEncoder().encode(RANGE.end),
          serializable: true,
        }),
      ),
    );
    const shown = answers.map((a) =>
      JSON.stringify({
        revision: String(a.header?.revision),
        kvs: a.kvs.map((kv) => [
          new TextDecoder().decode(kv.key),
          new TextDecoder().decode(kv.value),
          String(kv.createRevision),
          String(kv.modRevision),
          String(kv.version),
        ]),
      }),
    );
    for (let i = 1; i < members.length; i++) {
      assert.equal(shown[i], shown[0], `${context}: ${members[i]} and ${members[0]} differ`);
    }
    for (const revision of revisions) {
      const at = await Promise.all(
        clients.map((c) =>
          rangeAt(c, RANGE.key, RANGE.end, revision).then(
            (r) => JSON.stringify(r.kvs),
            (err: unknown) => `error ${(err as { details?: string }).details ?? String(err)}`,
          ),
        ),
      );
      for (let i = 1; i < members.length; i++) {
        assert.equal(
          at[i],
          at[0],
          `${context}: ${members[i]} and ${members[0]} differ at revision ${revision}`,
        );
      }
    }
  } finally {
    for (const c of clients) c.close();
  }
}

function check(t: TestContext, context: string, result: EtcdWorkloadResult): void {
  const failures: string[] = [];
  const txn = checkTxnLinearizability(result.history, { timeoutMs: 60_000 });
  if (txn.verdict === "ok") {
    t.diagnostic(
      `${context}: ${txn.operations} operations linearizable with their revisions (${txn.steps} steps)`,
    );
  } else {
    failures.push(
      `linearizability: ${txn.verdict === "unknown" ? "undecided within the budget" : txn.explanation}`,
    );
  }
  const reads = checkRevisionReads(result.history, result.revisionReads, result.compactions, KEYS);
  if (reads.length > 0) failures.push(`reads at a revision:\n${reads.slice(0, 10).join("\n")}`);
  if (result.unexpected.length > 0) {
    failures.push(`unexpected errors: ${[...new Set(result.unexpected)].join("; ")}`);
  }
  if (result.completed < 100) failures.push(`only ${result.completed} calls answered`);
  if (failures.length > 0) {
    // The history, for checking again offline (Infinity as null).
    const file = join(tmpdir(), `etcd-chaos-history-${process.pid}-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(result));
    throw new Error(`${context} (history in ${file}):\n${failures.join("\n")}`);
  }
}

describe(`etcd chaos: ${SIZE} member processes`, () => {
  test("etcd txns, ranges and reads at revisions under kill -9, SIGSTOP, isolation, splits and one-way cuts: linearizable with their revisions, old revisions as the history says, members alike", async (t) => {
    const seed = testSeed();
    const context = `seed ${seed} (replay: KV_SEED=${seed}${STRESS ? " KV_STRESS=1" : ""})`;
    t.diagnostic(context);
    const members = Array.from({ length: SIZE }, (_, i) => `n${i + 1}`);
    const cluster = await ProcessCluster.start(members, { proxies: true });
    const nemesis = new Nemesis(cluster, {
      random: rng(seed),
      maxDown: STRESS ? 2 : 1,
      holdMs: [500, STRESS ? 3000 : 2000],
    });
    t.after(async () => {
      nemesis.cleanup();
      await cluster.stop();
    });
    await waitAgreedLeader(cluster, members);
    const started = performance.now();
    const now = () => Math.round((performance.now() - started) * 1000) / 1000;
    let done = false;
    const work = runEtcdWorkload({
      clients: STRESS ? 6 : 4,
      keys: KEYS,
      range: RANGE,
      random: rng(seed + 1),
      endpoints: members.map((n) => cluster.member(n).clientAddress),
      stop: () => done,
      timeoutMs: CALL_MS,
      now,
    });
    const chaos = nemesis.run(() => done);
    await sleep(WORK_MS);
    done = true;
    const [result] = await Promise.all([work, chaos]);
    t.diagnostic(
      `${context}: nemesis ${[...nemesis.counts].map(([k, n]) => `${k} x${n}`).join(", ")}`,
    );
    t.diagnostic(`${context}: ${result.summary()}`);
    try {
      await finalRangeRead(
        members.map((n) => cluster.member(n).clientAddress),
        RANGE,
        result,
        now,
      );
      const checkStarted = performance.now();
      check(t, context, result);
      t.diagnostic(`${context}: checked in ${Math.round(performance.now() - checkStarted)} ms`);
      await assertConverged(cluster, members, context);
      const floor = result.compactions.reduce((a, c) => Math.max(a, c.revision), 0);
      const later = [
        ...new Set(
          result.history.flatMap((o) => (o.output === undefined ? [] : [o.output.revision])),
        ),
      ].filter((r) => r >= floor);
      const sample = later.filter((_, i) => i % Math.max(1, Math.floor(later.length / 5)) === 0);
      await assertSameRevisions(cluster, members, sample, context);
    } catch (err) {
      t.diagnostic(`${context}: nemesis log:`);
      for (const line of nemesis.log) t.diagnostic(`  ${line}`);
      throw err;
    }
  });
});
