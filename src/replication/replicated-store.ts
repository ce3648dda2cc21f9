/**
 * ReplicatedStore: a KvBackend replicated by Raft over a PeerTransport (docs/cluster.md).
 * Every member accepts every call:
 *
 * - writes (put, delete, write, compareAndSwap) are proposed locally (Raft forwards them
 *   to the leader) and resolve once committed and applied here, with the apply's result;
 *   UNAVAILABLE (nothing proposed, safe to retry) when no leader is known, OUTCOME_UNKNOWN
 *   when the deadline or signal fires after proposing, RESOURCE_EXHAUSTED for an entry
 *   over `maxEntryBytes` or a full backlog (nothing proposed);
 * - reads are linearizable through the read loop (read-loop.ts), or local and possibly
 *   stale with `serializable: true`;
 * - membership: addMember (as a learner, promoted by the leader once caught up),
 *   removeMember, transferLeadership, members, status.
 *
 * The parts (member-parts.ts names those they share):
 * - lifecycle.ts: opening the directory (node-dir.ts; open-member.ts: identity, bootstrap,
 *   store and log agreement), the leader as known, serving or not, removal, failure, close;
 * - node-driver.ts: the Ready cycle;
 * - state-machine.ts: the seam to what entries are applied to; kv-state-machine.ts is the
 *   key-value machine this store serves (applier.ts, the apply path; keys.ts);
 * - proposals.ts (waiting writes, settled by the machine), read-loop.ts (linearizable reads);
 * - member-ops.ts: membership changes, promotion, publication, leadership transfer;
 * - peer-endpoint.ts: the peer transport's two directions (incoming-snapshot.ts);
 * - snapshot-policy.ts (taking snapshots, local-snapshots.ts) and snapshot-install.ts;
 * - cluster-stats.ts: status and metrics figures.
 * This file is the KvBackend face (writes proposed, reads through the read loop and the
 * machine) and the wiring of the parts.
 */
import { checkCasArguments, checkKey } from "../batch/bytes.js";
import { WriteBatch } from "../batch/write-batch.js";
import type { AdminBackend } from "../db/admin-backend.js";
import type { AbortSignalLike } from "../db/commit-queue.js";
import type {
  BackendEntry,
  BackendIterator,
  CasResult,
  ClientSession,
  KvBackend,
} from "../db/kv-backend.js";
import type { StoreStats } from "../db/store-stats.js";
import { isKvError, KvError } from "../errors.js";
import type { LeaseTable } from "../lease/lease-table.js";
import { Lessor, TICK_INTERVAL_MS } from "../lease/lessor.js";
import type { MvccStore } from "../mvcc/mvcc-store.js";
import type { MvccReadView } from "../mvcc/types.js";
import { isRaftError } from "../raft/errors.js";
import { RawNode } from "../raft/raw-node.js";
import type { RaftLogStorage } from "../raft/storage/raft-log-storage.js";
import {
  type ClusterCounters,
  type ClusterStats,
  clusterStatsOf,
  type MemberStatus,
  type MemberView,
  newClusterCounters,
} from "./cluster-stats.js";
import {
  encodeCas,
  encodeClock,
  encodeOpenSession,
  encodeRequest,
  encodeUpgrade,
  encodeWrite,
} from "./command.js";
import { emitReplicationEvent, type ReplicationEvent } from "./events.js";
import { ALARM_END, ALARM_PREFIX, alarmOfKey } from "./keys.js";
import { KvStateMachine } from "./kv-state-machine.js";
import {
  MemberLife,
  type OpenedMember,
  openMember,
  proposeError,
  unavailable,
} from "./lifecycle.js";
import type { LocalSnapshots } from "./local-snapshots.js";
import { MemberAdmin } from "./member-admin.js";
import { MemberOps, type NewMember } from "./member-ops.js";
import type { MemberParts } from "./member-parts.js";
import { formatMemberId, type MemberId, type MemberInfo, memberOf, peersOf } from "./members.js";
import { encodeMvccRequest, type MvccRequest, type MvccRequestResult } from "./mvcc-request.js";
import type { NodeDir } from "./node-dir.js";
import { NodeDriver } from "./node-driver.js";
import type {
  ReplicatedReadOptions,
  ReplicatedScanOptions,
  ReplicatedStoreOptions,
  ReplicatedWriteOptions,
  ResolvedReplicatedOptions,
} from "./options.js";
import { PeerEndpoint } from "./peer-endpoint.js";
import type { PeerTransport } from "./peer-transport.js";
import { Proposals } from "./proposals.js";
import { ReadLoop } from "./read-loop.js";
import { installSnapshot } from "./snapshot-install.js";
import { SnapshotPolicy } from "./snapshot-policy.js";

export type { ClusterStats, MemberStatus, MemberView } from "./cluster-stats.js";
export type {
  ReplicatedReadOptions,
  ReplicatedScanOptions,
  ReplicatedWriteOptions,
} from "./options.js";

function checkBound(v: unknown, name: string): Uint8Array | undefined {
  if (v === undefined) return undefined;
  if (!(v instanceof Uint8Array))
    throw new KvError("INVALID_ARGUMENT", `${name} must be a Uint8Array`);
  return v;
}

/** A leader proposes a clock entry about this often while client sessions are open. */
const CLOCK_INTERVAL_MS = 1000;
/** The most one clock entry advances cluster time (a leader paused longer loses the rest). */
const MAX_CLOCK_STEP_MS = 2000;

export class ReplicatedStore implements KvBackend {
  readonly clusterId: number;
  readonly memberId: MemberId;
  readonly name: string;

  private readonly o: ResolvedReplicatedOptions;
  private readonly dir: NodeDir;
  private readonly log: RaftLogStorage;
  private readonly node: RawNode;
  private readonly driver: NodeDriver;
  private readonly machine: KvStateMachine;
  private readonly proposals = new Proposals();
  private readonly reads: ReadLoop;
  private readonly snapshots: LocalSnapshots;
  private readonly transport: PeerTransport;

  private readonly counters: ClusterCounters = newClusterCounters();
  private readonly p: MemberParts;
  private readonly life: MemberLife;
  private readonly policy: SnapshotPolicy;
  private readonly endpoint: PeerEndpoint;
  private readonly ops: MemberOps;
  /** Leader: when its last clock entry was proposed (performance.now()). */
  private clockSince: number | undefined;
  /** The term in which this member last proposed the upgrade to revisions. */
  private upgradeProposedTerm = -1;
  /**
   * The leases' clock: counts time while this member leads (after one election timeout
   * of grace) and proposes the lease Ticks (src/lease/lessor.ts).
   */
  readonly lessor: Lessor;

  private constructor(init: OpenedMember) {
    this.o = init.o;
    this.dir = init.dir;
    this.log = init.log;
    this.clusterId = init.identity.clusterId;
    this.memberId = init.identity.memberId;
    this.name = init.identity.name;
    this.transport = init.o.transport;
    this.snapshots = init.snapshots;
    const config = {
      id: this.memberId,
      storage: this.log,
      applied: init.applied.index,
      electionTick: init.o.electionTicks,
      heartbeatTick: init.o.heartbeatTicks,
      seed: init.o.seed,
      deferCommitBroadcast: true,
      ...(init.o.raftLogger === undefined ? {} : { logger: init.o.raftLogger }),
    };
    this.node = new RawNode(config);
    this.machine = new KvStateMachine({
      o: init.o,
      dir: init.dir,
      store: init.store,
      snapshots: init.snapshots,
      selfId: this.memberId,
      host: {
        applyConfChange: (cc) => {
          this.node.applyConfChange(cc);
        },
        onApplied: (index) => this.reads.onApplied(index),
        onMembership: (change, membership) => this.ops.onMembership(change, membership),
        onHashCheck: (check) =>
          this.emit({
            type: "hash-check",
            leader: Number(check.header?.memberId ?? 0n),
            revision: Number(check.header?.revision ?? 0n),
            hash: check.hash,
            compactRevision: Number(check.compactRevision),
          }),
      },
      settlement: this.proposals,
      state: init.applied,
      mvcc: init.mvcc,
      leases: init.leases,
    });
    const electionMs = init.o.electionTicks * init.o.tickMs;
    this.lessor = new Lessor(() => this.machine.leases(), {
      graceMs: electionMs,
      // At least four Ticks per election timeout E: a lease outlives its TTL by at most
      // two intervals + 2E (no leader) + E (grace) = 3.5E, inside the issue's bound of
      // 4E, twice the longest election timeout (docs/etcd.md, "Leases").
      intervalMs: Math.min(TICK_INTERVAL_MS, Math.max(1, Math.floor(electionMs / 4))),
    });
    this.reads = new ReadLoop(
      {
        readIndex: (ctx) => this.node.readIndex(ctx),
        applied: () => this.machine.appliedIndex,
        poke: () => this.driver.poke(),
        timeoutError: (ms, why, waitingFor) =>
          unavailable(
            `linearizable read ${why} after ${ms} ms ${
              waitingFor === undefined
                ? "without a majority's confirmation (no leader, or this member is cut off)"
                : `waiting to apply index ${waitingFor} (applied ${this.machine.appliedIndex})`
            }; ${this.life.role}, leader ${this.life.lead === 0 ? "unknown" : formatMemberId(this.life.lead)}`,
            this.life.leaderHint(),
          ),
      },
      init.o.electionTicks,
    );
    this.driver = new NodeDriver(
      this.node,
      this.log,
      {
        send: (msgs) => this.endpoint.send(msgs),
        softState: (s) => this.life.onSoftState(s),
        installSnapshot: (s) => installSnapshot(this.p, this.endpoint, this.policy, s),
        apply: (entries) => this.machine.apply(entries),
        readStates: (states) => this.reads.onReadStates(states),
        afterApply: () => this.afterApply(),
        advanced: () => this.proposals.advanced(),
        tick: () => {
          this.reads.onTick();
          this.ops.onTick();
          this.life.gate.check();
          this.tickClock();
          this.tickLeases();
          this.tickUpgrade();
        },
        failed: (err) => this.life.fail(err),
      },
      init.o.tickMs,
      init.o.commitTellMs,
    );
    this.p = {
      o: this.o,
      clusterId: this.clusterId,
      memberId: this.memberId,
      name: this.name,
      dir: this.dir,
      log: this.log,
      node: this.node,
      driver: this.driver,
      machine: this.machine,
      proposals: this.proposals,
      reads: this.reads,
      snapshots: this.snapshots,
      transport: this.transport,
      counters: this.counters,
      emit: (event) => this.emit(event),
    };
    this.life = new MemberLife(this.p);
    this.policy = new SnapshotPolicy(this.p);
    this.endpoint = new PeerEndpoint(this.p, this.policy, (to) => this.life.onUnreachable(to));
    this.ops = new MemberOps(this.p, this.life, this.policy);
  }

  /**
   * Opens (creating on first start) the member in `options.dataDir`, starts its transport
   * and its Raft node. Throws KvError: INVALID_ARGUMENT (bad options), LOCKED (the
   * directory is in use), FAILED_PRECONDITION (the directory holds a plain store, or an
   * identity or membership the options contradict, or this member was removed),
   * CORRUPTION, IO_ERROR.
   */
  static open(options: ReplicatedStoreOptions): Promise<ReplicatedStore> {
    return openMember(options, (opened) => {
      const s = new ReplicatedStore(opened);
      s.start();
      return s;
    });
  }

  private start(): void {
    this.transport.start(
      { clusterId: this.clusterId, memberId: this.memberId },
      this.endpoint.handler(),
    );
    this.transport.setPeers(peersOf(this.machine.membership, this.memberId));
    this.driver.start();
  }

  // ---- KvBackend: writes ----

  batch(): WriteBatch {
    return new WriteBatch();
  }

  put(key: Uint8Array, value: Uint8Array, options?: ReplicatedWriteOptions): Promise<void> {
    try {
      const b = new WriteBatch().put(key, value);
      return this.propose(
        (request) => encodeWrite(this.memberId, request, b.encode(), options?.session),
        options,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  delete(key: Uint8Array, options?: ReplicatedWriteOptions): Promise<void> {
    try {
      const b = new WriteBatch().delete(key);
      return this.propose(
        (request) => encodeWrite(this.memberId, request, b.encode(), options?.session),
        options,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Applies every operation of `batch` atomically, in one entry. */
  write(batch: WriteBatch, options?: ReplicatedWriteOptions): Promise<void> {
    try {
      if (!(batch instanceof WriteBatch)) {
        throw new KvError("INVALID_ARGUMENT", "write() takes a WriteBatch from batch()");
      }
      if (batch.count === 0) return Promise.resolve();
      const rep = batch.encode();
      return this.propose(
        (request) => encodeWrite(this.memberId, request, rep, options?.session),
        options,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Compare-and-swap decided when the entry is applied (atomic in the cluster). */
  compareAndSwap(
    key: Uint8Array,
    expected: Uint8Array | undefined,
    next: Uint8Array | undefined,
    options?: ReplicatedWriteOptions,
  ): Promise<CasResult> {
    try {
      checkCasArguments(key, expected, next);
      return this.propose(
        (request) => encodeCas(this.memberId, request, key, expected, next, options?.session),
        options,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Opens a client session through the log (session-table.ts): writes that carry it with
   * their sequence numbers (BackendWriteOptions.session) apply once however often sent.
   */
  openSession(options?: ReplicatedWriteOptions): Promise<ClientSession> {
    return this.propose((request) => encodeOpenSession(this.memberId, request), options);
  }

  /**
   * Leader, on each tick while sessions are open: proposes a clock entry about once per
   * CLOCK_INTERVAL_MS with the milliseconds its monotonic clock measured since the
   * previous one (at most MAX_CLOCK_STEP_MS), the cluster time sessions expire by.
   */
  private tickClock(): void {
    if (this.life.role !== "leader") {
      this.clockSince = undefined;
      return;
    }
    const now = performance.now();
    if (this.clockSince === undefined || this.machine.sessionCount === 0) {
      this.clockSince = now;
      return;
    }
    const elapsed = Math.floor(now - this.clockSince);
    if (elapsed < CLOCK_INTERVAL_MS) return;
    try {
      this.node.propose(encodeClock(this.memberId, Math.min(elapsed, MAX_CLOCK_STEP_MS)));
      this.driver.poke();
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
    this.clockSince = now;
  }

  /**
   * On each tick: the lessor learns whether this member leads; as leader, proposes the
   * lease Tick it has due (no one waits for it: its keep-alives were answered already).
   */
  private tickLeases(): void {
    this.lessor.setPrimary(this.life.role === "leader" && !this.life.removed);
    const tick = this.lessor.nextTick();
    if (tick === undefined) return;
    try {
      const body = encodeMvccRequest({ kind: "leaseTick", request: tick });
      this.node.propose(encodeRequest(this.memberId, 0, body));
      this.driver.poke();
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
  }

  /** The lease table as applied here (undefined while the store predates revisions). */
  leases(): LeaseTable | undefined {
    return this.machine.leases();
  }

  /**
   * Leader with `upgradeRevisions`, its store without revisions: proposes the upgrade
   * entry once per term (applier.ts converts every member's store at it).
   */
  private tickUpgrade(): void {
    if (!this.o.upgradeRevisions || this.machine.localMvcc() !== undefined) return;
    if (this.life.role !== "leader" || this.upgradeProposedTerm === this.node.term) return;
    try {
      this.node.propose(encodeUpgrade(this.memberId, 0));
      this.upgradeProposedTerm = this.node.term;
      this.driver.poke();
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
  }

  /**
   * Proposes the entry `make(request)` and resolves with its apply's result. While no
   * leader it can be handed to is known (none, or one whose connection is broken), the
   * write waits for one up to `holdForLeaderMs` of its time (leader-gate.ts). Rejects
   * without proposing (nothing done): CLOSED, UNAVAILABLE (removed, failed, or no
   * reachable leader in time), ABORTED (signal fired), RESOURCE_EXHAUSTED.
   */
  private async propose<T>(
    make: (request: number) => Uint8Array,
    options: ReplicatedWriteOptions | undefined,
  ): Promise<T> {
    this.life.checkServing();
    const signal = options?.signal;
    if (signal?.aborted) throw new KvError("ABORTED", "write cancelled before it was proposed");
    const timeout = options?.timeoutMs ?? this.o.proposalTimeoutMs;
    const started = performance.now();
    if (!this.life.canHandOver()) {
      const hold = Math.min(this.o.holdForLeaderMs, timeout);
      await this.life.gate.wait(hold, signal, () =>
        unavailable(
          this.life.lead === 0
            ? `not proposed: no leader was elected within ${hold} ms (an election in progress, or no majority of members up); safe to retry`
            : `not proposed: the leader ${formatMemberId(this.life.lead)} could not be reached within ${hold} ms (it may be down; an election follows); safe to retry`,
          this.life.leaderHint(),
        ),
      );
      this.life.checkServing();
    }
    const left = Math.max(1, timeout - (performance.now() - started));
    const { request, promise } = this.proposals.register<T>(left, signal, this.node.lead);
    const data = make(request);
    if (data.length > this.o.maxEntryBytes) {
      this.proposals.cancel(request);
      throw new KvError(
        "RESOURCE_EXHAUSTED",
        `not proposed: the entry would be ${data.length} bytes, over the limit of ${this.o.maxEntryBytes} (maxEntryBytes)`,
      );
    }
    try {
      this.node.propose(data);
    } catch (err) {
      this.proposals.cancel(request);
      throw proposeError(err, this.life.leaderHint());
    }
    this.driver.poke();
    return promise.then(
      (r) => {
        this.counters.proposalsCommitted++;
        return r;
      },
      (err: unknown) => {
        this.counters.proposalsFailed++;
        throw err;
      },
    );
  }

  // ---- KvBackend: reads ----

  /** The value of `key`: linearizable unless `serializable`. */
  async get(key: Uint8Array, options?: ReplicatedReadOptions): Promise<Uint8Array | undefined> {
    checkKey(key);
    if (!(key instanceof Uint8Array))
      throw new KvError("INVALID_ARGUMENT", "key must be a Uint8Array");
    this.life.checkServing();
    if (options?.serializable !== true)
      await this.linearizable(options?.timeoutMs, options?.signal);
    return this.machine.get(key);
  }

  /**
   * Entries of [gte, lt) in key order. Linearizable unless `serializable`: the state read
   * is one this member applied after a majority confirmed the read, so it reflects every
   * write acknowledged before the call. Its first `nextBatch` waits for that.
   */
  iterator(options: ReplicatedScanOptions): BackendIterator {
    const gte = checkBound(options.gte, "gte");
    const lt = checkBound(options.lt, "lt");
    const limit = options.limit;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
      throw new KvError("INVALID_ARGUMENT", "limit must be a non-negative integer");
    }
    if (gte !== undefined && lt !== undefined && Buffer.compare(gte, lt) > 0) {
      throw new KvError("INVALID_ARGUMENT", "gte must not be after lt");
    }
    this.life.checkServing();
    let inner: BackendIterator | undefined;
    let closed = false;
    const opened = (async () => {
      if (options.serializable !== true) await this.linearizable(options.timeoutMs, options.signal);
      await this.machine.ready();
      if (closed) return;
      inner = this.machine.iterator(gte, lt, limit);
    })();
    opened.catch(() => {});
    return {
      nextBatch: async (n: number): Promise<BackendEntry[]> => {
        await opened;
        if (inner === undefined) return [];
        return inner.nextBatch(n);
      },
      close: () => {
        closed = true;
        inner?.close();
      },
    };
  }

  // ---- the multi-version API (the etcd API's backend) ----

  /**
   * Proposes multi-version request `r` (an etcd Put, DeleteRange, writing Txn or
   * Compaction) and resolves with its result once applied here. Rejects with its refusal
   * (RequestError, COMPACTED, FUTURE_REVISION: nothing changed), FAILED_PRECONDITION on a
   * store that predates revisions, or as any write does (UNAVAILABLE not proposed,
   * OUTCOME_UNKNOWN, ...).
   */
  request(r: MvccRequest, options?: ReplicatedWriteOptions): Promise<MvccRequestResult> {
    try {
      this.machine.revisioned();
      const body = encodeMvccRequest(r);
      return this.propose((request) => encodeRequest(this.memberId, request, body), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * A view of the multi-version state: linearizable (it reflects every write acknowledged
   * before the call) unless `serializable`. Release it when done.
   */
  async view(options?: ReplicatedReadOptions): Promise<MvccReadView> {
    this.machine.revisioned();
    this.life.checkServing();
    if (options?.serializable !== true)
      await this.linearizable(options?.timeoutMs, options?.signal);
    return this.machine.view();
  }

  /**
   * The multi-version store this member applies to now (a snapshot install replaces it;
   * undefined while the store predates revisions). For etcd's Watch (src/etcd/watch-hub.ts).
   */
  localMvcc(): MvccStore | undefined {
    return this.machine.localMvcc();
  }

  /**
   * The alarms raised through etcd's Maintenance.Alarm as applied here (keys.ts
   * alarmKey), sorted by member and type.
   */
  async alarms(): Promise<Array<{ memberId: bigint; type: number }>> {
    this.life.checkOpen();
    const store = await this.machine.localStore();
    const it = store.iterator({ gte: ALARM_PREFIX, lt: ALARM_END });
    const out: Array<{ memberId: bigint; type: number }> = [];
    try {
      for (;;) {
        const rows = await it.nextBatch(64);
        if (rows.length === 0) break;
        for (const [k] of rows) {
          const a = alarmOfKey(k);
          if (a !== undefined) out.push(a);
        }
      }
    } finally {
      it.close();
    }
    return out;
  }

  /** The multi-version store's revision as submitted here (0 on a store without revisions). */
  get revision(): number {
    return this.machine.localMvcc()?.revision ?? 0;
  }

  /** The Raft term this member is in. */
  get term(): number {
    return this.node.term;
  }

  private linearizable(
    timeoutMs: number | undefined,
    signal: AbortSignalLike | undefined,
  ): Promise<void> {
    return this.reads.wait(timeoutMs ?? this.o.readTimeoutMs, signal);
  }

  /** The local store's counters (the store applying this member's entries). */
  stats(): StoreStats {
    return this.machine.stats();
  }

  /** The admin service's backend for this member (member-admin.ts). */
  admin(): AdminBackend {
    return new MemberAdmin({
      localStore: async () => {
        this.life.checkOpen();
        return this.machine.localStore();
      },
      localMvcc: () => this.machine.localMvcc(),
      fs: this.o.fs,
      stats: () => this.stats(),
    });
  }

  // ---- membership ----

  /** The members as applied here. */
  members(): MemberView[] {
    const progress = this.life.role === "leader" ? this.node.status().progress : undefined;
    const now = Date.now();
    return this.machine.membership.members.map((m) => {
      const heard = this.endpoint.lastContact(m.id);
      const pr = progress?.get(m.id);
      return {
        ...m,
        lastContactMs: heard === undefined || m.id === this.memberId ? undefined : now - heard,
        progress:
          pr === undefined
            ? undefined
            : { match: pr.match, next: pr.next, state: pr.state, recentActive: pr.recentActive },
      };
    });
  }

  /** The leader as this member knows it. */
  leader(): MemberInfo | undefined {
    return this.life.lead === 0 ? undefined : memberOf(this.machine.membership, this.life.lead);
  }

  status(): MemberStatus {
    const st = this.node.status();
    return {
      clusterId: this.clusterId,
      memberId: this.memberId,
      name: this.name,
      role: st.isLearner ? "learner" : st.role,
      term: st.term,
      leader: st.lead,
      leaderClientAddress: this.life.leaderHint(),
      commit: st.commit,
      applied: this.machine.appliedIndex,
      firstIndex: st.firstIndex,
      lastIndex: st.lastIndex,
      snapshotIndex: this.log.firstIndex() - 1,
      removed: this.life.removed,
      failure: this.life.failure?.message,
    };
  }

  clusterStats(): ClusterStats {
    return clusterStatsOf({
      self: this.memberId,
      raft: this.node.status(),
      applied: this.machine.appliedIndex,
      counters: this.counters,
      proposalsPending: this.proposals.size,
      reads: this.reads,
      driver: this.driver,
    });
  }

  /**
   * Adds a member as a learner (it replicates, does not vote); the leader promotes it to
   * voter once it caught up (see `promoteLagEntries`), unless `spec.awaitPromote` (then
   * it waits for promoteMember). Resolves with its record (and its new ID) once the change
   * is applied here. Start the new member with
   * initialClusterState "existing" and `join: { clusterId, memberId }`.
   */
  addMember(spec: NewMember, options?: ReplicatedWriteOptions): Promise<MemberInfo> {
    return this.ops.addMember(spec, options);
  }

  /** Makes learner `id` a voter (MemberOps.promoteMember); resolves once applied here. */
  promoteMember(id: MemberId, options?: ReplicatedWriteOptions): Promise<MemberInfo> {
    return this.ops.promoteMember(id, options);
  }

  /** Moves member `id` to `peerAddress` (MemberOps.updateMember); resolves once applied here. */
  updateMember(
    id: MemberId,
    peerAddress: string,
    options?: ReplicatedWriteOptions,
  ): Promise<MemberInfo> {
    return this.ops.updateMember(id, peerAddress, options);
  }

  /** Removes member `id`; resolves once the removal is applied here. */
  removeMember(id: MemberId, options?: ReplicatedWriteOptions): Promise<void> {
    return this.ops.removeMember(id, options);
  }

  /**
   * Hands leadership to `to` (default: the most caught-up other voter, when this member
   * leads). Resolves once `to` leads as this member sees it; UNAVAILABLE if that does not
   * happen within `timeoutMs` (default: two election timeouts).
   */
  transferLeadership(to?: MemberId, timeoutMs?: number): Promise<void> {
    return this.ops.transferLeadership(to, timeoutMs);
  }

  /**
   * Stops the member: stops its transport and node (a Ready being persisted finishes, none
   * is advanced), rejects waiting writes with OUTCOME_UNKNOWN and reads with CLOSED, closes
   * the store and the Raft log, releases the directory. Idempotent.
   */
  close(): Promise<void> {
    return this.life.close(async () => {
      await this.endpoint.abortAll();
      await this.policy.settled();
    });
  }

  /** After apply, before advance: pending incoming cleanup, the snapshot policy. */
  private async afterApply(): Promise<void> {
    await this.endpoint.abortAppliedThrough(this.machine.appliedIndex);
    await this.policy.afterApply();
  }

  private emit(event: ReplicationEvent): void {
    emitReplicationEvent(this.o.onEvent, event);
  }

  /** The data directory's current store path (for tests and tools). */
  get storePath(): string {
    return this.dir.storePath;
  }

  /** True iff `err` says nothing was done and another member may be asked (for clients). */
  static isNotProposed(err: unknown): boolean {
    return isKvError(err, "UNAVAILABLE");
  }
}
