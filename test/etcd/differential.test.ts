/**
 * The differential test of etcd's KV API (the main proof that kv-engine answers as etcd
 * does): seeded random sequences (test/support/etcd-differential.ts) sent to Debian's
 * etcd 3.4 and to kv-engine, every answer compared. 200 sequences of 25 ops by default,
 * 3,000 with KV_STRESS=1; KV_SEED=N runs sequence N alone. A failure prints its seed,
 * the op and both answers.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { runSequence } from "../support/etcd-differential.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { requireBinary, startEtcd } from "../support/etcd-process.js";
import { startEtcdTestCluster } from "../support/etcd-test-cluster.js";
import { startEtcdTestServer } from "../support/etcd-test-server.js";
import { testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] === "1";
const SEQUENCES = STRESS ? 3000 : 200;
/** Through a cluster each write is a Raft round: fewer sequences. */
const CLUSTER_SEQUENCES = STRESS ? 1000 : 40;
const LENGTH = 25;

test("differential: random KV sequences answer as etcd 3.4 answers them", async (t) => {
  const ours = await startEtcdTestServer();
  t.after(() => ours.stop());
  await differential(t, ours.address, SEQUENCES);
});

test("differential: a 3-member cluster, asked through a follower, answers as etcd 3.4", async (t) => {
  const cluster = await startEtcdTestCluster(3);
  t.after(() => cluster.stop());
  await differential(t, cluster.followerAddress(), CLUSTER_SEQUENCES);
});

/** Runs `sequences` random sequences against a fresh etcd and kv-engine at `address`. */
async function differential(t: TestContext, address: string, sequences: number): Promise<void> {
  const binary = requireBinary(t, "etcd");
  if (binary === undefined) return;
  const etcd = await startEtcd(binary);
  t.after(() => etcd.stop());
  const reference = new EtcdGrpcClient(etcd.address);
  const mine = new EtcdGrpcClient(address);
  t.after(() => {
    reference.close();
    mine.close();
  });
  const only = process.env["KV_SEED"];
  const first = only === undefined ? testSeed() : Number(only);
  const count = only === undefined ? sequences : 1;
  const tally = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const seed = (first + i) >>> 0;
    const diff = await runSequence(seed, reference, mine, { length: LENGTH, tally });
    if (diff !== undefined) {
      assert.fail(
        `sequence ${diff.seed} (replay: KV_SEED=${diff.seed}) differs at step ${diff.step}\n` +
          `  op:   ${diff.op}\n  etcd: ${diff.reference}\n  ours: ${diff.ours}`,
      );
    }
  }
  t.diagnostic(
    `sequences ${first}..${first + count - 1}: ${[...tally]
      .sort()
      .map(([k, n]) => `${k}: ${n}`)
      .join("; ")}`,
  );
}
