/**
 * RawNode: the face of the Raft core the application drives (after etcd-io/raft's
 * RawNode). Not thread-safe and synchronous: the application calls it from one place.
 *
 * The application loop (docs/raft.md, "The Ready cycle"), in this order:
 *   rd = node.ready()
 *   send rd.messages                      (at once: they need nothing durable)
 *   persist rd.snapshot, rd.entries, rd.hardState   (one fsync if rd.mustSync)
 *   send rd.messagesAfterPersist          (only now: they vouch for what was persisted)
 *   apply rd.committedEntries in order    (applyConfChange for confChange entries)
 *   answer rd.readStates once applied >= their index
 *   node.advance()
 * `ready()` is not called again before `advance()`. Meanwhile (while the disk works) the
 * application may keep calling tick, step, propose, readIndex and friends, and
 * `takeMessages()` to send at once what needs no persistence (heartbeats and their
 * responses, a leader's appends, vote requests, reads); what does need persistence waits
 * for the next Ready.
 */
import { encodeConfChange } from "./codec.js";
import { type RaftConfig, resolveConfig } from "./config.js";
import { RaftError } from "./errors.js";
import { payloadSize } from "./log.js";
import { blankMessage, Raft } from "./raft.js";
import { type RaftStatus, statusOf } from "./status.js";
import type {
  ConfChange,
  ConfState,
  Entry,
  HardState,
  Message,
  MessageType,
  NodeId,
  ReadState,
  Snapshot,
  SoftState,
} from "./types.js";

/** The work the application must do, in the order of the loop above. */
export interface Ready {
  /** Set iff the leader or the role changed since the last Ready. */
  readonly softState: SoftState | undefined;
  /** Set iff term, vote or commit changed since the last Ready: persist it. */
  readonly hardState: HardState | undefined;
  /**
   * Entries to append to the storage after `snapshot` (if any). An entry at an index <= the
   * stored last index replaces the stored entries from that index on.
   */
  readonly entries: readonly Entry[];
  /** A snapshot from the leader to install (storage and state machine) before `entries`. */
  readonly snapshot: Snapshot | undefined;
  /** Messages to send now, even while this Ready is being persisted. */
  readonly messages: Message[];
  /** Messages to send only once this Ready's snapshot, entries and hard state are durable. */
  readonly messagesAfterPersist: Message[];
  /**
   * Entries to apply, in order: committed, and durable locally once this Ready is persisted
   * (persisted by an earlier Ready or by this one).
   */
  readonly committedEntries: readonly Entry[];
  /** Confirmed reads: serve each once the state machine has applied `index`. */
  readonly readStates: readonly ReadState[];
  /** True iff persisting this Ready needs an fsync (entries, a snapshot, or a new term or vote). */
  readonly mustSync: boolean;
}

export type SnapshotStatus = "finished" | "failure";

/** Message types the core makes for itself; the network never carries them. */
const LOCAL_TYPES: ReadonlySet<MessageType> = new Set<MessageType>([
  "hup",
  "beat",
  "checkQuorum",
  "unreachable",
  "snapStatus",
]);
/** Responses, accepted only from members. */
const RESPONSE_TYPES: ReadonlySet<MessageType> = new Set<MessageType>([
  "appResp",
  "voteResp",
  "preVoteResp",
  "heartbeatResp",
]);
/** Types that carry no term (as etcd-raft: they are forwarded, the receiver's term applies). */
const TERMLESS_TYPES: ReadonlySet<MessageType> = new Set<MessageType>([
  "prop",
  "readIndex",
  "transferLeader",
]);

/** What `advance()` does for the outstanding Ready. */
interface Outstanding {
  readonly self: Message[];
  readonly snapshotIndex: number;
  readonly appliedIndex: number;
  readonly appliedBytes: number;
}

function invalid(message: string): never {
  throw new RaftError("INVALID_ARGUMENT", message);
}

function checkNodeId(what: string, id: NodeId): void {
  if (!Number.isSafeInteger(id) || id <= 0) invalid(`${what}: invalid node ID ${String(id)}`);
}

export class RawNode {
  private readonly raft: Raft;
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Outstanding | undefined = undefined;

  /** Builds a node from its storage; throws RaftError INVALID_ARGUMENT for a bad config. */
  constructor(config: RaftConfig) {
    this.raft = new Raft(resolveConfig(config));
    this.prevSoft = this.softState();
    this.prevHard = this.hardState();
  }

  get id(): NodeId {
    return this.raft.id;
  }

  /** Advances the logical clock by one tick (elections, heartbeats, quorum checks). */
  tick(): void {
    this.raft.tick();
  }

  /** Starts an election (a pre-election with preVote) now, if this node may campaign. */
  campaign(): void {
    this.raft.campaignNow();
  }

  /**
   * Proposes `data` as a normal entry: appended if this node leads, forwarded to the leader
   * if it follows. Throws RaftError PROPOSAL_DROPPED (no leader known, leadership transfer
   * in progress, not a member, forwarding disabled) or PROPOSAL_TOO_LARGE_BACKLOG
   * (back-pressure); nothing is appended then. Taken does not mean committed: watch
   * committedEntries.
   */
  propose(data: Uint8Array): void {
    if (!(data instanceof Uint8Array)) invalid("propose: data must be a Uint8Array");
    this.raft.propose("normal", data);
  }

  /**
   * Proposes a membership change. Besides propose's errors, a leader throws
   * CONF_CHANGE_PENDING while an earlier change is not applied, and INVALID_ARGUMENT for a
   * change it cannot make (no voter left, demoting itself).
   */
  proposeConfChange(cc: ConfChange): void {
    checkNodeId("proposeConfChange", cc.nodeId);
    this.raft.propose("confChange", encodeConfChange(cc));
  }

  /**
   * Applies a committed membership change: call it when applying its entry (decode the
   * entry's data with `decodeConfChange`). Returns the new configuration. Throws RaftError
   * INVALID_ARGUMENT, changing nothing, for a change that would leave no voter (every node
   * refuses the same entry the same way).
   */
  applyConfChange(cc: ConfChange): ConfState {
    return this.raft.applyConfChange(cc);
  }

  /**
   * Steps a message received from a peer. Throws RaftError INVALID_ARGUMENT for a message
   * that cannot come from the network (a local type, addressed to another node, a missing
   * term) and PEER_NOT_FOUND for a response from a node outside the configuration; the
   * node is unchanged then. A forwarded proposal the leader cannot take is dropped (and
   * logged), not thrown: the proposer times out.
   */
  step(m: Message): void {
    if (LOCAL_TYPES.has(m.type)) invalid(`step: ${m.type} is a local message type`);
    if (m.to !== this.raft.id)
      invalid(`step: message to ${m.to} stepped into node ${this.raft.id}`);
    if (m.term === 0 && !TERMLESS_TYPES.has(m.type)) invalid(`step: ${m.type} without a term`);
    if (RESPONSE_TYPES.has(m.type) && !this.raft.tracker.progress.has(m.from)) {
      throw new RaftError("PEER_NOT_FOUND", `step: ${m.type} from ${m.from}, not a member`);
    }
    this.raft.step(m);
  }

  /**
   * Asks for a linearizable read tagged `context` (unique per request): a ReadState with
   * the same context comes out in a later Ready once the leader confirmed its leadership;
   * serve the read once applied >= its index. Throws RaftError READ_INDEX_DROPPED if no
   * leader is known. A request may also be lost (leader change, partition): time it out.
   */
  readIndex(context: Uint8Array): void {
    if (!(context instanceof Uint8Array)) invalid("readIndex: context must be a Uint8Array");
    this.raft.readIndex(context);
  }

  /** Asks the leader to hand leadership to `transferee` (forwarded if this node follows). */
  transferLeader(transferee: NodeId): void {
    checkNodeId("transferLeader", transferee);
    this.raft.transferLeader(transferee);
  }

  /**
   * True iff this node leads and a peer does not know the current commit index yet (see
   * RaftConfig.deferCommitBroadcast).
   */
  commitUntold(): boolean {
    return this.raft.commitUntold();
  }

  /**
   * A leader sends each peer that does not know the current commit index an append
   * carrying it (empty if the peer lacks no entry): collect it with takeMessages or the
   * next Ready. Nothing on a follower, or when every peer knows it.
   */
  tellCommit(): void {
    this.raft.tellCommit();
  }

  /** The transport could not deliver the last message to `id`: a leader probes it again. */
  reportUnreachable(id: NodeId): void {
    const m = blankMessage("unreachable", this.raft.id, id);
    this.raft.step(m);
  }

  /** The application finished (or failed) streaming the snapshot to `id`. */
  reportSnapshot(id: NodeId, status: SnapshotStatus): void {
    const m = blankMessage("snapStatus", this.raft.id, id);
    m.reject = status === "failure";
    this.raft.step(m);
  }

  status(): RaftStatus {
    return statusOf(this.raft);
  }

  /**
   * The leader as the core knows it now (0: none): where a proposal made now goes. It may
   * be ahead of the last Ready's soft state.
   */
  get lead(): NodeId {
    return this.raft.lead;
  }

  /** The core's current term. */
  get term(): number {
    return this.raft.term;
  }

  private softState(): SoftState {
    return { lead: this.raft.lead, role: this.raft.role };
  }

  private hardState(): HardState {
    return { term: this.raft.term, vote: this.raft.vote, commit: this.raft.log.committed };
  }

  /** True iff `ready()` has work to hand out (always false while a Ready is outstanding). */
  hasReady(): boolean {
    if (this.outstanding !== undefined) return false;
    const r = this.raft;
    const log = r.log;
    return (
      r.msgs.length > 0 ||
      r.msgsAfterPersist.length > 0 ||
      r.selfAfterPersist.length > 0 ||
      log.unstable.hasNextEntries() ||
      log.hasNextCommittedEntries() ||
      r.readStates.length > 0 ||
      r.hasPendingSends() ||
      log.unstable.nextSnapshot() !== undefined ||
      r.lead !== this.prevSoft.lead ||
      r.role !== this.prevSoft.role ||
      r.term !== this.prevHard.term ||
      r.vote !== this.prevHard.vote ||
      log.committed !== this.prevHard.commit
    );
  }

  /**
   * The work to do now (see the loop in this file's header). Throws a plain Error if the
   * previous Ready was not advanced.
   */
  ready(): Ready {
    if (this.outstanding !== undefined)
      throw new Error("RawNode.ready() called again before advance()");
    const r = this.raft;
    const log = r.log;
    r.flush();
    const prevSoft = this.prevSoft;
    const prevHard = this.prevHard;
    const softChanged = r.lead !== prevSoft.lead || r.role !== prevSoft.role;
    const hardChanged =
      r.term !== prevHard.term || r.vote !== prevHard.vote || log.committed !== prevHard.commit;
    const soft = softChanged ? this.softState() : prevSoft;
    const hard = hardChanged ? this.hardState() : prevHard;
    const entries = log.unstable.hasNextEntries() ? log.unstable.nextEntries() : [];
    const snapshot = log.unstable.nextSnapshot();
    const committedEntries = log.nextCommittedEntries();
    const messages = r.msgs;
    const messagesAfterPersist = r.msgsAfterPersist;
    const readStates = r.readStates;
    r.msgs = [];
    r.msgsAfterPersist = [];
    r.readStates = [];
    const rd: Ready = {
      softState: softChanged ? soft : undefined,
      hardState: hardChanged ? hard : undefined,
      entries,
      snapshot,
      messages,
      messagesAfterPersist,
      committedEntries,
      readStates,
      mustSync:
        entries.length > 0 ||
        snapshot !== undefined ||
        hard.term !== prevHard.term ||
        hard.vote !== prevHard.vote,
    };
    if (softChanged) this.prevSoft = soft;
    if (hardChanged) this.prevHard = hard;
    log.unstable.acceptInProgress();
    const lastCommitted = committedEntries[committedEntries.length - 1];
    if (lastCommitted !== undefined) {
      log.acceptApplying(lastCommitted.index);
      for (let i = 0; i < committedEntries.length; i++) {
        if (committedEntries[i]!.type === "confChange") r.confChangeHandedOut = true;
      }
    }
    this.outstanding = {
      self: r.selfAfterPersist,
      snapshotIndex: snapshot === undefined ? 0 : snapshot.metadata.index,
      appliedIndex: lastCommitted === undefined ? 0 : lastCommitted.index,
      appliedBytes: lastCommitted === undefined ? 0 : payloadSize(committedEntries),
    };
    r.selfAfterPersist = [];
    return rd;
  }

  /**
   * The last Ready is done: persisted, its messages sent, its committed entries applied.
   * Counts this node's own vote and own log toward elections and commits now that they are
   * durable. Throws a plain Error if no Ready is outstanding.
   */
  advance(): void {
    const o = this.outstanding;
    if (o === undefined) throw new Error("RawNode.advance() called without an outstanding Ready");
    this.outstanding = undefined;
    const r = this.raft;
    r.confChangeHandedOut = false;
    r.log.unstable.stableInProgress();
    if (o.snapshotIndex > 0) {
      r.log.unstable.stableSnapshot(o.snapshotIndex);
      r.log.appliedSnapshot(o.snapshotIndex);
    }
    if (o.appliedIndex > 0) {
      r.log.appliedTo(o.appliedIndex);
      r.reduceUncommittedSize(o.appliedBytes);
    }
    for (const m of o.self) r.step(m);
  }

  /**
   * Messages that may be sent at once (they need nothing durable), produced since the last
   * `ready()` or `takeMessages()`: call it while a Ready is being persisted so that
   * heartbeats, appends and votes do not wait on the disk.
   */
  takeMessages(): Message[] {
    const r = this.raft;
    r.flush();
    const out = r.msgs;
    r.msgs = [];
    return out;
  }
}
