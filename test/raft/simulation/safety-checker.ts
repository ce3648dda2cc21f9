/**
 * The Raft safety properties, checked as the simulation runs against a global record of
 * what every node handed out, persisted, sent and applied (kept across crashes):
 *
 * - Election Safety: at most one leader per term. Its foundation is checked too: no node
 *   grants its vote to two candidates in one term, even across a crash.
 * - Leader Append-Only: while a node leads in a term, its log only grows at its end.
 * - Log Matching: logs that hold an entry with the same index and term are identical up
 *   to it. Each node's log carries a chained hash per entry (hash of the previous chain,
 *   the term, the type and the data); one global map from (index, term) to chain must
 *   agree for every node.
 * - Leader Completeness: a new leader of term T holds every entry known committed in a
 *   term before T (the highest commit index a node of a term below T handed out, with
 *   that node's log at the time).
 *   Committed entries never change either: a commit index that points at another entry
 *   fails. (A follower's log may still hold a stale entry at a committed index: a
 *   deposed leader's append, or an unsynced tail a crash kept.)
 * - State Machine Safety: no two nodes apply different entries at one index; each node
 *   applies indexes in order, only committed ones.
 * - The commit rule: a node's commit index never goes back while it runs, and a leader
 *   advances it only to an entry of its own term.
 * - Read Index: a read state's index is at least the commit index known (handed out by
 *   any node) when the read was asked.
 * - The durability promises of the core: a vote is granted only once that vote is
 *   durable; an append is acknowledged only for entries durable on the acknowledging
 *   node; a Ready with entries, a snapshot or a new term or vote asks for a sync; a newly
 *   committed index is durable on a majority of voters; recovery after a crash never
 *   loses a term, a vote or an entry that was durable; a node recovering with `repair`
 *   neither grants votes nor leads until healed.
 *
 * A node's "log" here is what its Readies handed out (stable storage plus the unstable
 * tail, which is the core's own view); its durable log is that minus the Ready whose
 * persistence is in flight.
 */
import type { Entry, HardState, Message, NodeId, RaftRole } from "../../../src/raft/types.js";

export class SafetyViolation extends Error {
  override readonly name = "SafetyViolation";
  constructor(
    readonly property: string,
    detail: string,
  ) {
    super(`${property}: ${detail}`);
  }
}

/** A log as a sequence of (term, chain) from its snapshot index on. */
class LogView {
  /** The snapshot's index: terms[0] / chains[0] describe it. */
  offset: number;
  readonly terms: number[];
  readonly chains: number[];

  constructor(offset: number, term: number, chain: number) {
    this.offset = offset;
    this.terms = [term];
    this.chains = [chain];
  }

  get lastIndex(): number {
    return this.offset + this.terms.length - 1;
  }

  has(index: number): boolean {
    return index >= this.offset && index <= this.lastIndex;
  }

  term(index: number): number {
    return this.terms[index - this.offset]!;
  }

  chain(index: number): number {
    return this.chains[index - this.offset]!;
  }

  truncateAfter(index: number): void {
    const keep = index - this.offset + 1;
    this.terms.length = keep;
    this.chains.length = keep;
  }

  push(term: number, chain: number): void {
    this.terms.push(term);
    this.chains.push(chain);
  }
}

interface NodeRecord {
  readonly id: NodeId;
  log: LogView;
  role: RaftRole;
  /** The term it leads in (0 when it does not lead). */
  leaderTerm: number;
  /** Readies handed out since it became leader in leaderTerm. */
  readiesAsLeader: number;
  hardState: HardState;
  /** The Ready being persisted: its first entry's index, its hard state, its snapshot. */
  inFlight:
    | { first: number | undefined; hardState: HardState | undefined; snapshot: boolean }
    | undefined;
  durableHardState: HardState;
  /**
   * The log certainly durable: through `index` (whose chain is `chain`, when known), or,
   * while a snapshot is being installed, that snapshot (`orSnapshot`) instead.
   */
  durable: { index: number; chain: number | undefined; orSnapshot: number | undefined };
  applied: number;
  /** Set while recovering from damage: it may neither vote nor lead before its log reaches it. */
  repairThrough: number | undefined;
}

/** What a node recovered at (re)start, as the checker needs it. */
export interface RecoveredLog {
  readonly hardState: HardState;
  /** The index and term of the entry before the first retained one (the compaction point). */
  readonly snapshotIndex: number;
  readonly snapshotTerm: number;
  /** The retained entries, in order. */
  readonly entries: readonly Entry[];
  readonly repairThrough: number | undefined;
  /** The state machine's applied index (entries up to it are not applied again). */
  readonly applied: number;
}

const TERM_LIMIT = 1_000_000;

export class SafetyChecker {
  readonly #nodes = new Map<NodeId, NodeRecord>();
  readonly #leaders = new Map<number, NodeId>();
  readonly #votes = new Map<number, NodeId>(); // (node, term) -> candidate granted
  readonly #chains = new Map<number, number>(); // (index, term) -> chain
  /** committed[i]: the chain of the committed entry at index i; committedTerms[i] its term. */
  readonly #committed: number[] = [0];
  readonly #committedTerms: number[] = [0];
  /** decidedIn[i]: the term of the node that first handed out a commit index >= i (>= the term that committed it). */
  readonly #decidedIn: number[] = [0];
  readonly #applied: ({ term: number; data: Uint8Array } | undefined)[] = [];
  /** The highest commit index a leader has put in an append or heartbeat. */
  #announcedCommit = 0;
  /** Reads asked and not yet answered: (node, context) -> the commit index known when asked. */
  readonly #reads = new Map<string, number>();
  /** Counters, for the run's summary. */
  readonly stats = { leaders: 0, maxTerm: 0, maxCommit: 0, applied: 0, votes: 0 };

  /** The highest index known committed. */
  get commitIndex(): number {
    return this.#committed.length - 1;
  }

  /** Declares that every index up to `index` (term `term`) is committed as the group's starting snapshot. */
  bootstrap(index: number, term: number): void {
    for (let i = this.#committed.length; i <= index; i++) {
      this.#committed.push(snapshotChain(i, term));
      this.#committedTerms.push(term);
      this.#decidedIn.push(0);
    }
  }

  /** A node (re)starts from what its storage recovered. */
  started(id: NodeId, recovered: RecoveredLog): void {
    const before = this.#nodes.get(id);
    const hs = recovered.hardState;
    if (before !== undefined) {
      const durable = before.durableHardState;
      if (hs.term < durable.term) {
        this.#fail("Durability", id, `recovered term ${hs.term} < durable term ${durable.term}`);
      }
      if (hs.term === durable.term && durable.vote !== 0 && hs.vote !== durable.vote) {
        this.#fail(
          "Durability",
          id,
          `recovered vote ${hs.vote} in term ${hs.term}, but ${durable.vote} was durable`,
        );
      }
    }
    const log = this.#viewAt(id, recovered.snapshotIndex, recovered.snapshotTerm);
    for (const e of recovered.entries) {
      if (e.index !== log.lastIndex + 1) {
        this.#fail("Recovery", id, `recovered entries jump from ${log.lastIndex} to ${e.index}`);
      }
      this.#append(id, log, e);
    }
    if (before !== undefined && recovered.repairThrough === undefined) {
      const d = before.durable;
      const covered = d.index < log.offset || d.orSnapshot === log.offset;
      if (
        !covered &&
        (!log.has(d.index) || (d.chain !== undefined && log.chain(d.index) !== d.chain))
      ) {
        this.#fail(
          "Durability",
          id,
          `recovered log (snapshot ${log.offset}, last ${log.lastIndex}) lost durable entry ${d.index}` +
            " without reporting damage (repair)",
        );
      }
    }
    if (recovered.applied > log.lastIndex && recovered.applied > this.commitIndex) {
      this.#fail("Recovery", id, `state machine applied ${recovered.applied} beyond the log`);
    }
    this.#nodes.set(id, {
      id,
      log,
      role: "follower",
      leaderTerm: 0,
      readiesAsLeader: 0,
      hardState: hs,
      inFlight: undefined,
      durableHardState: hs,
      durable: { index: log.lastIndex, chain: log.chain(log.lastIndex), orSnapshot: undefined },
      applied: recovered.applied,
      repairThrough: recovered.repairThrough,
    });
  }

  /** A Ready was handed out to node `id`. */
  readyHandedOut(
    id: NodeId,
    rd: {
      readonly softState?: { readonly role: RaftRole } | undefined;
      readonly hardState?: HardState | undefined;
      readonly entries: readonly Entry[];
      readonly snapshot?:
        | { readonly metadata: { readonly index: number; readonly term: number } }
        | undefined;
      readonly mustSync?: boolean;
    },
    /**
     * The voter sets the node's commit decisions may have used: its configuration now and
     * the one before its last membership change. Asked only when the commit index grows.
     */
    configs: () => readonly (readonly NodeId[])[] = () => [],
  ): void {
    const n = this.#node(id);
    const term = rd.hardState?.term ?? n.hardState.term;
    if (n.inFlight !== undefined)
      this.#fail("Ready order", id, "ready() before the previous Ready was persisted");
    if (rd.mustSync === false) {
      const hs = rd.hardState;
      const votes =
        hs !== undefined && (hs.term !== n.hardState.term || hs.vote !== n.hardState.vote);
      if (rd.entries.length > 0 || rd.snapshot !== undefined || votes) {
        this.#fail(
          "Durability",
          id,
          "a Ready with entries, a snapshot or a new term or vote does not ask for a sync",
        );
      }
    }
    const wasLeaderInTerm = n.leaderTerm !== 0 && n.leaderTerm === term && n.role === "leader";
    if (rd.hardState !== undefined) {
      const hs = rd.hardState;
      if (hs.term < n.hardState.term) {
        this.#fail("Term", id, `hard state term went back from ${n.hardState.term} to ${hs.term}`);
      }
      if (hs.term >= TERM_LIMIT) throw new Error("simulation: term beyond the checker's range");
      this.stats.maxTerm = Math.max(this.stats.maxTerm, hs.term);
    }
    this.#shrinkDurable(n, rd);
    if (rd.snapshot !== undefined) {
      if (wasLeaderInTerm) this.#fail("Leader Append-Only", id, "a leader installs a snapshot");
      const { index, term: sterm } = rd.snapshot.metadata;
      if (index > this.commitIndex) {
        this.#fail(
          "Snapshot",
          id,
          `snapshot at ${index} beyond the committed index ${this.commitIndex}`,
        );
      }
      if (this.#committedTerms[index] !== sterm) {
        this.#fail(
          "Snapshot",
          id,
          `snapshot at ${index} has term ${sterm}, committed term ${this.#committedTerms[index]}`,
        );
      }
      if (index < n.applied) {
        // Allowed by Raft only if the application had not applied so far; we never let that happen.
        this.#fail("Snapshot", id, `snapshot at ${index} below the applied index ${n.applied}`);
      }
      n.log = new LogView(index, sterm, this.#committed[index]!);
    }
    let first: number | undefined;
    if (rd.entries.length > 0) {
      const log = n.log;
      first = rd.entries[0]!.index;
      if (first <= log.offset) {
        this.#fail("Log", id, `entries from ${first} would replace the snapshot at ${log.offset}`);
      }
      if (first > log.lastIndex + 1) {
        this.#fail("Log", id, `entries from ${first} leave a hole after ${log.lastIndex}`);
      }
      if (wasLeaderInTerm && first !== log.lastIndex + 1) {
        this.#fail(
          "Leader Append-Only",
          id,
          `leader of term ${term} replaces its entries from ${first} (last ${log.lastIndex})`,
        );
      }
      log.truncateAfter(first - 1);
      for (const e of rd.entries) {
        if (e.index !== log.lastIndex + 1)
          this.#fail("Log", id, `entry ${e.index} after ${log.lastIndex}`);
        if (e.term < log.term(log.lastIndex)) {
          this.#fail(
            "Log",
            id,
            `entry ${e.index} of term ${e.term} after term ${log.term(log.lastIndex)}`,
          );
        }
        if (e.term > term) {
          this.#fail(
            "Log",
            id,
            `entry ${e.index} of term ${e.term} beyond the node's term ${term}`,
          );
        }
        this.#append(id, log, e);
      }
    }
    if (rd.softState !== undefined) {
      n.role = rd.softState.role;
      if (n.role !== "leader") n.leaderTerm = 0;
    }
    // A leader that lost its term and won the next one within one Ready cycle (its disk
    // was slow) hands out no soft state, its role and leader being unchanged: the term tells.
    if (n.role === "leader" && (rd.softState !== undefined || n.leaderTerm !== term)) {
      const other = this.#leaders.get(term);
      if (other !== undefined && other !== id) {
        this.#fail("Election Safety", id, `leads term ${term}, which node ${other} already led`);
      }
      if (n.repairThrough !== undefined) {
        this.#fail("Repair", id, `leads term ${term} while repairing through ${n.repairThrough}`);
      }
      if (other === undefined) this.stats.leaders++;
      this.#leaders.set(term, id);
      if (n.leaderTerm !== term) {
        n.leaderTerm = term;
        n.readiesAsLeader = 0;
        this.#leaderCompleteness(n, term);
      }
    }
    if (n.role === "leader") n.readiesAsLeader++;
    if (rd.hardState !== undefined) {
      this.#commitRule(n, rd.hardState.commit);
      n.hardState = rd.hardState;
      this.#commit(n, rd.hardState.commit);
      // The leader decides commits; a follower may lag membership changes behind it.
      if (n.role === "leader") this.#quorumDurable(n, rd.hardState.commit, configs());
    }
    this.#healRepair(n);
    n.inFlight = { first, hardState: rd.hardState, snapshot: rd.snapshot !== undefined };
  }

  /** The Ready last handed out to node `id` is durable. */
  persisted(id: NodeId): void {
    const n = this.#node(id);
    const f = n.inFlight;
    if (f === undefined) this.#fail("Ready order", id, "persisted with no Ready in flight");
    if (f.hardState !== undefined) n.durableHardState = f.hardState;
    const last = n.log.lastIndex;
    n.durable = { index: last, chain: n.log.chain(last), orSnapshot: undefined };
    n.inFlight = undefined;
  }

  /** Node `id` sends `m`; `afterPersist` iff it came from messagesAfterPersist of a persisted Ready. */
  sending(id: NodeId, m: Message): void {
    const n = this.#node(id);
    if ((m.type === "app" || m.type === "heartbeat") && m.commit > this.#announcedCommit) {
      this.#announcedCommit = m.commit;
    }
    if (m.type === "voteResp" && !m.reject) {
      // Safe once durable: the vote itself, or a later term (the node never votes in m.term again).
      const hs = n.durableHardState;
      if (hs.term < m.term || (hs.term === m.term && hs.vote !== m.to)) {
        this.#fail(
          "Durability",
          id,
          `grants its vote to ${m.to} in term ${m.term} while durable term/vote are ${hs.term}/${hs.vote}`,
        );
      }
      if (n.repairThrough !== undefined) {
        this.#fail(
          "Repair",
          id,
          `grants a vote in term ${m.term} while repairing through ${n.repairThrough}`,
        );
      }
      const key = id * TERM_LIMIT + m.term;
      const granted = this.#votes.get(key);
      if (granted !== undefined && granted !== m.to) {
        this.#fail(
          "Election Safety",
          id,
          `votes for ${m.to} in term ${m.term} after voting for ${granted}`,
        );
      }
      if (granted === undefined) this.stats.votes++;
      this.#votes.set(key, m.to);
    } else if (m.type === "appResp" && !m.reject) {
      const durable = n.durable.index;
      if (m.index > durable) {
        this.#fail(
          "Durability",
          id,
          `acknowledges entries through ${m.index} to ${m.to} (term ${m.term}) while only ${durable} are durable`,
        );
      }
      // What it holds there must be what a leader of that term can have sent.
      if (n.log.has(m.index) && n.log.term(m.index) > m.term) {
        this.#fail(
          "Durability",
          id,
          `acknowledges entries through ${m.index} to ${m.to} (term ${m.term}), but holds an entry of term ${n.log.term(m.index)} there`,
        );
      }
    }
  }

  /** Node `id` asks for a linearizable read (RawNode.readIndex) under `context`. */
  readRequested(id: NodeId, context: string): void {
    this.#reads.set(`${id}/${context}`, this.commitIndex);
  }

  /**
   * A Ready handed node `id` the read state `index` for `context`. A read index below an
   * index some node had already declared committed when the read was asked would let the
   * read miss a write that completed before it (a leader that answers without confirming
   * it still leads, or before it committed an entry of its own term). A context asked
   * before is judged once (the network duplicates answers).
   */
  readAnswered(id: NodeId, context: string, index: number): void {
    const key = `${id}/${context}`;
    const asked = this.#reads.get(key);
    if (asked === undefined) return;
    this.#reads.delete(key);
    if (index < asked) {
      this.#fail(
        "Read Index",
        id,
        `is told read ${context} may be served at index ${index}, but ${asked} was committed before it was asked`,
      );
    }
  }

  /** Node `id` applies entry `e` to its state machine. */
  applying(id: NodeId, e: Entry): void {
    const n = this.#node(id);
    if (e.index !== n.applied + 1) {
      this.#fail("State Machine Safety", id, `applies ${e.index} after ${n.applied}`);
    }
    if (e.index > this.commitIndex) {
      this.#fail(
        "State Machine Safety",
        id,
        `applies ${e.index} beyond the commit index ${this.commitIndex}`,
      );
    }
    if (this.#committedTerms[e.index] !== e.term) {
      this.#fail(
        "State Machine Safety",
        id,
        `applies entry ${e.index} of term ${e.term}; the committed entry has term ${this.#committedTerms[e.index]}`,
      );
    }
    const before = this.#applied[e.index];
    if (before === undefined) {
      this.#applied[e.index] = { term: e.term, data: e.data.slice() };
      this.stats.applied++;
    } else if (before.term !== e.term || !sameBytes(before.data, e.data)) {
      this.#fail(
        "State Machine Safety",
        id,
        `applies at ${e.index} an entry (term ${e.term}, ${e.data.length} bytes) that differs from the one applied before (term ${before.term}, ${before.data.length} bytes)`,
      );
    }
    n.applied = e.index;
  }

  /** Node `id` installed a snapshot at `index` into its state machine. */
  restoredSnapshot(id: NodeId, index: number): void {
    const n = this.#node(id);
    if (index < n.applied)
      this.#fail(
        "State Machine Safety",
        id,
        `restores snapshot ${index} below applied ${n.applied}`,
      );
    n.applied = index;
  }

  /** Node `id` crashed: what it had in flight is gone (what survives is judged at restart). */
  crashed(id: NodeId): void {
    const n = this.#node(id);
    n.inFlight = undefined;
    n.role = "follower";
    n.leaderTerm = 0;
  }

  /** A one-line account of the group for failure reports. */
  describe(): string {
    const parts = [`commit ${this.commitIndex}`];
    for (const n of [...this.#nodes.values()].sort((a, b) => a.id - b.id)) {
      parts.push(
        `n${n.id}: ${n.role} term ${n.hardState.term} vote ${n.hardState.vote} commit ${n.hardState.commit} log ${n.log.offset}..${n.log.lastIndex} durable ${n.durable.index} applied ${n.applied}`,
      );
    }
    return parts.join("; ");
  }

  #node(id: NodeId): NodeRecord {
    const n = this.#nodes.get(id);
    if (n === undefined) throw new Error(`simulation: node ${id} was never started`);
    return n;
  }

  #viewAt(id: NodeId, snapshotIndex: number, snapshotTerm: number): LogView {
    if (snapshotIndex === 0) return new LogView(0, 0, 0);
    if (snapshotIndex > this.commitIndex || this.#committedTerms[snapshotIndex] !== snapshotTerm) {
      this.#fail(
        "Recovery",
        id,
        `recovered snapshot ${snapshotIndex}/${snapshotTerm} is not a committed entry`,
      );
    }
    return new LogView(snapshotIndex, snapshotTerm, this.#committed[snapshotIndex]!);
  }

  #append(id: NodeId, log: LogView, e: Entry): void {
    const chain = chainHash(log.chain(log.lastIndex), e);
    log.push(e.term, chain);
    const key = e.index * TERM_LIMIT + e.term;
    const known = this.#chains.get(key);
    if (known === undefined) this.#chains.set(key, chain);
    else if (known !== chain) {
      this.#fail(
        "Log Matching",
        id,
        `entry ${e.index} of term ${e.term} differs from another node's, or their logs before it do`,
      );
    }
  }

  /**
   * A node's commit index never goes back while it runs, and a leader moves it beyond what
   * is known committed (handed out by a node, or sent by a leader) only to an entry of its
   * own term (Raft 5.4.2: counting replicas commits no entry of an earlier term; Figure 8
   * shows how such an entry can still be overwritten). Checked as a rule, because the
   * overwrite that would show the loss needs a rare sequence of elections. (A node can
   * learn a commit index as a follower and win an election before its next Ready.)
   */
  #commitRule(n: NodeRecord, commit: number): void {
    const before = n.hardState.commit;
    if (commit < before) {
      this.#fail("Commit", n.id, `commit index went back from ${before} to ${commit}`);
    }
    if (n.role !== "leader" || commit <= Math.max(before, this.commitIndex, this.#announcedCommit))
      return;
    const term = n.log.has(commit) ? n.log.term(commit) : undefined;
    if (term !== n.leaderTerm) {
      this.#fail(
        "Commit",
        n.id,
        `leader of term ${n.leaderTerm} commits ${commit}, an entry of term ${term} (only an entry of its own term is committed by counting replicas)`,
      );
    }
  }

  #commit(n: NodeRecord, commit: number): void {
    const log = n.log;
    const known = this.commitIndex;
    if (commit <= known) {
      if (
        commit >= log.offset &&
        commit > 0 &&
        log.has(commit) &&
        log.chain(commit) !== this.#committed[commit]
      ) {
        this.#fail(
          "Leader Completeness",
          n.id,
          `its commit index ${commit} names an entry that differs from the committed one`,
        );
      }
      return;
    }
    if (!log.has(commit)) {
      this.#fail(
        "Commit",
        n.id,
        `commit index ${commit} beyond its log (${log.offset}..${log.lastIndex})`,
      );
    }
    if (known < log.offset) {
      this.#fail(
        "Commit",
        n.id,
        `commits ${commit} with committed entries ${known + 1}..${log.offset} unknown to it`,
      );
    }
    if (log.chain(known) !== this.#committed[known]) {
      this.#fail(
        "Leader Completeness",
        n.id,
        `commits ${commit} on a log that differs from committed entry ${known}`,
      );
    }
    for (let i = known + 1; i <= commit; i++) {
      this.#committed.push(log.chain(i));
      this.#committedTerms.push(log.term(i));
      this.#decidedIn.push(n.hardState.term);
    }
    this.stats.maxCommit = commit;
  }

  /**
   * A leader's commit index must be durable on a majority of the voters of one of the
   * configurations its decision may have used (it counts itself and others only once
   * durable). Nodes that crashed keep what was durable.
   */
  #quorumDurable(n: NodeRecord, index: number, configs: readonly (readonly NodeId[])[]): void {
    if (configs.length === 0) return;
    const chain = this.#committed[index]!;
    const holders = (voters: readonly NodeId[]): NodeId[] =>
      voters.filter((v) => {
        const r = this.#nodes.get(v);
        if (r === undefined || r.durable.index < index) return false;
        return index < r.log.offset || r.log.chain(index) === chain;
      });
    let best: NodeId[] = [];
    for (const voters of configs) {
      const h = holders(voters);
      if (2 * h.length > voters.length) return;
      if (h.length >= best.length) best = h;
    }
    this.#fail(
      "Commit",
      n.id,
      `commits ${index}, which is durable only on {${best}} of voters ${configs.map((c) => `{${c}}`).join(" or ")}`,
    );
  }

  /**
   * A leader of term T holds every entry committed in a term before T (Raft 5.4.3). Not
   * the ones committed since, in T or later: a candidate that won T and noticed late (a
   * stalled process, a slow disk) may lead T after later terms committed more.
   */
  #leaderCompleteness(n: NodeRecord, term: number): void {
    let c = this.commitIndex;
    while (c > 0 && this.#decidedIn[c]! >= term) c--;
    const log = n.log;
    if (log.lastIndex < c || c < log.offset || log.chain(c) !== this.#committed[c]) {
      this.#fail(
        "Leader Completeness",
        n.id,
        `becomes leader of term ${term} with log ${log.offset}..${log.lastIndex} missing entries through ${c} committed before that term`,
      );
    }
  }

  /** Before a Ready changes the log: what it overwrites is durable no more (if a crash tears it). */
  #shrinkDurable(
    n: NodeRecord,
    rd: {
      readonly entries: readonly Entry[];
      readonly snapshot?: { readonly metadata: { readonly index: number } } | undefined;
    },
  ): void {
    const d = n.durable;
    let limit = d.index;
    if (rd.snapshot !== undefined) limit = Math.min(limit, rd.snapshot.metadata.index - 1);
    if (rd.entries.length > 0) limit = Math.min(limit, rd.entries[0]!.index - 1);
    if (limit === d.index) return;
    const chain = n.log.has(limit) ? n.log.chain(limit) : undefined;
    n.durable = { index: limit, chain, orSnapshot: rd.snapshot?.metadata.index ?? d.orSnapshot };
  }

  #healRepair(n: NodeRecord): void {
    if (n.repairThrough !== undefined && n.log.lastIndex >= n.repairThrough)
      n.repairThrough = undefined;
  }

  #fail(property: string, id: NodeId, detail: string): never {
    throw new SafetyViolation(property, `node ${id} ${detail}`);
  }
}

/** The chain value of the entry after `prev`: FNV-1a over prev, term, type and data. */
function chainHash(prev: number, e: Entry): number {
  let h = 0x811c9dc5 ^ prev;
  h = Math.imul(h ^ (e.term & 0xffff), 0x01000193);
  h = Math.imul(h ^ (e.term >>> 16), 0x01000193);
  h = Math.imul(h ^ (e.type === "normal" ? 1 : 2), 0x01000193);
  const d = e.data;
  for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i]!, 0x01000193);
  return h >>> 0;
}

/** The chain value standing for a bootstrap snapshot at (index, term). */
function snapshotChain(index: number, term: number): number {
  return Math.imul(index ^ 0x5bd1e995, 0x01000193) ^ term;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
