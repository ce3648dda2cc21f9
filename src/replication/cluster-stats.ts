/**
 * What a member reports about itself and its cluster: `ClusterStats` (counters and gauges,
 * read by the metrics, src/observability/cluster-metrics.ts), `MemberStatus` (the cluster
 * service's Status, per member) and `MemberView` (one member as the cluster service shows
 * it); the event counters the member's parts increment; and `clusterStatsOf`, which puts
 * the counters together with the Raft node's status and the applied index.
 */
import type { RaftStatus } from "../raft/status.js";
import type { RaftRole } from "../raft/types.js";
import type { MemberId, MemberInfo } from "./members.js";

/** A member as the cluster service shows it. */
export interface MemberView extends MemberInfo {
  /** Milliseconds since this member last heard from it (undefined: never, or itself). */
  readonly lastContactMs: number | undefined;
  /** As the leader sees it (only when this member leads). */
  readonly progress:
    | {
        readonly match: number;
        readonly next: number;
        readonly state: "probe" | "replicate" | "snapshot";
        readonly recentActive: boolean;
      }
    | undefined;
}

/** This member's own state (the cluster service's Status, per member). */
export interface MemberStatus {
  readonly clusterId: number;
  readonly memberId: MemberId;
  readonly name: string;
  /** "learner" for a learner; else the Raft role. */
  readonly role: RaftRole | "learner";
  readonly term: number;
  /** The leader it knows of (0: none). */
  readonly leader: MemberId;
  /** The leader's client address, when known. */
  readonly leaderClientAddress: string | undefined;
  readonly commit: number;
  readonly applied: number;
  readonly firstIndex: number;
  readonly lastIndex: number;
  /** Index of the newest snapshot (the Raft log's). */
  readonly snapshotIndex: number;
  readonly removed: boolean;
  /** Set when the member stopped after a failure: restart it. */
  readonly failure: string | undefined;
}

/** Counters and gauges for metrics. */
export interface ClusterStats {
  readonly term: number;
  readonly leader: MemberId;
  readonly isLeader: boolean;
  readonly commit: number;
  readonly applied: number;
  /** commit - applied. */
  readonly applyLag: number;
  /** Leader only: the largest (commit - match) over the other voters, else 0. */
  readonly commitLag: number;
  readonly leaderChanges: number;
  readonly elections: number;
  readonly proposalsCommitted: number;
  readonly proposalsFailed: number;
  readonly proposalsPending: number;
  readonly readRounds: number;
  readonly readsServed: number;
  readonly snapshotsCreated: number;
  readonly snapshotsSent: number;
  readonly snapshotsInstalled: number;
  readonly readies: number;
  readonly raftSyncs: number;
}

/** The events a member counts (each part increments its own). */
export interface ClusterCounters {
  leaderChanges: number;
  elections: number;
  proposalsCommitted: number;
  proposalsFailed: number;
  snapshotsCreated: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
}

export function newClusterCounters(): ClusterCounters {
  return {
    leaderChanges: 0,
    elections: 0,
    proposalsCommitted: 0,
    proposalsFailed: 0,
    snapshotsCreated: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
  };
}

/** What `clusterStatsOf` reads besides the counters. */
export interface ClusterStatsInputs {
  readonly self: MemberId;
  /** The Raft node's status. */
  readonly raft: RaftStatus;
  /** The state machine's applied index. */
  readonly applied: number;
  readonly counters: ClusterCounters;
  readonly proposalsPending: number;
  readonly reads: { readonly rounds: number; readonly served: number };
  readonly driver: { readonly readies: number; readonly syncs: number };
}

export function clusterStatsOf(i: ClusterStatsInputs): ClusterStats {
  const st = i.raft;
  let commitLag = 0;
  if (st.progress !== undefined) {
    for (const [id, pr] of st.progress) {
      if (id !== i.self && !pr.isLearner) commitLag = Math.max(commitLag, st.commit - pr.match);
    }
  }
  const c = i.counters;
  return {
    term: st.term,
    leader: st.lead,
    isLeader: st.role === "leader",
    commit: st.commit,
    applied: i.applied,
    applyLag: Math.max(0, st.commit - i.applied),
    commitLag,
    leaderChanges: c.leaderChanges,
    elections: c.elections,
    proposalsCommitted: c.proposalsCommitted,
    proposalsFailed: c.proposalsFailed,
    proposalsPending: i.proposalsPending,
    readRounds: i.reads.rounds,
    readsServed: i.reads.served,
    snapshotsCreated: c.snapshotsCreated,
    snapshotsSent: c.snapshotsSent,
    snapshotsInstalled: c.snapshotsInstalled,
    readies: i.driver.readies,
    raftSyncs: i.driver.syncs,
  };
}
