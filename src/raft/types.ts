/**
 * The vocabulary of the Raft core (kv-engine/raft): entries, hard state, configurations,
 * snapshots, messages, and the storage the core reads its log from. Modelled on
 * etcd-io/raft's raftpb; docs/raft.md states the promises.
 *
 * Numbers: node IDs, terms and indexes are non-negative safe integers (JavaScript
 * numbers stop at 2^53 - 1, far beyond any log). Node ID 0 (NONE) means "nobody".
 * Bytes are Uint8Array; the core never mutates a buffer it is handed, and the buffers it
 * hands out must not be mutated by the application.
 */

/** A node's identity within its group: a positive safe integer. */
export type NodeId = number;

/** No node (no leader known, no vote cast). */
export const NONE: NodeId = 0;

/**
 * "normal": application data (an empty `data` is the no-op entry a new leader appends);
 * "confChange": `data` is an encoded ConfChange (see codec.ts) applied by
 * `RawNode.applyConfChange` when the entry is applied.
 */
export type EntryType = "normal" | "confChange";

/** One log entry. */
export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/**
 * What must be durable before a node acts on it: the current term, the vote cast in it
 * (NONE if none), and the highest index known committed.
 */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId;
  readonly commit: number;
}

/** A configuration: who votes and who only replicates. A node is in at most one list. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
}

/**
 * One membership change: one voter or learner at a time (no joint consensus).
 * - "addVoter": adds a voter, or promotes a learner to voter;
 * - "addLearner": adds a learner, or demotes a voter (not the leader) to learner;
 * - "removeNode": removes a voter or learner.
 * `context` is opaque to the core (the KV service carries the member's addresses in it).
 */
export type ConfChangeType = "addVoter" | "addLearner" | "removeNode";

export interface ConfChange {
  readonly type: ConfChangeType;
  readonly nodeId: NodeId;
  readonly context: Uint8Array;
}

/** Where a snapshot stands in the log, and the configuration as of its index. */
export interface SnapshotMetadata {
  readonly index: number;
  readonly term: number;
  readonly confState: ConfState;
}

/**
 * The application's state as of `metadata.index`. `data` is opaque to the core: the whole
 * state for a small state machine, or a descriptor of files the application streams to
 * the follower itself (in chunks, with back-pressure) before stepping the MsgSnap in.
 */
export interface Snapshot {
  readonly metadata: SnapshotMetadata;
  readonly data: Uint8Array;
}

/** A snapshot of nothing: index 0, term 0, empty configuration. */
export const EMPTY_SNAPSHOT: Snapshot = {
  metadata: { index: 0, term: 0, confState: { voters: [], learners: [] } },
  data: new Uint8Array(0),
};

/**
 * Message types, as etcd-raft's. Local ones (never sent over the wire) are marked; the
 * application steps "unreachable" and "snapStatus" through `reportUnreachable` and
 * `reportSnapshot`, and "hup" / "beat" / "checkQuorum" are produced by `tick`.
 */
export type MessageType =
  | "hup" // local: start an election (or pre-election)
  | "beat" // local: leader sends heartbeats
  | "checkQuorum" // local: leader checks it heard from a quorum
  | "prop" // proposal (from the application, or forwarded by a follower)
  | "app" // append entries
  | "appResp"
  | "vote"
  | "voteResp"
  | "preVote"
  | "preVoteResp"
  | "snap" // install snapshot
  | "heartbeat"
  | "heartbeatResp"
  | "unreachable" // local: the transport could not reach `from`
  | "snapStatus" // local: the transport finished (or failed) sending a snapshot
  | "transferLeader"
  | "timeoutNow" // leader -> transferee: campaign now
  | "readIndex"
  | "readIndexResp";

/**
 * One Raft message. Fields a type does not use are 0 / empty / false / undefined.
 * `logTerm` and `index` locate the entry before `entries` (append) or the sender's last
 * entry (votes); `commit` is the sender's commit index; `reject` and `rejectHint` answer
 * an append (the hint is the follower's guess of where the logs agree) or a vote;
 * `context` carries a ReadIndex request's context, a ReadIndex round in heartbeats (and
 * their responses), or the leader-transfer marker in votes. In "transferLeader" messages
 * `from` names the transferee (as etcd-raft). docs/raft.md ("Messages") lists each type.
 */
export interface Message {
  readonly type: MessageType;
  readonly to: NodeId;
  readonly from: NodeId;
  readonly term: number;
  readonly logTerm: number;
  readonly index: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
  readonly snapshot: Snapshot | undefined;
  readonly reject: boolean;
  readonly rejectHint: number;
  readonly context: Uint8Array;
}

/** A confirmed read: once the state machine has applied `index`, the read with `context` may be served. */
export interface ReadState {
  readonly index: number;
  readonly context: Uint8Array;
}

export type RaftRole = "follower" | "preCandidate" | "candidate" | "leader";

/** Volatile state the application may want to know about (not persisted). */
export interface SoftState {
  readonly lead: NodeId;
  readonly role: RaftRole;
}

/**
 * What a node recovered from its durable storage at start.
 * `repair`, when present, means synced entries were found damaged: the log holds only
 * the entries before the damage, and the node had durably acknowledged entries up to
 * `repair.throughIndex` (and possibly votes in terms up to `hardState.term`). Such a node
 * neither votes nor campaigns until its log again reaches `throughIndex` with entries
 * fetched from a leader (Protocol-Aware Recovery, FAST 2018).
 */
export interface InitialState {
  readonly hardState: HardState;
  /**
   * The configuration as of the storage's snapshot (index firstIndex() - 1). The core
   * replays the membership changes in later entries up to the applied index itself.
   */
  readonly confState: ConfState;
  readonly repair?: { readonly throughIndex: number };
}

/**
 * The log as the core reads it: the entries after the last snapshot, and the snapshot.
 * Synchronous: implementations keep the retained entries (or an index of them) in memory.
 * Errors are thrown as RaftError with code COMPACTED (the range starts at or before the
 * snapshot), UNAVAILABLE (past the last index) or SNAPSHOT_TEMPORARILY_UNAVAILABLE.
 * Methods, after etcd-raft's Storage:
 */
export interface RaftStorage {
  initialState(): InitialState;
  /**
   * Entries in [lo, hi), in order, stopping before the total `data` bytes would exceed
   * `maxBytes` but always at least one entry when lo < hi.
   */
  entries(lo: number, hi: number, maxBytes: number): Entry[];
  /** The term of the entry at `index`, for index in [firstIndex() - 1, lastIndex()]. */
  term(index: number): number;
  /** The index of the first retained entry (snapshot index + 1). */
  firstIndex(): number;
  /** The index of the last entry (the snapshot's index when no entries are retained). */
  lastIndex(): number;
  /** The most recent snapshot. */
  snapshot(): Snapshot;
}
