/**
 * The Raft state machine: one node's roles, terms, votes, log replication, reads and
 * membership, with no I/O, no clock and no randomness but a seeded generator. `RawNode`
 * (raw-node.ts) is the face the application drives; docs/raft.md states the contract.
 *
 * Structure (after etcd-io/raft's raft.go): `step` handles what every role shares (term
 * comparison, votes), then dispatches to `stepLeader`, `stepCandidate` (candidates and
 * pre-candidates) or `stepFollower`. Outgoing messages go to `msgs` (may be sent at once)
 * or, when they depend on state not yet durable (append acknowledgements, vote and
 * pre-vote responses), to `msgsAfterPersist`; the ones addressed to this node itself (its
 * own vote, its own acknowledgement of its appends) go to `selfAfterPersist` and are
 * stepped back in by `RawNode.advance`, once the state they vouch for is durable.
 *
 * A leader does not send appends from inside `step`/`propose`: it records what each peer
 * is owed (`Progress.sendWanted`) and `flush` sends it when the application collects
 * messages, so that proposals and acknowledgements arriving together share messages.
 * Likewise ReadIndex requests share one heartbeat round per flush.
 */
import { decodeConfChange } from "./codec.js";
import type { ResolvedConfig } from "./config.js";
import { RaftError, type RaftErrorCode } from "./errors.js";
import { payloadSize, RaftLog } from "./log.js";
import type { RaftLogger } from "./logger.js";
import { applyChange, describeConfChange, describeConfState, isMember } from "./membership.js";
import { SeededRandom } from "./prng.js";
import type { Progress } from "./progress.js";
import { ProgressTracker } from "./progress-tracker.js";
import { decodeReadPosition, ReadOnlyQueue } from "./read-only.js";
import {
  type ConfChange,
  type ConfState,
  type Entry,
  type EntryType,
  type Message,
  type MessageType,
  NONE,
  type NodeId,
  type RaftRole,
  type ReadState,
  type Snapshot,
} from "./types.js";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const NO_ENTRIES: readonly Entry[] = Object.freeze([]) as readonly Entry[];
const NO_BYTES = new Uint8Array(0);

/** The context of vote requests sent on a leader's order (MsgTimeoutNow): they bypass leases. */
export const TRANSFER_CONTEXT = new TextEncoder().encode("transfer");

/**
 * The context of append rejections from a node repairing a damaged log: its hint is
 * below what it had acknowledged (see InitialState.repair).
 */
export const REPAIR_CONTEXT = new TextEncoder().encode("repair");

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function isTransfer(ctx: Uint8Array): boolean {
  return sameBytes(ctx, TRANSFER_CONTEXT);
}

/** A message with every field at its "unused" value. */
export function blankMessage(type: MessageType, to: NodeId, from: NodeId): Mutable<Message> {
  return {
    type,
    to,
    from,
    term: 0,
    logTerm: 0,
    index: 0,
    entries: NO_ENTRIES,
    commit: 0,
    snapshot: undefined,
    reject: false,
    rejectHint: 0,
    context: NO_BYTES,
  };
}

type CampaignType = "preElection" | "election" | "transfer";

/** A read waiting for the leader to commit an entry of its term. */
interface HeldRead {
  readonly from: NodeId;
  readonly context: Uint8Array;
}

export class Raft {
  readonly id: NodeId;
  term = 0;
  vote: NodeId = NONE;
  lead: NodeId = NONE;
  role: RaftRole = "follower";
  readonly log: RaftLog;
  readonly tracker: ProgressTracker;
  /** True iff this node is a learner in its configuration. */
  isLearner = false;

  msgs: Message[] = [];
  msgsAfterPersist: Message[] = [];
  /** Messages to this node itself, stepped by `RawNode.advance` (own vote, own append acknowledgement). */
  selfAfterPersist: Message[] = [];
  readStates: ReadState[] = [];

  electionElapsed = 0;
  heartbeatElapsed = 0;
  randomizedElectionTimeout = 0;
  leadTransferee: NodeId = NONE;
  /** A leader accepts a membership change only once everything up to here is applied. */
  pendingConfIndex = 0;
  /** Data bytes of entries this leader appended and the application has not yet applied. */
  uncommittedSize = 0;

  /**
   * Non-zero while the node repairs a damaged log (InitialState.repair): it neither votes
   * nor campaigns until its log matches a leader's through this index.
   */
  repairThrough = 0;

  private readOnly = new ReadOnlyQueue();
  private heldReads: HeldRead[] = [];
  /** A leader owes some peer an append (see Progress.sendWanted). */
  private sendsPending = false;
  /** Set by RawNode while the outstanding Ready hands out a membership change. */
  confChangeHandedOut = false;
  /**
   * Membership changes the application applied before this start are replayed into the
   * configuration from the snapshot's up to `confReplayTarget` (the applied index): at
   * once from the log, or, if the log was damaged, as a leader's entries come back (an
   * entry at or below the applied index is committed, so a leader's is the same).
   */
  private confReplayedThrough = 0;
  private confReplayTarget = 0;

  private readonly cfg: ResolvedConfig;
  private readonly logger: RaftLogger;
  private readonly random: SeededRandom;

  constructor(cfg: ResolvedConfig) {
    this.cfg = cfg;
    this.id = cfg.id;
    this.logger = cfg.logger;
    this.random = new SeededRandom(cfg.seed, cfg.id);
    const storage = cfg.storage;
    this.log = new RaftLog(storage, cfg.maxCommittedSizePerReady);
    this.tracker = new ProgressTracker(cfg.maxInflightMsgs, cfg.maxInflightBytes);

    const init = storage.initialState();
    const hs = init.hardState;
    const snapshotIndex = storage.firstIndex() - 1;
    const lastIndex = this.log.lastIndex();
    this.switchToConfig(init.confState);

    let commit = Math.max(hs.commit, snapshotIndex);
    if (commit > lastIndex) {
      if (init.repair === undefined) {
        throw new Error(
          `raft ${this.id}: hard state commit ${hs.commit} is beyond the last index ${lastIndex} ` +
            "(the storage lost entries without reporting damage)",
        );
      }
      this.logger.warn(
        `${this.id} clamped commit ${hs.commit} to the last index ${lastIndex} of its damaged log`,
      );
      commit = lastIndex;
    }
    const applied = Math.max(cfg.applied, snapshotIndex);
    if (applied > lastIndex && init.repair === undefined) {
      throw new Error(
        `raft ${this.id}: applied ${applied} is beyond the last index ${lastIndex} ` +
          "(the storage lost applied entries without reporting damage)",
      );
    }
    // Whatever the application applied was committed.
    this.log.committed = Math.max(commit, Math.min(applied, lastIndex));
    this.log.applied = applied;
    this.log.applying = applied;
    this.term = hs.term;
    this.vote = hs.vote;
    this.confReplayedThrough = snapshotIndex;
    this.confReplayTarget = applied;
    this.maybeReplayConfChanges(lastIndex);
    if (init.repair !== undefined) this.repairThrough = Math.max(1, init.repair.throughIndex);
    this.becomeFollower(this.term, NONE);
    this.logger.info(
      `${this.id} started [${describeConfState(this.tracker.confState())}, term ${this.term}, ` +
        `commit ${this.log.committed}, applied ${this.log.applied}, last ${lastIndex}/${this.log.lastTerm()}]`,
    );
    if (this.repairThrough > 0) {
      this.logger.warn(
        `${this.id} found its log damaged below its durable point: it keeps entries up to ${lastIndex} ` +
          `and will neither vote nor campaign until a leader's entries reach index ${this.repairThrough}`,
      );
    }
  }

  // ---- sending ----

  private send(m: Mutable<Message>): void {
    m.from = this.id;
    const t = m.type;
    if (t === "vote" || t === "voteResp" || t === "preVote" || t === "preVoteResp") {
      if (m.term === 0) throw new Error(`raft ${this.id}: ${t} sent without a term`);
    } else if (t !== "prop" && t !== "readIndex" && t !== "transferLeader") {
      m.term = this.term;
    }
    if (t === "appResp" || t === "voteResp" || t === "preVoteResp") {
      if (m.to === this.id) this.selfAfterPersist.push(m);
      else this.msgsAfterPersist.push(m);
    } else {
      if (m.to === this.id) throw new Error(`raft ${this.id}: ${t} addressed to itself`);
      this.msgs.push(m);
    }
  }

  /** Asks the next flush to send `to` what it lacks (`how` 2: even an empty probe). */
  private wantSend(pr: Progress, how: 1 | 2): void {
    if (how === 1 && pr.next > this.log.lastIndex() && !this.owesCommit(pr)) return;
    if (pr.sendWanted < how) pr.sendWanted = how;
    this.sendsPending = true;
  }

  private wantSendAll(how: 1 | 2): void {
    for (const id of this.tracker.members) {
      if (id !== this.id) this.wantSend(this.tracker.progress.get(id)!, how);
    }
  }

  /**
   * True iff this node leads and some peer has not been told the current commit index
   * (under deferCommitBroadcast it waits for the next append or heartbeat).
   */
  commitUntold(): boolean {
    if (this.role !== "leader") return false;
    for (const id of this.tracker.members) {
      if (id !== this.id && this.tracker.progress.get(id)!.canBumpCommit(this.log.committed))
        return true;
    }
    return false;
  }

  /**
   * A leader owes each peer not yet told the current commit index an append carrying it
   * (empty when the peer lacks no entry), sent by the next flush. Under
   * deferCommitBroadcast the application calls it when no traffic told the commit soon
   * enough, so that followers do not learn a lone write only with the next heartbeat.
   */
  tellCommit(): void {
    if (this.role !== "leader") return;
    for (const id of this.tracker.members) {
      if (id === this.id) continue;
      const pr = this.tracker.progress.get(id)!;
      if (pr.canBumpCommit(this.log.committed)) this.wantSend(pr, 2);
    }
  }

  /** True iff `flush` has something to send. */
  hasPendingSends(): boolean {
    return this.sendsPending || (this.role === "leader" && this.readOnly.needsRound());
  }

  /** Sends the appends peers are owed and a heartbeat round for waiting reads. */
  flush(): void {
    if (this.role !== "leader") {
      this.sendsPending = false;
      return;
    }
    if (this.sendsPending) {
      this.sendsPending = false;
      for (const id of this.tracker.members) {
        if (id === this.id) continue;
        const pr = this.tracker.progress.get(id)!;
        const how = pr.sendWanted;
        if (how === 0) continue;
        pr.sendWanted = 0;
        let sent = false;
        while (this.maybeSendAppend(id, pr, false)) sent = true;
        if (!sent && (how === 2 || this.owesCommit(pr))) {
          this.maybeSendAppend(id, pr, true);
        }
      }
    }
    if (this.readOnly.needsRound()) this.bcastHeartbeat();
  }

  /**
   * True iff `pr` is owed an empty append for the commit index alone: it was not told the
   * current one yet and, under deferCommitBroadcast, the untold range holds a membership
   * change (pendingConfIndex), an entry the peer forwarded (its proposer waits for the
   * commit: a write through a follower costs a round trip, not a heartbeat), or it was told
   * no commit of this term yet (the leader's first entry), which must not wait for traffic.
   */
  private owesCommit(pr: Progress): boolean {
    if (!pr.canBumpCommit(this.log.committed)) return false;
    return (
      !this.cfg.deferCommitBroadcast ||
      this.pendingConfIndex > pr.sentCommit ||
      pr.forwardedIndex > pr.sentCommit ||
      this.log.term(pr.sentCommit) < this.term
    );
  }

  /**
   * Sends `to` an append of the entries from `pr.next` (a snapshot if they are compacted),
   * unless the peer is paused. With `sendIfEmpty` false, sends only if there are entries.
   * Returns true iff a message was sent.
   */
  private maybeSendAppend(to: NodeId, pr: Progress, sendIfEmpty: boolean): boolean {
    if (pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm < 0) return this.maybeSendSnapshot(to, pr);
    let ents: readonly Entry[] = NO_ENTRIES;
    if (pr.state !== "replicate" || !pr.inflights.full()) {
      try {
        ents = this.log.entriesFrom(pr.next, this.cfg.maxSizePerMsg);
      } catch (err) {
        if (err instanceof RaftError && err.code === "COMPACTED")
          return this.maybeSendSnapshot(to, pr);
        throw err;
      }
    }
    if (ents.length === 0 && !sendIfEmpty) return false;
    const m = blankMessage("app", to, this.id);
    m.index = prevIndex;
    m.logTerm = prevTerm;
    m.entries = ents;
    m.commit = this.log.committed;
    this.send(m);
    pr.sentEntries(ents.length, payloadSize(ents));
    pr.sentCommit = this.log.committed;
    return true;
  }

  private maybeSendSnapshot(to: NodeId, pr: Progress): boolean {
    if (!pr.recentActive) {
      this.logger.debug(`${this.id} does not send a snapshot to ${to}: not recently active`);
      return false;
    }
    let snapshot: Snapshot;
    try {
      snapshot = this.log.snapshot();
    } catch (err) {
      if (err instanceof RaftError && err.code === "SNAPSHOT_TEMPORARILY_UNAVAILABLE") {
        this.logger.debug(
          `${this.id} cannot send a snapshot to ${to} yet: temporarily unavailable`,
        );
        return false;
      }
      throw err;
    }
    if (snapshot.metadata.index === 0)
      throw new Error(`raft ${this.id}: needs a snapshot, storage has none`);
    const { index, term } = snapshot.metadata;
    if (!isMember(snapshot.metadata.confState, to)) {
      // The follower would ignore it: it joined after the snapshot was taken.
      if (!pr.staleSnapshotReported) {
        pr.staleSnapshotReported = true;
        this.logger.warn(
          `${this.id} cannot catch ${to} up: it needs a snapshot, and the latest (${term}/${index}) ` +
            `predates its membership; the application must take a newer one`,
        );
      }
      return false;
    }
    this.logger.info(
      `${this.id} [first ${this.log.firstIndex()}, commit ${this.log.committed}] sends snapshot ` +
        `${term}/${index} to ${to} [next ${pr.next}, match ${pr.match}]`,
    );
    pr.becomeSnapshot(index);
    const m = blankMessage("snap", to, this.id);
    m.snapshot = snapshot;
    this.send(m);
    return true;
  }

  private sendHeartbeat(to: NodeId, ctx: Uint8Array): void {
    const pr = this.tracker.progress.get(to)!;
    const commit = Math.min(pr.match, this.log.committed);
    const m = blankMessage("heartbeat", to, this.id);
    m.commit = commit;
    m.context = ctx;
    this.send(m);
    if (commit > pr.sentCommit) pr.sentCommit = commit;
  }

  private bcastHeartbeat(): void {
    const ctx = this.readOnly.roundContext(this.id);
    if (ctx.length > 0) this.releaseConfirmedReads();
    for (const id of this.tracker.members) if (id !== this.id) this.sendHeartbeat(id, ctx);
  }

  // ---- role changes ----

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
      this.dropStaleAcks();
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout =
      this.cfg.electionTick + this.random.intBelow(this.cfg.electionTick);
    this.leadTransferee = NONE;
    this.tracker.resetVotes();
    const next = this.log.lastIndex() + 1;
    for (const id of this.tracker.members) {
      // A leader counts its own log toward commit only as far as it is durable.
      this.tracker.resetProgress(id, next, id === this.id ? this.log.stableLastIndex() : 0);
    }
    this.sendsPending = false;
    this.pendingConfIndex = 0;
    this.uncommittedSize = 0;
    const dropped = this.heldReads.length + this.readOnly.pending;
    if (dropped > 0) this.logger.info(`${this.id} drops ${dropped} unanswered read(s)`);
    this.readOnly = new ReadOnlyQueue();
    this.heldReads = [];
  }

  /**
   * Drops the acknowledgements of older terms that wait for the next Ready: the entries
   * they vouch for may be replaced by a leader of the new term before that Ready is
   * persisted (only a leader of a later term replaces entries), and an acknowledgement
   * must never leave for entries that were never durable. Once handed out in a Ready,
   * an acknowledgement is true: its entries are in that Ready.
   */
  private dropStaleAcks(): void {
    const pending = this.msgsAfterPersist;
    let kept = 0;
    for (let i = 0; i < pending.length; i++) {
      const m = pending[i]!;
      if (m.type === "appResp" && !m.reject && m.term < this.term) continue;
      pending[kept++] = m;
    }
    pending.length = kept;
  }

  becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.lead = lead;
    this.role = "follower";
    this.logger.info(`${this.id} became follower at term ${this.term}`);
  }

  private becomeCandidate(): void {
    if (this.role === "leader") throw new Error(`raft ${this.id}: leader -> candidate`);
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = "candidate";
    this.logger.info(`${this.id} became candidate at term ${this.term}`);
  }

  private becomePreCandidate(): void {
    if (this.role === "leader") throw new Error(`raft ${this.id}: leader -> pre-candidate`);
    // A pre-election changes neither the term nor the vote.
    this.tracker.resetVotes();
    this.lead = NONE;
    this.role = "preCandidate";
    this.logger.info(`${this.id} became pre-candidate at term ${this.term}`);
  }

  private becomeLeader(): void {
    if (this.role === "follower") throw new Error(`raft ${this.id}: follower -> leader`);
    this.reset(this.term);
    this.lead = this.id;
    this.role = "leader";
    const self = this.tracker.progress.get(this.id)!;
    self.becomeReplicate();
    self.recentActive = true;
    // Membership changes in the log (applied or not) must be applied before a new one.
    this.pendingConfIndex = this.log.lastIndex();
    // The empty entry of the new term: committing it commits everything before it, and
    // tells this leader its commit index is current (Raft 5.4.2, thesis 6.4).
    if (!this.appendEntries([{ term: 0, index: 0, type: "normal", data: NO_BYTES }])) {
      throw new Error(`raft ${this.id}: the empty entry of a new term was refused`);
    }
    this.wantSendAll(2);
    this.logger.info(`${this.id} became leader at term ${this.term}`);
  }

  /**
   * True iff this node may campaign: a voter of its configuration, no snapshot pending,
   * its log not under repair, and its configuration caught up with what was applied.
   */
  promotable(): boolean {
    const pr = this.tracker.progress.get(this.id);
    return (
      pr !== undefined &&
      !pr.isLearner &&
      this.log.unstable.snapshot === undefined &&
      this.repairThrough === 0 &&
      this.confReplayedThrough >= this.confReplayTarget
    );
  }

  private hup(t: CampaignType): void {
    if (this.role === "leader") {
      this.logger.debug(`${this.id} ignores hup: already leader`);
      return;
    }
    if (!this.promotable()) {
      const pr = this.tracker.progress.get(this.id);
      const why =
        pr === undefined
          ? "it is not a member of its configuration"
          : pr.isLearner
            ? "it is a learner"
            : this.repairThrough > 0
              ? `its log is under repair until index ${this.repairThrough}`
              : this.log.unstable.snapshot !== undefined
                ? "a snapshot is being installed"
                : "it has not yet replayed the membership changes it applied before";
      this.logger.warn(`${this.id} cannot campaign: ${why}`);
      return;
    }
    if (this.hasUnappliedConfChanges()) {
      this.logger.warn(
        `${this.id} cannot campaign at term ${this.term}: committed membership changes are not applied yet`,
      );
      return;
    }
    this.logger.info(`${this.id} starts a new election at term ${this.term}`);
    this.campaign(t);
  }

  /**
   * True iff a committed membership change may not be applied yet: one in the outstanding
   * Ready, or one after it (the application may have compacted what it applied).
   */
  private hasUnappliedConfChanges(): boolean {
    if (this.confChangeHandedOut) return true;
    let lo = this.log.applying + 1;
    const hi = this.log.committed + 1;
    while (lo < hi) {
      const ents = this.log.slice(lo, hi, this.cfg.maxCommittedSizePerReady);
      for (const e of ents) if (e.type === "confChange") return true;
      lo += ents.length;
    }
    return false;
  }

  private campaign(t: CampaignType): void {
    let term: number;
    let voteType: MessageType;
    if (t === "preElection") {
      this.becomePreCandidate();
      voteType = "preVote";
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      voteType = "vote";
      term = this.term;
    }
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    for (const id of this.tracker.voters) {
      if (id === this.id) {
        // Counted on advance, once this node's term and vote are durable.
        const m = blankMessage(voteType === "vote" ? "voteResp" : "preVoteResp", id, this.id);
        m.term = term;
        this.send(m);
        continue;
      }
      this.logger.info(
        `${this.id} [last ${lastTerm}/${lastIndex}] sent ${voteType} to ${id} at term ${this.term}`,
      );
      const m = blankMessage(voteType, id, this.id);
      m.term = term;
      m.index = lastIndex;
      m.logTerm = lastTerm;
      if (t === "transfer") m.context = TRANSFER_CONTEXT;
      this.send(m);
    }
  }

  private poll(from: NodeId, type: MessageType, granted: boolean): void {
    this.logger.info(
      `${this.id} received ${type}${granted ? "" : " rejection"} from ${from} at term ${this.term}`,
    );
    this.tracker.recordVote(from, granted);
    const { granted: g, rejected: r, result } = this.tracker.tallyVotes();
    this.logger.info(`${this.id} has ${g} ${type} grant(s) and ${r} rejection(s)`);
    if (result === "won") {
      if (this.role === "preCandidate") this.campaign("election");
      else this.becomeLeader();
    } else if (result === "lost") {
      this.becomeFollower(this.term, NONE);
    }
  }

  // ---- ticks ----

  tick(): void {
    if (this.role === "leader") this.tickHeartbeat();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(this.cfg.preVote ? "preElection" : "election");
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTick) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum) this.checkQuorum();
      if (this.role === "leader" && this.leadTransferee !== NONE) {
        this.logger.info(
          `${this.id} aborts the transfer of leadership to ${this.leadTransferee}: timed out`,
        );
        this.leadTransferee = NONE;
      }
    }
    if (this.role !== "leader") return;
    if (this.heartbeatElapsed >= this.cfg.heartbeatTick) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat();
    }
  }

  private checkQuorum(): void {
    if (!this.tracker.quorumActive(this.id)) {
      this.logger.warn(
        `${this.id} steps down at term ${this.term}: it has not heard from a quorum within an election timeout`,
      );
      this.becomeFollower(this.term, NONE);
    }
    for (const id of this.tracker.members) {
      if (id !== this.id) this.tracker.progress.get(id)!.recentActive = false;
    }
  }

  // ---- local requests (RawNode) ----

  /** Starts an election now (RawNode.campaign). */
  campaignNow(): void {
    this.hup(this.cfg.preVote ? "preElection" : "election");
  }

  /** Proposes one entry; throws RaftError (PROPOSAL_DROPPED, PROPOSAL_TOO_LARGE_BACKLOG, CONF_CHANGE_PENDING, INVALID_ARGUMENT). */
  propose(type: EntryType, data: Uint8Array): void {
    const code = this.handleProposal(type, data, true);
    if (code !== undefined) throw new RaftError(code, this.refusal);
  }

  private refusal = "";

  /**
   * Takes a proposal (local or forwarded): appends it as leader, forwards it as follower.
   * Returns undefined if taken, else the code of the refusal (its text in `refusal`).
   */
  private handleProposal(
    type: EntryType,
    data: Uint8Array,
    local: boolean,
  ): RaftErrorCode | undefined {
    if (!this.tracker.progress.has(this.id)) {
      return this.refuse("PROPOSAL_DROPPED", `${this.id} is not a member of its configuration`);
    }
    if (this.role === "leader") {
      if (this.leadTransferee !== NONE) {
        return this.refuse(
          "PROPOSAL_DROPPED",
          `${this.id} is transferring leadership to ${this.leadTransferee}`,
        );
      }
      const index = this.log.lastIndex() + 1;
      if (type === "confChange") {
        const why = this.confChangeRefusal(data);
        if (why !== undefined) return why;
      }
      if (!this.appendEntries([{ term: this.term, index, type, data }])) {
        return this.refuse(
          "PROPOSAL_TOO_LARGE_BACKLOG",
          `${this.id} holds ${this.uncommittedSize} uncommitted bytes (limit ${this.cfg.maxUncommittedEntriesSize})`,
        );
      }
      if (type === "confChange") this.pendingConfIndex = index;
      this.wantSendAll(1);
      return undefined;
    }
    if (this.role !== "follower" || this.lead === NONE) {
      return this.refuse("PROPOSAL_DROPPED", `${this.id} knows no leader at term ${this.term}`);
    }
    if (this.cfg.disableProposalForwarding) {
      return this.refuse(
        "PROPOSAL_DROPPED",
        `${this.id} does not forward proposals to leader ${this.lead}`,
      );
    }
    if (!local) this.logger.debug(`${this.id} forwards a proposal to ${this.lead}`);
    const m = blankMessage("prop", this.lead, this.id);
    m.entries = [{ term: 0, index: 0, type, data }];
    this.send(m);
    return undefined;
  }

  private refuse(code: RaftErrorCode, why: string): RaftErrorCode {
    this.refusal = why;
    return code;
  }

  /** Why a leader refuses the membership change in `data`, or undefined if it takes it. */
  private confChangeRefusal(data: Uint8Array): RaftErrorCode | undefined {
    if (this.pendingConfIndex > this.log.applied) {
      return this.refuse(
        "CONF_CHANGE_PENDING",
        `a membership change at index ${this.pendingConfIndex} is not applied yet (applied ${this.log.applied})`,
      );
    }
    let cc: ConfChange;
    try {
      cc = decodeConfChange(data);
      applyChange(this.tracker.confState(), cc);
    } catch (err) {
      return this.refuse("INVALID_ARGUMENT", (err as Error).message);
    }
    if (cc.type === "addLearner" && cc.nodeId === this.id) {
      return this.refuse(
        "INVALID_ARGUMENT",
        `${this.id} cannot demote itself to learner while it leads (transfer leadership first)`,
      );
    }
    return undefined;
  }

  /** Asks for a linearizable read (RawNode.readIndex); throws RaftError READ_INDEX_DROPPED. */
  readIndex(context: Uint8Array): void {
    if (this.role === "leader") {
      this.leaderReadIndex(this.id, context);
      return;
    }
    if (this.role !== "follower" || this.lead === NONE) {
      throw new RaftError("READ_INDEX_DROPPED", `${this.id} knows no leader at term ${this.term}`);
    }
    const m = blankMessage("readIndex", this.lead, this.id);
    m.context = context;
    this.send(m);
  }

  private leaderReadIndex(from: NodeId, context: Uint8Array): void {
    if (this.tracker.isSingleton()) {
      if (this.committedEntryInCurrentTerm()) this.answerRead(from, context, this.log.committed);
      else this.heldReads.push({ from, context });
      return;
    }
    // Thesis 6.4: until it commits an entry of its own term, a new leader does not know
    // its commit index is current, so it answers nothing before.
    if (!this.committedEntryInCurrentTerm()) {
      this.heldReads.push({ from, context });
      return;
    }
    this.queueRead(from, context);
  }

  private queueRead(from: NodeId, context: Uint8Array): void {
    if (this.cfg.readOnlyOption === "leaseBased" || this.tracker.isSingleton()) {
      this.answerRead(from, context, this.log.committed);
      return;
    }
    this.readOnly.add({ from, context, index: this.log.committed });
  }

  private committedEntryInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private releaseHeldReads(): void {
    if (this.heldReads.length === 0 || !this.committedEntryInCurrentTerm()) return;
    const held = this.heldReads;
    this.heldReads = [];
    for (const r of held) this.queueRead(r.from, r.context);
  }

  private releaseConfirmedReads(): void {
    for (const req of this.readOnly.advance(this.tracker.voters)) {
      this.answerRead(req.from, req.context, req.index);
    }
  }

  private answerRead(from: NodeId, context: Uint8Array, index: number): void {
    if (from === NONE || from === this.id) {
      this.readStates.push({ index, context });
      return;
    }
    const m = blankMessage("readIndexResp", from, this.id);
    m.index = index;
    m.context = context;
    this.send(m);
  }

  /** Asks the leader to hand leadership to `transferee` (RawNode.transferLeader). */
  transferLeader(transferee: NodeId): void {
    if (this.role === "leader") {
      this.leaderTransfer(transferee);
      return;
    }
    if (this.lead === NONE) {
      this.logger.info(
        `${this.id} knows no leader at term ${this.term}: drops the transfer request`,
      );
      return;
    }
    // As etcd-raft: a forwarded transfer request names the transferee in `from`.
    const m = blankMessage("transferLeader", this.lead, transferee);
    m.from = transferee;
    this.msgs.push(m);
  }

  private leaderTransfer(transferee: NodeId): void {
    const pr = this.tracker.progress.get(transferee);
    if (pr === undefined) {
      this.logger.info(
        `${this.id} ignores the transfer of leadership to ${transferee}: not a member`,
      );
      return;
    }
    if (pr.isLearner) {
      this.logger.info(`${this.id} ignores the transfer of leadership to learner ${transferee}`);
      return;
    }
    const last = this.leadTransferee;
    if (last !== NONE) {
      if (last === transferee) {
        this.logger.info(`${this.id} is already transferring leadership to ${transferee}`);
        return;
      }
      this.logger.info(`${this.id} aborts the transfer of leadership to ${last}`);
      this.leadTransferee = NONE;
    }
    if (transferee === this.id) {
      this.logger.info(`${this.id} is already leader: ignores the transfer to itself`);
      return;
    }
    this.logger.info(
      `${this.id} [term ${this.term}] starts to transfer leadership to ${transferee}`,
    );
    // The transfer must end within an election timeout.
    this.electionElapsed = 0;
    this.leadTransferee = transferee;
    if (pr.match === this.log.lastIndex()) {
      this.sendTimeoutNow(transferee);
    } else {
      this.wantSend(pr, 2);
    }
  }

  private sendTimeoutNow(to: NodeId): void {
    this.logger.info(`${this.id} sends timeoutNow to ${to}: its log is up to date`);
    this.send(blankMessage("timeoutNow", to, this.id));
  }

  // ---- appending ----

  /**
   * Appends entries (their term and index are set here) to a leader's log, if the
   * uncommitted budget allows. Returns false, appending nothing, if it does not.
   */
  private appendEntries(ents: Mutable<Entry>[]): boolean {
    const size = payloadSize(ents);
    if (
      this.uncommittedSize > 0 &&
      size > 0 &&
      this.uncommittedSize + size > this.cfg.maxUncommittedEntriesSize
    ) {
      this.logger.debug(`${this.id} refuses a proposal: uncommitted entries over the limit`);
      return false;
    }
    this.uncommittedSize += size;
    let index = this.log.lastIndex();
    for (const e of ents) {
      e.term = this.term;
      e.index = ++index;
    }
    const last = this.log.append(ents);
    // The leader's own acknowledgement, counted once the entries are durable: one message
    // covers every append since the last Ready.
    const prev = this.selfAfterPersist[this.selfAfterPersist.length - 1];
    if (prev !== undefined && prev.type === "appResp" && prev.term === this.term) {
      (prev as Mutable<Message>).index = last;
    } else {
      const m = blankMessage("appResp", this.id, this.id);
      m.index = last;
      this.send(m);
    }
    return true;
  }

  /** The application applied entries with `bytes` of data: they no longer count as uncommitted. */
  reduceUncommittedSize(bytes: number): void {
    this.uncommittedSize = bytes >= this.uncommittedSize ? 0 : this.uncommittedSize - bytes;
  }

  private maybeCommit(): boolean {
    return this.log.maybeCommit(this.tracker.committed(), this.term);
  }

  // ---- step ----

  /**
   * Steps a message in. Messages with a stale term are answered or ignored; a higher term
   * makes this node a follower first (except pre-votes, and within a leader's lease).
   */
  step(m: Message): void {
    if (m.term === 0) {
      // Local messages, and proposals, reads and transfers (which carry no term).
    } else if (m.term > this.term) {
      if (m.type === "vote" || m.type === "preVote") {
        const force = isTransfer(m.context);
        const inLease =
          this.cfg.checkQuorum &&
          this.lead !== NONE &&
          this.electionElapsed < this.cfg.electionTick;
        if (!force && inLease) {
          // Thesis 4.2.3: a node that heard from a leader within the election timeout does
          // not help depose it (this is what keeps a rejoining node from disrupting).
          this.logger.info(
            `${this.id} [last ${this.log.lastTerm()}/${this.log.lastIndex()}, vote ${this.vote}] ignores ` +
              `${m.type} from ${m.from} [last ${m.logTerm}/${m.index}] at term ${this.term}: ` +
              `lease not expired (${this.cfg.electionTick - this.electionElapsed} ticks left)`,
          );
          return;
        }
      }
      if (m.type === "preVote") {
        // A pre-vote request never changes this node's term.
      } else if (m.type === "preVoteResp" && !m.reject) {
        // A granted pre-vote carries the term the candidate will campaign at.
      } else {
        this.logger.info(
          `${this.id} [term ${this.term}] received ${m.type} with higher term ${m.term} from ${m.from}`,
        );
        if (m.type === "app" || m.type === "heartbeat" || m.type === "snap") {
          this.becomeFollower(m.term, m.from);
        } else {
          this.becomeFollower(m.term, NONE);
        }
      }
    } else if (m.term < this.term) {
      if (
        (this.cfg.checkQuorum || this.cfg.preVote) &&
        (m.type === "heartbeat" || m.type === "app")
      ) {
        // A leader cut off and now back may never learn of the new term otherwise: with
        // CheckQuorum or PreVote nobody answers it with a higher term (etcd-raft's remedy).
        this.send(blankMessage("appResp", m.from, this.id));
      } else if (m.type === "preVote") {
        const r = blankMessage("preVoteResp", m.from, this.id);
        r.term = this.term;
        r.reject = true;
        this.send(r);
      } else {
        this.logger.debug(
          `${this.id} [term ${this.term}] ignores ${m.type} with lower term ${m.term} from ${m.from}`,
        );
      }
      return;
    }

    switch (m.type) {
      case "hup":
        this.hup(this.cfg.preVote ? "preElection" : "election");
        return;
      case "vote":
      case "preVote":
        this.handleVoteRequest(m);
        return;
      default:
        break;
    }
    if (this.role === "leader") this.stepLeader(m);
    else if (this.role === "follower") this.stepFollower(m);
    else this.stepCandidate(m);
  }

  private handleVoteRequest(m: Message): void {
    // Grant if this node already voted for the sender (a repeat), or has not voted and
    // knows no leader in this term, or it is a pre-vote for a later term; and the
    // candidate's log is at least as up to date (Raft 5.4.1).
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (m.type === "preVote" && m.term > this.term);
    const respType = m.type === "vote" ? "voteResp" : "preVoteResp";
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    if (canVote && this.repairThrough === 0 && this.log.isUpToDate(m.index, m.logTerm)) {
      this.logger.info(
        `${this.id} [last ${lastTerm}/${lastIndex}, vote ${this.vote}] grants ${m.type} to ${m.from} ` +
          `[last ${m.logTerm}/${m.index}] at term ${this.term}`,
      );
      // The response leaves only once this vote (term and vote) is durable.
      const r = blankMessage(respType, m.from, this.id);
      r.term = m.term;
      this.send(r);
      if (m.type === "vote") {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
      return;
    }
    const why = this.repairThrough > 0 ? " (log under repair)" : "";
    this.logger.info(
      `${this.id} [last ${lastTerm}/${lastIndex}, vote ${this.vote}] rejects ${m.type} from ${m.from} ` +
        `[last ${m.logTerm}/${m.index}] at term ${this.term}${why}`,
    );
    const r = blankMessage(respType, m.from, this.id);
    r.term = this.term;
    r.reject = true;
    this.send(r);
  }

  private stepLeader(m: Message): void {
    switch (m.type) {
      case "beat":
        this.bcastHeartbeat();
        return;
      case "checkQuorum":
        this.checkQuorum();
        return;
      case "prop":
        this.stepForwardedProposals(m);
        return;
      case "readIndex":
        this.leaderReadIndex(m.from, m.context);
        return;
      case "transferLeader":
        this.leaderTransfer(m.from);
        return;
      case "app":
      case "heartbeat":
      case "snap":
        // Two leaders in one term: Election Safety is broken (a bug or a damaged vote).
        this.logger.error(
          `${this.id} leads term ${this.term} but received ${m.type} from ${m.from} at that term`,
        );
        return;
      default:
        break;
    }
    const pr = this.tracker.progress.get(m.from);
    if (pr === undefined) {
      this.logger.debug(`${this.id} has no progress for ${m.from}: ignores ${m.type}`);
      return;
    }
    switch (m.type) {
      case "appResp":
        this.handleAppendResponse(m, pr);
        return;
      case "heartbeatResp":
        pr.recentActive = true;
        pr.flowPaused = false;
        if (pr.match < this.log.lastIndex() || pr.state === "probe") this.wantSend(pr, 2);
        if (this.cfg.readOnlyOption === "safe" && m.context.length > 0) {
          this.readOnly.recvAck(m.from, decodeReadPosition(m.context));
          this.releaseConfirmedReads();
        }
        return;
      case "snapStatus":
        if (pr.state !== "snapshot") return;
        if (m.reject) pr.pendingSnapshot = 0;
        pr.becomeProbe();
        this.logger.info(
          `${this.id} snapshot to ${m.from} ${m.reject ? "failed" : "finished"}: probes from ${pr.next}`,
        );
        // Wait for a heartbeat response before the next append, so that the follower
        // has time to install (or the sender to retry) the snapshot.
        pr.flowPaused = true;
        return;
      case "unreachable":
        if (pr.state === "replicate") pr.becomeProbe();
        this.logger.debug(`${this.id} could not reach ${m.from}: probes`);
        return;
      default:
        return;
    }
  }

  private stepForwardedProposals(m: Message): void {
    for (const e of m.entries) {
      const code = this.handleProposal(e.type, e.data, false);
      if (code !== undefined) {
        this.logger.info(
          `${this.id} drops a proposal forwarded by ${m.from} (${code}): ${this.refusal}`,
        );
      }
    }
    const pr = this.tracker.progress.get(m.from);
    if (pr !== undefined) pr.forwardedIndex = this.log.lastIndex();
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    pr.recentActive = true;
    if (m.reject) {
      this.logger.debug(
        `${this.id} received appResp rejection from ${m.from} for index ${m.index} (hint ${m.logTerm}/${m.rejectHint})`,
      );
      if (m.rejectHint < pr.match && sameBytes(m.context, REPAIR_CONTEXT)) {
        // The follower lost entries it had acknowledged to this leader (a damaged log).
        // What it kept matches this leader's log (it acknowledged it): probe from there.
        this.logger.warn(
          `${this.id}: ${m.from} repairs its log and lacks entries up to ${pr.match} it had acknowledged; ` +
            `probes from ${m.rejectHint + 1}`,
        );
        pr.match = m.rejectHint;
        pr.becomeProbe();
        this.wantSend(pr, 2);
        return;
      }
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.logTerm).index;
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.wantSend(pr, 2);
      }
      return;
    }
    const atMatch = pr.match === m.index && pr.state !== "replicate";
    if (!pr.maybeUpdate(m.index) && !atMatch) return;
    if (pr.state === "probe") {
      pr.becomeReplicate();
    } else if (pr.state === "snapshot") {
      if (pr.match + 1 >= this.log.firstIndex()) {
        this.logger.info(
          `${this.id} resumes replication to ${m.from} after its snapshot [match ${pr.match}]`,
        );
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (m.index >= pr.pendingSnapshot) {
        // The follower has the snapshot sent, but the log was compacted past it since:
        // probe again (which sends the newer snapshot), without waiting for reportSnapshot.
        pr.becomeProbe();
        this.wantSend(pr, 2);
      }
    } else if (pr.state === "replicate") {
      pr.inflights.freeLE(m.index);
    }
    if (this.maybeCommit()) {
      this.releaseHeldReads();
      this.wantSendAll(1);
    } else if (m.from !== this.id) {
      this.wantSend(pr, 1);
    }
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.sendTimeoutNow(m.from);
    }
  }

  private stepCandidate(m: Message): void {
    const myResp = this.role === "preCandidate" ? "preVoteResp" : "voteResp";
    switch (m.type) {
      case "prop":
        this.logger.info(
          `${this.id} knows no leader at term ${this.term}: drops a forwarded proposal`,
        );
        return;
      case "app":
        this.becomeFollower(m.term, m.from);
        this.handleAppendEntries(m);
        return;
      case "heartbeat":
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case "snap":
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case "timeoutNow":
        this.logger.debug(`${this.id} [${this.role}] ignores timeoutNow from ${m.from}`);
        return;
      default:
        if (m.type === myResp) this.poll(m.from, m.type, !m.reject);
        return;
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case "prop": {
        for (const e of m.entries) {
          const code = this.handleProposal(e.type, e.data, false);
          if (code !== undefined)
            this.logger.info(`${this.id} drops a proposal from ${m.from}: ${this.refusal}`);
        }
        return;
      }
      case "app":
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppendEntries(m);
        return;
      case "heartbeat":
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case "snap":
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case "transferLeader":
        if (this.lead === NONE) {
          this.logger.info(
            `${this.id} knows no leader at term ${this.term}: drops a transfer request`,
          );
          return;
        }
        this.msgs.push({ ...m, to: this.lead });
        return;
      case "timeoutNow":
        if (this.repairThrough > 0) {
          this.logger.warn(
            `${this.id} ignores timeoutNow from ${m.from}: its log is under repair until index ${this.repairThrough}`,
          );
          return;
        }
        this.logger.info(
          `${this.id} [term ${this.term}] received timeoutNow from ${m.from}: campaigns`,
        );
        this.hup("transfer");
        return;
      case "readIndex":
        if (this.lead === NONE) {
          this.logger.info(
            `${this.id} knows no leader at term ${this.term}: drops a read from ${m.from}`,
          );
          return;
        }
        this.msgs.push({ ...m, to: this.lead });
        return;
      case "readIndexResp":
        this.readStates.push({ index: m.index, context: m.context });
        return;
      default:
        return;
    }
  }

  private handleAppendEntries(m: Message): void {
    if (m.index < this.log.committed) {
      const r = blankMessage("appResp", m.from, this.id);
      r.index = this.log.committed;
      this.send(r);
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew >= 0) {
      const r = blankMessage("appResp", m.from, this.id);
      r.index = lastNew;
      this.send(r);
      this.maybeHeal(lastNew);
      this.maybeReplayConfChanges(lastNew);
      return;
    }
    // Fast back-off (etcd-raft): hint the largest index at or below the leader's prev
    // whose term is at most the leader's prev term, so the leader skips a term per trip.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.logger.debug(
      `${this.id} [last ${this.log.lastIndex()}] rejects app [prev ${m.logTerm}/${m.index}] from ${m.from}`,
    );
    const r = blankMessage("appResp", m.from, this.id);
    r.index = m.index;
    r.reject = true;
    r.rejectHint = hint.index;
    r.logTerm = hint.term;
    if (this.repairThrough > 0) r.context = REPAIR_CONTEXT;
    this.send(r);
  }

  private handleHeartbeat(m: Message): void {
    // A leader that lost track of a repaired follower may name a commit beyond its log.
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    const r = blankMessage("heartbeatResp", m.from, this.id);
    r.context = m.context;
    this.send(r);
    if (this.repairThrough > 0) {
      // Tell the leader where this damaged log ends: it may believe it holds more.
      const n = blankMessage("appResp", m.from, this.id);
      n.index = m.commit;
      n.reject = true;
      n.rejectHint = this.log.lastIndex();
      n.logTerm = this.log.lastTerm();
      n.context = REPAIR_CONTEXT;
      this.send(n);
    }
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    if (s === undefined) {
      this.logger.warn(`${this.id} ignores a snap message without a snapshot from ${m.from}`);
      return;
    }
    const { index, term } = s.metadata;
    const r = blankMessage("appResp", m.from, this.id);
    if (this.restore(s)) {
      this.logger.info(
        `${this.id} [commit ${this.log.committed}] restored snapshot ${term}/${index}`,
      );
      r.index = this.log.lastIndex();
    } else {
      this.logger.info(
        `${this.id} [commit ${this.log.committed}] ignored snapshot ${term}/${index}`,
      );
      r.index = this.log.committed;
    }
    this.send(r);
  }

  /** Installs snapshot `s` as the log; returns false if it brings nothing new. */
  private restore(s: Snapshot): boolean {
    const { index, term, confState } = s.metadata;
    if (index <= this.log.committed) return false;
    if (this.role !== "follower") {
      // Only a leader of this term sends snapshots, and it made this node a follower.
      this.logger.error(`${this.id} [${this.role}] was sent a snapshot: impossible; steps down`);
      this.becomeFollower(this.term + 1, NONE);
      return false;
    }
    if (!isMember(confState, this.id)) {
      this.logger.warn(`${this.id} ignores snapshot ${term}/${index}: not in its configuration`);
      return false;
    }
    if (this.log.matchTerm(index, term)) {
      // The log already holds the snapshot's last entry: just commit up to it.
      this.logger.info(`${this.id} fast-forwards its commit to snapshot ${term}/${index}`);
      this.log.commitTo(index);
      this.maybeHeal(index);
      this.maybeReplayConfChanges(index);
      return false;
    }
    this.log.restore(s);
    this.switchToConfig(confState);
    // The snapshot carries the configuration as of its index; replays stop there.
    this.confReplayedThrough = index;
    if (this.confReplayTarget > index) this.confReplayTarget = index;
    this.maybeHeal(index);
    return true;
  }

  private maybeHeal(matchedThrough: number): void {
    if (this.repairThrough === 0 || matchedThrough < this.repairThrough) return;
    this.logger.info(
      `${this.id} repaired its log: it matches leader ${this.lead}'s through index ${matchedThrough}; it votes and campaigns again`,
    );
    this.repairThrough = 0;
  }

  /**
   * Replays membership changes already applied by the application (see constructor), in
   * entries up to `matchedThrough`, an index up to which this log is known to hold a
   * leader's entries.
   */
  private maybeReplayConfChanges(matchedThrough: number): void {
    const hi = Math.min(this.confReplayTarget, matchedThrough);
    let lo = this.confReplayedThrough + 1;
    if (lo > hi) return;
    let cs = this.tracker.confState();
    let changed = false;
    if (lo < this.log.firstIndex()) {
      // The application compacted past the replay: its snapshot has the configuration.
      const snap = this.log.snapshot().metadata;
      cs = snap.confState;
      lo = snap.index + 1;
      changed = true;
    }
    while (lo <= hi) {
      const ents = this.log.slice(lo, hi + 1, this.cfg.maxCommittedSizePerReady);
      for (const e of ents) {
        if (e.type !== "confChange") continue;
        const cc = decodeConfChange(e.data);
        try {
          cs = applyChange(cs, cc);
          changed = true;
        } catch (err) {
          // The application got the same refusal when it applied the entry.
          if (!(err instanceof RaftError)) throw err;
        }
      }
      lo += ents.length;
    }
    this.confReplayedThrough = hi;
    if (changed) {
      this.logger.info(`${this.id} replayed applied membership changes through ${hi}`);
      this.switchToConfig(cs);
    }
  }

  // ---- membership ----

  /** Applies a committed membership change (RawNode.applyConfChange); throws RaftError INVALID_ARGUMENT. */
  applyConfChange(cc: ConfChange): ConfState {
    const cs = applyChange(this.tracker.confState(), cc);
    this.logger.info(`${this.id} applies ${describeConfChange(cc)}`);
    return this.switchToConfig(cs);
  }

  private switchToConfig(cs: ConfState): ConfState {
    this.tracker.setConfig(cs, this.log.lastIndex());
    this.logger.info(`${this.id} switched to configuration ${describeConfState(cs)}`);
    const self = this.tracker.progress.get(this.id);
    this.isLearner = self?.isLearner === true;
    if ((self === undefined || this.isLearner) && this.role === "leader") {
      // Thesis 4.2.2: a leader removed (or demoted) steps down once the change is committed
      // and applied; the others elect a new leader.
      this.logger.info(`${this.id} steps down: it is no longer a voter`);
      this.becomeFollower(this.term, NONE);
      return this.tracker.confState();
    }
    if (this.role !== "leader" || this.tracker.voters.length === 0) return this.tracker.confState();
    // The quorum changed: the commit index may move, new peers need appends.
    if (this.maybeCommit()) this.releaseHeldReads();
    this.wantSendAll(1);
    if (this.leadTransferee !== NONE && !this.tracker.isVoter(this.leadTransferee)) {
      this.logger.info(
        `${this.id} aborts the transfer to ${this.leadTransferee}: no longer a voter`,
      );
      this.leadTransferee = NONE;
    }
    return this.tracker.confState();
  }
}
