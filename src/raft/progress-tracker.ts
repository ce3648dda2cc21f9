/**
 * The current configuration (voters and learners) with a Progress per member, and the
 * votes of an election in progress. Every node keeps one (a follower needs the
 * configuration to campaign); only a leader's progress entries mean anything.
 */
import { Progress } from "./progress.js";
import { majority, quorumIndex, type VoteResult, voteResult } from "./quorum.js";
import type { ConfState, NodeId } from "./types.js";

export class ProgressTracker {
  /** Sorted. */
  voters: readonly NodeId[] = [];
  /** Sorted. */
  learners: readonly NodeId[] = [];
  /** Voters then learners, each sorted: the order in which a leader visits its peers. */
  members: readonly NodeId[] = [];
  readonly progress = new Map<NodeId, Progress>();
  readonly votes = new Map<NodeId, boolean>();
  private readonly scratch: number[] = [];

  constructor(
    private readonly maxInflightMsgs: number,
    private readonly maxInflightBytes: number,
  ) {}

  /**
   * Switches to configuration `cs`: members that stay keep their progress, new ones get a
   * fresh one (probing from lastIndex + 1, marked recently active so that a quorum check
   * right after the change does not count them as silent), removed ones lose theirs.
   */
  setConfig(cs: ConfState, lastIndex: number): void {
    const voters = [...cs.voters].sort(byId);
    const learners = [...cs.learners].sort(byId);
    const keep = new Set<NodeId>();
    for (const id of voters) keep.add(id);
    for (const id of learners) keep.add(id);
    for (const id of [...this.progress.keys()]) if (!keep.has(id)) this.progress.delete(id);
    for (const id of keep) {
      let pr = this.progress.get(id);
      if (pr === undefined) {
        pr = new Progress(lastIndex + 1, this.maxInflightMsgs, this.maxInflightBytes, false);
        pr.recentActive = true;
        this.progress.set(id, pr);
      }
      pr.isLearner = learners.includes(id);
    }
    for (const id of [...this.votes.keys()]) if (!voters.includes(id)) this.votes.delete(id);
    this.voters = voters;
    this.learners = learners;
    this.members = [...voters, ...learners];
  }

  /** A fresh Progress for `id` (kept membership, leadership change). */
  resetProgress(id: NodeId, next: number, match: number): Progress {
    const old = this.progress.get(id);
    const pr = new Progress(
      next,
      this.maxInflightMsgs,
      this.maxInflightBytes,
      old?.isLearner ?? false,
    );
    pr.match = match;
    this.progress.set(id, pr);
    return pr;
  }

  confState(): ConfState {
    return { voters: [...this.voters], learners: [...this.learners] };
  }

  isVoter(id: NodeId): boolean {
    return this.voters.includes(id);
  }

  isSingleton(): boolean {
    return this.voters.length === 1;
  }

  /** The highest index a majority of voters hold (by their progress' match). */
  committed(): number {
    const m = this.scratch;
    m.length = 0;
    for (let i = 0; i < this.voters.length; i++) m.push(this.progress.get(this.voters[i]!)!.match);
    return quorumIndex(m);
  }

  /** True iff a majority of voters (`self` counting as active) was heard from recently. */
  quorumActive(self: NodeId): boolean {
    let active = 0;
    for (const id of this.voters) {
      if (id === self || this.progress.get(id)!.recentActive) active++;
    }
    return active >= majority(this.voters.length);
  }

  resetVotes(): void {
    this.votes.clear();
  }

  /** Records `id`'s answer (the first answer of a voter counts; later ones are ignored). */
  recordVote(id: NodeId, granted: boolean): void {
    if (!this.votes.has(id)) this.votes.set(id, granted);
  }

  tallyVotes(): { granted: number; rejected: number; result: VoteResult } {
    let granted = 0;
    let rejected = 0;
    for (const id of this.voters) {
      const v = this.votes.get(id);
      if (v === true) granted++;
      else if (v === false) rejected++;
    }
    return { granted, rejected, result: voteResult(this.voters, this.votes) };
  }
}

function byId(a: NodeId, b: NodeId): number {
  return a - b;
}
