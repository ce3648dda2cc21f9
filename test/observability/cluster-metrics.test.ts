/**
 * A cluster member's observability: ClusterMetrics reads the replicated store's figures at
 * each scrape (counters advance by the difference, never backwards), peer round trips and
 * snapshot events fill their histograms, and clusterEventLogger writes exactly one line
 * per election, leader change, membership change, snapshot, refusal, removal and failure.
 */
import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { test } from "node:test";
import { pino } from "pino";
import { clusterEventLogger } from "../../src/observability/cluster-event-log.js";
import { ClusterMetrics } from "../../src/observability/cluster-metrics.js";
import { KvMetrics } from "../../src/observability/metrics.js";
import type { ReplicationEvent } from "../../src/replication/events.js";
import type { ClusterStats } from "../../src/replication/replicated-store.js";

/** The value of the sample `name{labels}` in a text exposition, or undefined. */
function sample(text: string, name: string, labels = ""): number | undefined {
  const wanted = labels === "" ? name : `${name}{${labels}}`;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    if (line.slice(0, at) === wanted) return Number(line.slice(at + 1));
  }
  return undefined;
}

function stats(over: Partial<ClusterStats>): ClusterStats {
  return {
    term: 0,
    leader: 0,
    isLeader: false,
    commit: 0,
    applied: 0,
    applyLag: 0,
    commitLag: 0,
    leaderChanges: 0,
    elections: 0,
    proposalsCommitted: 0,
    proposalsFailed: 0,
    proposalsPending: 0,
    readRounds: 0,
    readsServed: 0,
    snapshotsCreated: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    readies: 0,
    raftSyncs: 0,
    ...over,
  };
}

test("cluster metrics follow the member's figures at each scrape", async () => {
  const metrics = new KvMetrics();
  const cluster = new ClusterMetrics(metrics.registry);
  metrics.scrapeHooks.push(cluster.beforeScrape);
  let now = stats({});
  let reads = 0;
  cluster.source = {
    clusterStats: () => {
      reads++;
      return now;
    },
  };
  let text = await metrics.text();
  assert.equal(sample(text, "kv_cluster_has_leader"), 0);
  assert.equal(sample(text, "kv_cluster_leader_changes_total"), 0);
  assert.equal(reads, 1, "one read of the figures per scrape");

  now = stats({
    term: 3,
    leader: 7,
    isLeader: true,
    commit: 120,
    applied: 117,
    applyLag: 3,
    commitLag: 9,
    leaderChanges: 2,
    elections: 4,
    proposalsCommitted: 50,
    proposalsFailed: 1,
    proposalsPending: 5,
    readRounds: 8,
    readsServed: 30,
    snapshotsCreated: 1,
    snapshotsSent: 2,
    snapshotsInstalled: 1,
    raftSyncs: 60,
  });
  text = await metrics.text();
  const expected: Record<string, number> = {
    kv_cluster_term: 3,
    kv_cluster_is_leader: 1,
    kv_cluster_has_leader: 1,
    kv_cluster_commit_index: 120,
    kv_cluster_applied_index: 117,
    kv_cluster_apply_lag_entries: 3,
    kv_cluster_commit_lag_entries: 9,
    kv_cluster_proposals_pending: 5,
    kv_cluster_leader_changes_total: 2,
    kv_cluster_elections_total: 4,
    kv_cluster_proposals_committed_total: 50,
    kv_cluster_proposals_failed_total: 1,
    kv_cluster_read_index_rounds_total: 8,
    kv_cluster_linearizable_reads_total: 30,
    kv_cluster_snapshots_created_total: 1,
    kv_cluster_snapshots_sent_total: 2,
    kv_cluster_snapshots_installed_total: 1,
    kv_cluster_raft_syncs_total: 60,
  };
  for (const [name, value] of Object.entries(expected)) {
    assert.equal(sample(text, name), value, name);
  }
  // A member that stepped down: gauges follow, counters never go back.
  now = stats({ ...now, isLeader: false, leader: 0, leaderChanges: 3, proposalsCommitted: 50 });
  text = await metrics.text();
  assert.equal(sample(text, "kv_cluster_is_leader"), 0);
  assert.equal(sample(text, "kv_cluster_has_leader"), 0);
  assert.equal(sample(text, "kv_cluster_leader_changes_total"), 3);
  assert.equal(sample(text, "kv_cluster_proposals_committed_total"), 50);
  assert.equal(reads, 3);
});

test("peer round trips and snapshot events fill histograms", async () => {
  const metrics = new KvMetrics();
  const cluster = new ClusterMetrics(metrics.registry);
  cluster.observePeerRtt("a1", 0.3);
  cluster.observePeerRtt("a1", 4);
  cluster.onEvent({
    type: "snapshot-sent",
    to: 2,
    index: 10,
    bytes: 4096,
    ok: true,
    message: undefined,
    durationMs: 50,
  });
  cluster.onEvent({
    type: "snapshot-sent",
    to: 2,
    index: 11,
    bytes: 999,
    ok: false,
    message: "stream broke",
    durationMs: 5,
  });
  cluster.onEvent({
    type: "snapshot-installed",
    from: 1,
    index: 10,
    term: 2,
    bytes: 1000,
    durationMs: 20,
  });
  const text = await metrics.text();
  assert.equal(sample(text, "kv_cluster_peer_round_trip_seconds_count", 'peer="a1"'), 2);
  assert.equal(
    sample(text, "kv_cluster_peer_round_trip_seconds_bucket", 'le="0.001",peer="a1"'),
    1,
  );
  assert.equal(sample(text, "kv_cluster_snapshot_bytes_total", 'direction="sent"'), 4096);
  assert.equal(sample(text, "kv_cluster_snapshot_bytes_total", 'direction="installed"'), 1000);
  assert.equal(sample(text, "kv_cluster_snapshot_duration_seconds_count", 'direction="sent"'), 1);
  assert.equal(sample(text, "kv_cluster_snapshot_send_failures_total"), 1);
});

test("one log line per cluster event, IDs in hex", () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString("utf8").split("\n")) if (l !== "") lines.push(JSON.parse(l));
      done();
    },
  });
  const log = clusterEventLogger(pino({ level: "info" }, sink));
  const events: ReplicationEvent[] = [
    { type: "election", term: 4, preVote: true },
    { type: "leader", term: 4, leader: 0xabc, previous: 0 },
    {
      type: "membership",
      index: 9,
      change: "addLearner",
      member: 0xdef,
      name: "n4",
      applied: true,
      voters: [0xabc],
      learners: [0xdef],
    },
    {
      type: "snapshot-created",
      index: 100,
      term: 4,
      files: 3,
      bytes: 2048,
      compactedTo: 50,
      durationMs: 12.34,
    },
    {
      type: "snapshot-sent",
      to: 0xdef,
      index: 100,
      bytes: 2048,
      ok: false,
      message: "broken",
      durationMs: 3,
    },
    { type: "snapshot-installed", from: 0xabc, index: 100, term: 4, bytes: 2048, durationMs: 7 },
    { type: "peer-refused", from: 0x123, reason: "another cluster" },
    { type: "removed", index: 120 },
    { type: "failed", message: "fsync failed" },
  ];
  for (const e of events) log(e);
  assert.equal(lines.length, events.length, "one line per event");
  assert.deepEqual(
    lines.map((l) => l.event),
    events.map((e) => e.type),
  );
  assert.deepEqual(
    lines.map((l) => l.level),
    [30, 30, 30, 30, 40, 30, 40, 40, 50],
  );
  assert.equal(lines[1]?.leader, "abc");
  assert.equal(lines[1]?.msg, "leader is abc");
  assert.deepEqual([lines[2]?.member, lines[2]?.learners], ["def", ["def"]]);
  assert.equal(lines[3]?.ms, 12.3);
  assert.equal(lines[4]?.err, "broken");
  assert.equal(lines[8]?.err, "fsync failed");
});
