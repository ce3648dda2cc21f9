/**
 * A leader's view of one peer's log (Raft's nextIndex / matchIndex), with the flow
 * control state etcd-raft uses:
 * - "probe": the leader does not know where the logs agree; it sends one append per
 *   heartbeat interval (or per rejection) and waits for the answer;
 * - "replicate": the logs agree up to `match`; the leader streams appends optimistically
 *   (advancing `next` as it sends) within the inflight window;
 * - "snapshot": the follower needs entries the leader compacted; the leader sent a
 *   snapshot and sends nothing else until it hears how that went.
 */
import { Inflights } from "./inflights.js";

export type ProgressState = "probe" | "replicate" | "snapshot";

export class Progress {
  /** The highest index known to be in the peer's log (matching the leader's). */
  match = 0;
  /** The index of the next entry to send. Invariant: match < next. */
  next: number;
  state: ProgressState = "probe";
  /** In state snapshot: the index of the snapshot sent. */
  pendingSnapshot = 0;
  /** The peer was heard from since the last quorum check (CheckQuorum). */
  recentActive = false;
  /** Probe: an append is outstanding; replicate: the window is full. Cleared by heartbeat responses. */
  flowPaused = false;
  /** The highest commit index sent to the peer (so that a lagging commit gets sent once). */
  sentCommit = 0;
  /**
   * The last index of an entry this peer forwarded (a proposal it is waiting on), 0 if
   * none: under deferCommitBroadcast its commit is told at once, not with the next traffic.
   */
  forwardedIndex = 0;
  /**
   * What the leader owes the peer at its next flush: 0 nothing, 1 the entries it lacks
   * (if any, and the commit index if the peer lags), 2 an append even if empty (a probe).
   */
  sendWanted: 0 | 1 | 2 = 0;
  readonly inflights: Inflights;
  isLearner: boolean;
  /** The leader said once that its snapshot predates this peer's membership. */
  staleSnapshotReported = false;

  constructor(next: number, maxInflightMsgs: number, maxInflightBytes: number, isLearner: boolean) {
    this.next = next;
    this.inflights = new Inflights(maxInflightMsgs, maxInflightBytes);
    this.isLearner = isLearner;
  }

  private resetState(state: ProgressState): void {
    this.flowPaused = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === "snapshot") {
      const pending = this.pendingSnapshot;
      this.resetState("probe");
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState("probe");
      this.next = this.match + 1;
    }
    this.sentCommit = Math.min(this.sentCommit, this.next - 1);
  }

  becomeReplicate(): void {
    this.resetState("replicate");
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState("snapshot");
    this.pendingSnapshot = snapshotIndex;
    this.next = snapshotIndex + 1;
    this.sentCommit = snapshotIndex;
  }

  /** An append of `entries` entries (`bytes` of data) was sent from `next`. */
  sentEntries(entries: number, bytes: number): void {
    if (this.state === "replicate") {
      if (entries > 0) {
        this.next += entries;
        this.inflights.add(this.next - 1, bytes);
      }
      this.flowPaused = this.inflights.full();
    } else if (this.state === "probe") {
      if (entries > 0) this.flowPaused = true;
    } else {
      throw new Error("progress: append sent to a peer in state snapshot");
    }
  }

  /** True iff the peer does not know commit index `index` and an append could tell it. */
  canBumpCommit(index: number): boolean {
    return index > this.sentCommit && this.sentCommit < this.next - 1;
  }

  /** The peer acknowledged its log up to `n`; returns true iff that is news. */
  maybeUpdate(n: number): boolean {
    if (n <= this.match) return false;
    this.match = n;
    if (this.next < n + 1) this.next = n + 1;
    this.flowPaused = false;
    return true;
  }

  /**
   * The peer rejected the append after `rejected`, hinting that the logs may agree at
   * `matchHint`. Returns true iff `next` moved (the rejection was not stale).
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      this.sentCommit = Math.min(this.sentCommit, this.next - 1);
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.sentCommit = Math.min(this.sentCommit, this.next - 1);
    this.flowPaused = false;
    return true;
  }

  /** True iff the leader must not send appends now. */
  isPaused(): boolean {
    return this.state === "snapshot" || this.flowPaused;
  }
}
