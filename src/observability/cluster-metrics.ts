/**
 * Prometheus metrics of a cluster member (docs/metrics.md, "Cluster"), registered into a
 * KvMetrics registry beside the store's and the server's. Gauges and counters are read
 * from the replicated store's `clusterStats()` when Prometheus scrapes; peer round-trip
 * times come from the peer transport's pings (`observePeerRtt`), snapshot sizes and
 * durations from the store's events (`onEvent`).
 */
import { Counter, Histogram, type Registry } from "prom-client";
import type { ClusterStats } from "../replication/cluster-stats.js";
import type { ReplicationEvent } from "../replication/events.js";
import { mirroredCounter, mirroredGauge } from "./mirrored-metrics.js";

/** What the metrics read of a cluster member (ReplicatedStore satisfies it). */
export interface ClusterStatsSource {
  clusterStats(): ClusterStats;
}

/** Seconds buckets for peer round trips (0.1 ms to 1 s). */
const RTT_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.25, 1];
/** Seconds buckets for snapshot transfers and installs. */
const SNAPSHOT_BUCKETS = [0.01, 0.1, 0.5, 2, 10, 60, 300];

export class ClusterMetrics {
  /** The member whose figures are reported; set once it is open (until then: 0). */
  source: ClusterStatsSource | undefined;
  private snapshot: ClusterStats | undefined;
  private readonly rtt: Histogram<"peer">;
  private readonly snapshotSeconds: Histogram<"direction">;
  private readonly snapshotBytes: Counter<"direction">;
  private readonly snapshotFailures: Counter;

  constructor(registry: Registry) {
    const stats = (): ClusterStats | undefined => {
      this.snapshot ??= this.source?.clusterStats();
      return this.snapshot;
    };
    const gauge = (name: string, help: string, read: (s: ClusterStats) => number) =>
      mirroredGauge(registry, name, help, () => {
        const s = stats();
        return s === undefined ? undefined : read(s);
      });
    const counter = (name: string, help: string, read: (s: ClusterStats) => number) =>
      mirroredCounter(registry, name, help, () => {
        const s = stats();
        return s === undefined ? 0 : read(s);
      });
    gauge("kv_cluster_term", "The Raft term this member is in.", (s) => s.term);
    gauge("kv_cluster_is_leader", "1 while this member leads, else 0.", (s) =>
      s.isLeader ? 1 : 0,
    );
    gauge("kv_cluster_has_leader", "1 while this member knows a leader, else 0.", (s) =>
      s.leader === 0 ? 0 : 1,
    );
    gauge("kv_cluster_commit_index", "The highest log index known committed.", (s) => s.commit);
    gauge(
      "kv_cluster_applied_index",
      "The highest log index applied to the store.",
      (s) => s.applied,
    );
    gauge(
      "kv_cluster_apply_lag_entries",
      "Committed entries not applied yet here.",
      (s) => s.applyLag,
    );
    gauge(
      "kv_cluster_commit_lag_entries",
      "Leader only: the largest number of committed entries a voter lacks.",
      (s) => s.commitLag,
    );
    gauge(
      "kv_cluster_proposals_pending",
      "Writes proposed here, waiting for their apply.",
      (s) => s.proposalsPending,
    );
    counter(
      "kv_cluster_leader_changes_total",
      "Leader changes this member saw.",
      (s) => s.leaderChanges,
    );
    counter(
      "kv_cluster_elections_total",
      "Elections (and pre-elections) this member started.",
      (s) => s.elections,
    );
    counter(
      "kv_cluster_proposals_committed_total",
      "Writes proposed here that were committed and applied.",
      (s) => s.proposalsCommitted,
    );
    counter(
      "kv_cluster_proposals_failed_total",
      "Writes proposed here that failed (outcome unknown or refused at apply).",
      (s) => s.proposalsFailed,
    );
    counter(
      "kv_cluster_read_index_rounds_total",
      "ReadIndex rounds (each serves a batch of reads).",
      (s) => s.readRounds,
    );
    counter(
      "kv_cluster_linearizable_reads_total",
      "Linearizable reads confirmed.",
      (s) => s.readsServed,
    );
    counter(
      "kv_cluster_snapshots_created_total",
      "Snapshots (store checkpoints) taken here.",
      (s) => s.snapshotsCreated,
    );
    counter(
      "kv_cluster_snapshots_sent_total",
      "Snapshots streamed to followers.",
      (s) => s.snapshotsSent,
    );
    counter(
      "kv_cluster_snapshots_installed_total",
      "Snapshots received and installed as the store.",
      (s) => s.snapshotsInstalled,
    );
    counter(
      "kv_cluster_raft_syncs_total",
      "Fsyncs of the Raft log (one per Ready with entries or state).",
      (s) => s.raftSyncs,
    );
    this.rtt = new Histogram({
      name: "kv_cluster_peer_round_trip_seconds",
      help: "Round-trip time of an HTTP/2 ping to a peer (every second per connection).",
      labelNames: ["peer"],
      buckets: RTT_BUCKETS,
      registers: [registry],
    });
    this.snapshotSeconds = new Histogram({
      name: "kv_cluster_snapshot_duration_seconds",
      help: "Time to stream a snapshot (sent) or to receive and install one (installed).",
      labelNames: ["direction"],
      buckets: SNAPSHOT_BUCKETS,
      registers: [registry],
    });
    this.snapshotBytes = new Counter({
      name: "kv_cluster_snapshot_bytes_total",
      help: "Bytes of snapshots sent or installed.",
      labelNames: ["direction"],
      registers: [registry],
    });
    this.snapshotFailures = new Counter({
      name: "kv_cluster_snapshot_send_failures_total",
      help: "Snapshot streams that failed (retried by Raft).",
      registers: [registry],
    });
  }

  /** Drops the figures read for the last scrape (KvMetrics calls it before each). */
  readonly beforeScrape = (): void => {
    this.snapshot = undefined;
  };

  /** A ping to peer `peer` (its hex ID) came back after `ms`. */
  observePeerRtt(peer: string, ms: number): void {
    this.rtt.observe({ peer }, ms / 1000);
  }

  /** Replication event listener: pass it (or call it from) the store's `onEvent`. */
  readonly onEvent = (event: ReplicationEvent): void => {
    if (event.type === "snapshot-sent") {
      if (!event.ok) {
        this.snapshotFailures.inc();
        return;
      }
      this.snapshotSeconds.observe({ direction: "sent" }, event.durationMs / 1000);
      this.snapshotBytes.inc({ direction: "sent" }, event.bytes);
    } else if (event.type === "snapshot-installed") {
      this.snapshotSeconds.observe({ direction: "installed" }, event.durationMs / 1000);
      this.snapshotBytes.inc({ direction: "installed" }, event.bytes);
    }
  };
}
