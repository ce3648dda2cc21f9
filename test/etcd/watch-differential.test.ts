/**
 * The watch differential (issue 29 point 6): groups of seeded KV sequences
 * (test/support/etcd-differential.ts) with watchers opened at random steps, revisions
 * and ranges, sent to Debian's etcd 3.4 and to kv-engine; every watcher's created answer
 * and events compared event for event (test/support/etcd-watch-differential.ts). 6
 * groups of 4 sequences by default, 150 with KV_STRESS=1; KV_SEED=N runs group N alone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { requireBinary, startEtcd } from "../support/etcd-process.js";
import { startEtcdTestServer } from "../support/etcd-test-server.js";
import { EtcdWatchClient } from "../support/etcd-watch-client.js";
import { runWatchGroup, type WatchSide } from "../support/etcd-watch-differential.js";
import { testSeed } from "../support/random.js";

const STRESS = process.env["KV_STRESS"] === "1";
const GROUPS = STRESS ? 150 : 6;
const PER_GROUP = 4;
const LENGTH = 20;
/** Progress notifications are the barrier: etcd's shortest interval is 100 ms. */
const PROGRESS_MS = 100;

test("watch differential: watchers opened at random revisions and ranges see what etcd 3.4 sends", async (t) => {
  const binary = requireBinary(t, "etcd");
  if (binary === undefined) return;
  const etcd = await startEtcd(binary, [
    "--experimental-watch-progress-notify-interval",
    `${PROGRESS_MS}ms`,
  ]);
  t.after(() => etcd.stop());
  const ours = await startEtcdTestServer({ watch: { progressIntervalMs: PROGRESS_MS } });
  t.after(() => ours.stop());
  const side = (address: string): WatchSide => {
    const s = { kv: new EtcdGrpcClient(address), watch: new EtcdWatchClient(address).open() };
    t.after(() => {
      s.watch.close();
      s.kv.close();
    });
    return s;
  };
  const reference = side(etcd.address);
  const mine = side(ours.address);
  const only = process.env["KV_SEED"];
  const first = only === undefined ? testSeed() : Number(only);
  const groups = only === undefined ? GROUPS : 1;
  const tally = new Map<string, number>();
  for (let i = 0; i < groups; i++) {
    const group = (first + i * PER_GROUP) >>> 0;
    const seeds = Array.from({ length: PER_GROUP }, (_, j) => (group + j) >>> 0);
    const diff = await runWatchGroup(seeds, reference, mine, {
      length: LENGTH,
      settleMs: 5000,
      tally,
    });
    if (diff !== undefined) {
      assert.fail(
        `group ${group} (replay: KV_SEED=${group}) differs at ${diff.step}\n` +
          `  ${diff.op}\n  etcd: ${diff.reference}\n  ours: ${diff.ours}`,
      );
    }
  }
  t.diagnostic(
    `groups from ${first}: watchers ${[...tally]
      .sort()
      .map(([k, n]) => `${k}: ${n}`)
      .join("; ")}`,
  );
});
