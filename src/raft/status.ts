/**
 * A snapshot of a node's state for the application, its Status call and its metrics
 * (`RawNode.status()`). Plain data: nothing in it refers back to the node.
 */
import type { ProgressState } from "./progress.js";
import type { Raft } from "./raft.js";
import type { ConfState, NodeId, RaftRole } from "./types.js";

/** A leader's view of one member's replication. */
export interface PeerProgress {
  /** The highest index known replicated on the peer. */
  readonly match: number;
  /** The next index the leader will send. */
  readonly next: number;
  readonly state: ProgressState;
  /** The leader heard from the peer within the current election timeout. */
  readonly recentActive: boolean;
  /** The leader sends the peer nothing until it hears back (probe sent, window full, snapshot). */
  readonly paused: boolean;
  /** In state snapshot: the index of the snapshot sent. */
  readonly pendingSnapshot: number;
  /** Append messages in flight and their entry bytes. */
  readonly inflightMessages: number;
  readonly inflightBytes: number;
  readonly isLearner: boolean;
}

export interface RaftStatus {
  readonly id: NodeId;
  readonly term: number;
  /** The node voted for in `term` (0: none). */
  readonly vote: NodeId;
  readonly commit: number;
  readonly applied: number;
  readonly firstIndex: number;
  readonly lastIndex: number;
  /** The leader this node knows of (0: none). */
  readonly lead: NodeId;
  readonly role: RaftRole;
  readonly isLearner: boolean;
  /** Set while a leader transfers leadership to this node. */
  readonly leadTransferee: NodeId;
  readonly config: ConfState;
  /** Set while the node repairs a damaged log: it neither votes nor campaigns until its log matches a leader's through this index. */
  readonly repair: { readonly throughIndex: number } | undefined;
  /** A leader's progress of every member (itself included), else undefined. */
  readonly progress: ReadonlyMap<NodeId, PeerProgress> | undefined;
}

export function statusOf(r: Raft): RaftStatus {
  let progress: Map<NodeId, PeerProgress> | undefined;
  if (r.role === "leader") {
    progress = new Map();
    for (const id of r.tracker.members) {
      const pr = r.tracker.progress.get(id)!;
      progress.set(id, {
        match: pr.match,
        next: pr.next,
        state: pr.state,
        recentActive: pr.recentActive,
        paused: pr.isPaused(),
        pendingSnapshot: pr.pendingSnapshot,
        inflightMessages: pr.inflights.count,
        inflightBytes: pr.inflights.bytes,
        isLearner: pr.isLearner,
      });
    }
  }
  return {
    id: r.id,
    term: r.term,
    vote: r.vote,
    commit: r.log.committed,
    applied: r.log.applied,
    firstIndex: r.log.firstIndex(),
    lastIndex: r.log.lastIndex(),
    lead: r.lead,
    role: r.role,
    isLearner: r.isLearner,
    leadTransferee: r.leadTransferee,
    config: r.tracker.confState(),
    repair: r.repairThrough > 0 ? { throughIndex: r.repairThrough } : undefined,
    progress,
  };
}
