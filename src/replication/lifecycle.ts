/**
 * A member's life: opening its data directory (`openMember`), what it knows of the
 * leader, whether it serves (`checkServing`: not closed, not removed, not failed), its
 * removal, its failure and its close (MemberLife); and the errors a member answers with
 * when nothing was done (`unavailable`, `proposeError`).
 */
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import type { LeaseTable } from "../lease/lease-table.js";
import { isRaftError } from "../raft/errors.js";
import { RaftLogStorage } from "../raft/storage/raft-log-storage.js";
import type { NodeId, RaftRole, SoftState } from "../raft/types.js";
import { seedFromStore } from "./initial-data.js";
import { loadLeases, type MemberMvcc, openMemberMvcc, openStore } from "./kv-state-machine.js";
import { LeaderGate } from "./leader-gate.js";
import { LocalSnapshots } from "./local-snapshots.js";
import type { MemberParts } from "./member-parts.js";
import { formatMemberId, type MemberId, memberOf } from "./members.js";
import { NodeDir } from "./node-dir.js";
import {
  bootstrap,
  checkMembership,
  initialMembership,
  readStoreState,
  reconcile,
  type StoreState,
  settleIdentity,
} from "./open-member.js";
import {
  type ReplicatedStoreOptions,
  type ResolvedReplicatedOptions,
  resolveReplicatedOptions,
} from "./options.js";

/** UNAVAILABLE: nothing was done; `leaderHint` is the leader's client address, if known. */
export function unavailable(message: string, leaderHint: string | undefined): KvError {
  return new KvError("UNAVAILABLE", message, leaderHint === undefined ? {} : { leaderHint });
}

/** The KvError for what RawNode.propose or proposeConfChange threw (nothing proposed). */
export function proposeError(err: unknown, leaderHint: string | undefined): unknown {
  if (isRaftError(err, "PROPOSAL_DROPPED")) {
    return unavailable(`not proposed: ${err.message}; safe to retry`, leaderHint);
  }
  if (isRaftError(err, "PROPOSAL_TOO_LARGE_BACKLOG")) {
    return new KvError(
      "RESOURCE_EXHAUSTED",
      `not proposed: the leader's backlog is full (${err.message}); retry later`,
    );
  }
  if (isRaftError(err, "CONF_CHANGE_PENDING")) {
    return new KvError("FAILED_PRECONDITION", `not proposed: ${err.message}`);
  }
  if (isRaftError(err, "INVALID_ARGUMENT")) return new KvError("INVALID_ARGUMENT", err.message);
  return err;
}

/** What opening a member's data directory yields. */
export interface OpenedMember {
  readonly o: ResolvedReplicatedOptions;
  readonly dir: NodeDir;
  readonly log: RaftLogStorage;
  readonly store: KvStore;
  readonly identity: { clusterId: number; memberId: MemberId; name: string };
  /** What the store holds as applied (its client sessions included). */
  readonly applied: StoreState;
  readonly snapshots: LocalSnapshots;
  /** The multi-version store over `store`, iff the store holds revisions. */
  readonly mvcc: MemberMvcc | undefined;
  /** The lease table over `mvcc`, iff `mvcc` is defined. */
  readonly leases: LeaseTable | undefined;
}

/**
 * Opens (creating on first start) the member in `options.dataDir`: its directory, Raft
 * log, store and snapshots, bootstrapped on a new cluster's first start, the log made to
 * agree with the store (open-member.ts); then `make` builds the member of them. If
 * anything throws, what was opened is closed. Throws KvError: INVALID_ARGUMENT (bad
 * options), LOCKED (the directory is in use), FAILED_PRECONDITION (the directory holds a
 * plain store, or an identity or membership the options contradict, or this member was
 * removed), CORRUPTION, IO_ERROR.
 */
export async function openMember<T>(
  options: ReplicatedStoreOptions,
  make: (opened: OpenedMember) => T,
): Promise<T> {
  const o = resolveReplicatedOptions(options);
  const dir = await NodeDir.open(o.fs, o.dataDir);
  let log: RaftLogStorage | undefined;
  let store: KvStore | undefined;
  let mvcc: MemberMvcc | undefined;
  try {
    const identity = settleIdentity(dir.identity, o, o.dataDir);
    log = await RaftLogStorage.open(o.fs, dir.raftPath, o.raftLogOptions ?? {});
    store = await openStore(dir, o);
    const snapshots = await LocalSnapshots.load(dir);
    if (dir.identity === undefined) {
      if (o.state === "new") {
        await bootstrap(
          store,
          log,
          snapshots,
          initialMembership(o),
          !o.bootstrapWithoutRevisions,
          o.initialData === undefined ? undefined : seedFromStore(o.initialData, o.fs),
        );
      }
      await dir.writeIdentity(identity);
    }
    const state = await readStoreState(store);
    checkMembership(state.membership, identity, o);
    await reconcile(state, log);
    mvcc = await openMemberMvcc(store);
    const leases = await loadLeases(mvcc);
    return make({ o, dir, log, store, identity, applied: state, snapshots, mvcc, leases });
  } catch (err) {
    await mvcc?.close().catch(() => {});
    await store?.close().catch(() => {});
    await log?.close().catch(() => {});
    await dir.close().catch(() => {});
    throw err;
  }
}

export class MemberLife {
  /** The leader this member knows of (0: none) and its own role, as of the last Ready. */
  lead: NodeId = 0;
  role: RaftRole = "follower";
  /** Set once this member's removal is applied here. */
  removed = false;
  /** Set once the member stopped after a failure. */
  failure: KvError | undefined;
  private closing: Promise<void> | undefined;
  private leaderWaiters: Array<() => void> = [];
  /** New writes held while no leader they can be handed to is known (leader-gate.ts). */
  readonly gate: LeaderGate;

  constructor(private readonly p: MemberParts) {
    this.gate = new LeaderGate(() => this.canHandOver());
  }

  /**
   * True iff a write proposed now reaches a leader: the core knows one (its view, which
   * may be ahead of `lead`) and it is this member or reachable.
   */
  canHandOver(): boolean {
    const lead = this.p.node.lead;
    return lead !== 0 && (lead === this.p.memberId || this.p.transport.reachable(lead));
  }

  /**
   * The transport could not deliver to `to`: if it is the leader, the writes handed to it
   * have an unknown outcome now (they may have reached it before its connection broke).
   */
  onUnreachable(to: MemberId): void {
    if (to === this.p.memberId) return;
    this.p.proposals.failTo(
      to,
      new KvError(
        "OUTCOME_UNKNOWN",
        `outcome unknown: the connection to the leader ${formatMemberId(to)} broke before the write was applied: it may or may not take effect (read the key to find out)`,
      ),
    );
  }

  /** Throws what a call answers when the member does not serve: CLOSED, UNAVAILABLE. */
  checkServing(): void {
    this.checkOpen();
    if (this.removed) throw this.removedError();
    if (this.failure !== undefined) throw this.failure;
  }

  /** Throws CLOSED once `close` was called. */
  checkOpen(): void {
    if (this.closing !== undefined) throw new KvError("CLOSED", `member ${this.p.name} is closed`);
  }

  /**
   * What a removed member answers every call with: UNAVAILABLE, nothing done, so that any
   * client goes on to another member (as it would after an etcd member removed itself and
   * stopped), with the last leader this member knew as the hint.
   */
  removedError(): KvError {
    return unavailable(
      `member ${this.p.name} was removed from the cluster: nothing was done here; ask another member (and stop this one)`,
      this.leaderHint(),
    );
  }

  /** The client address of the leader this member knows of, if any. */
  leaderHint(): string | undefined {
    if (this.lead === 0) return undefined;
    const address = memberOf(this.p.machine.membership, this.lead)?.clientAddress;
    return address === undefined || address === "" ? undefined : address;
  }

  /** The driver's softState hook: counts elections and leader changes, reports them. */
  onSoftState(s: SoftState): void {
    const previous = this.lead;
    this.role = s.role;
    if (s.role === "candidate" || s.role === "preCandidate") {
      this.p.counters.elections++;
      this.p.emit({
        type: "election",
        term: this.p.node.status().term,
        preVote: s.role === "preCandidate",
      });
    }
    if (s.lead !== previous) {
      this.lead = s.lead;
      this.p.counters.leaderChanges++;
      this.p.emit({ type: "leader", term: this.p.node.status().term, leader: s.lead, previous });
      this.p.reads.onLeaderChange();
      if (previous !== 0) {
        // etcd's "leader changed": what the old leader took may or may not commit.
        this.p.proposals.failTo(
          previous,
          new KvError(
            "OUTCOME_UNKNOWN",
            `outcome unknown: the leader changed (${formatMemberId(previous)} ${previous === this.p.memberId ? "(this member) stepped down" : "is no longer known to lead"}) before the write was applied: it may or may not take effect (read the key to find out)`,
          ),
        );
      }
      this.wakeLeaderWaiters();
      this.gate.check();
    }
  }

  /** Resolves when the leader changes, the member closes, or after `ms`. */
  leaderChange(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.leaderWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private wakeLeaderWaiters(): void {
    const waiters = this.leaderWaiters;
    this.leaderWaiters = [];
    for (const w of waiters) w();
  }

  /** This member's removal was applied at `index`: it stops ticking and serving. */
  onRemoved(index: number): void {
    this.removed = true;
    this.p.driver.stopTicking();
    this.p.emit({ type: "removed", index });
    this.p.reads.rejectAll(this.removedError());
    this.gate.failAll(this.removedError());
  }

  /** The driver's failed hook: the member stops serving until restarted. */
  fail(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.failure = new KvError(
      "UNAVAILABLE",
      `member ${this.p.name} stopped after a failure (${message}); restart it`,
      {
        cause: err,
      },
    );
    this.p.emit({ type: "failed", message });
    this.p.proposals.rejectAll(
      new KvError(
        "OUTCOME_UNKNOWN",
        `member ${this.p.name} stopped before the write was applied here (${message})`,
      ),
    );
    this.p.reads.rejectAll(this.failure);
    this.gate.failAll(this.failure);
  }

  /**
   * ReplicatedStore.close: stops the transport and the driver, rejects what waits, aborts
   * the received snapshots and waits for the one being written (`drain`), closes the state
   * machine, the Raft log and the directory. Idempotent: every call returns the first
   * call's promise.
   */
  close(drain: () => Promise<void>): Promise<void> {
    this.closing ??= this.doClose(drain);
    return this.closing;
  }

  private async doClose(drain: () => Promise<void>): Promise<void> {
    const p = this.p;
    await p.transport.close().catch(() => {});
    await p.driver.stop();
    await p.machine.ready();
    p.proposals.rejectAll(
      new KvError(
        "OUTCOME_UNKNOWN",
        "the member closed before the write was applied here: it may or may not take effect",
      ),
    );
    p.reads.rejectAll(new KvError("CLOSED", `member ${p.name} is closed`));
    this.gate.failAll(
      new KvError("CLOSED", `member ${p.name} closed before the write was proposed`),
    );
    await drain();
    this.wakeLeaderWaiters();
    let failure: unknown;
    await p.machine.close().catch((err: unknown) => {
      failure ??= err;
    });
    await p.log.close().catch((err: unknown) => {
      failure ??= err;
    });
    await p.dir.close().catch((err: unknown) => {
      failure ??= err;
    });
    if (failure !== undefined) throw failure;
  }
}
