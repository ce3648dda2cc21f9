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
 * The parts: node-dir.ts (layout, locks), open-member.ts (identity, bootstrap, store and
 * log agreement), node-driver.ts (the Ready cycle), applier.ts (the apply path),
 * proposals.ts, read-loop.ts, local-snapshots.ts and incoming-snapshot.ts (snapshots);
 * this file wires them and installs received snapshots.
 */
import { checkKey } from "../batch/bytes.js";
import { WriteBatch } from "../batch/write-batch.js";
import type { AdminBackend } from "../db/admin-backend.js";
import type { AbortSignalLike } from "../db/commit-queue.js";
import type {
  BackendEntry,
  BackendIterator,
  BackendReadOptions,
  BackendScanOptions,
  BackendWriteOptions,
  CasResult,
  KvBackend,
} from "../db/kv-backend.js";
import type { StoreStats } from "../db/store-stats.js";
import { isKvError, KvError } from "../errors.js";
import { isRaftError } from "../raft/errors.js";
import { RawNode } from "../raft/raw-node.js";
import type { RaftLogStorage } from "../raft/storage/raft-log-storage.js";
import type { Message, NodeId } from "../raft/types.js";
import {
  type ClusterCounters,
  type ClusterStats,
  clusterStatsOf,
  type MemberStatus,
  type MemberView,
  newClusterCounters,
} from "./cluster-stats.js";
import { encodeCas, encodeChangeContext, encodePublish, encodeWrite } from "./command.js";
import { emitReplicationEvent, type ReplicationEvent } from "./events.js";
import { checkAddress, checkMemberName, newMemberId } from "./identity.js";
import { IncomingSnapshot } from "./incoming-snapshot.js";
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
import type { MemberParts } from "./member-parts.js";
import {
  formatMemberId,
  isRemoved,
  type MemberId,
  type MemberInfo,
  type Membership,
  memberOf,
  peersOf,
} from "./members.js";
import type { NodeDir } from "./node-dir.js";
import { NodeDriver } from "./node-driver.js";
import type { ReplicatedStoreOptions, ResolvedReplicatedOptions } from "./options.js";
import type { PeerEnvelope, PeerHandler, PeerTransport, SnapshotSink } from "./peer-transport.js";
import { Proposals } from "./proposals.js";
import { ReadLoop } from "./read-loop.js";
import { decodeDescriptor } from "./snapshot-descriptor.js";
import { installSnapshot, type ReceivedFromPeer } from "./snapshot-install.js";
import { SnapshotPolicy } from "./snapshot-policy.js";
import type { AppliedChange } from "./state-machine.js";

export type { ClusterStats, MemberStatus, MemberView } from "./cluster-stats.js";

/** Write options of a replicated store. */
export interface ReplicatedWriteOptions extends BackendWriteOptions {
  /** Milliseconds to wait for the apply (default: the store's proposalTimeoutMs). */
  timeoutMs?: number;
}

/** Read options of a replicated store. */
export interface ReplicatedReadOptions extends BackendReadOptions {
  /** Milliseconds a linearizable read waits for its confirmation (default: readTimeoutMs). */
  timeoutMs?: number;
}

export interface ReplicatedScanOptions extends BackendScanOptions {
  timeoutMs?: number;
}

/** Peer envelope checks are logged at most once per sender per this many milliseconds. */
const REFUSAL_LOG_MS = 10_000;

function checkBound(v: unknown, name: string): Uint8Array | undefined {
  if (v === undefined) return undefined;
  if (!(v instanceof Uint8Array))
    throw new KvError("INVALID_ARGUMENT", `${name} must be a Uint8Array`);
  return v;
}

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

  private ticks = 0;
  private readonly incoming = new Map<
    number,
    { sink: IncomingSnapshot; from: MemberId; started: number }
  >();
  private readonly lastHeard = new Map<MemberId, number>();
  private readonly refusalsLogged = new Map<MemberId, number>();
  private promoteRetryTick = 0;
  private publishRetryTick = 0;
  private readonly counters: ClusterCounters = newClusterCounters();
  private readonly p: MemberParts;
  private readonly life: MemberLife;
  private readonly policy: SnapshotPolicy;

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
        onMembership: (change, membership) => this.onMembership(change, membership),
      },
      settlement: this.proposals,
      state: init.applied,
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
        send: (msgs) => this.send(msgs),
        softState: (s) => this.life.onSoftState(s),
        installSnapshot: (s) => installSnapshot(this.p, this, this.policy, s),
        apply: (entries) => this.machine.apply(entries),
        readStates: (states) => this.reads.onReadStates(states),
        afterApply: () => this.afterApply(),
        advanced: () => this.proposals.advanced(),
        tick: () => this.onTick(),
        failed: (err) => this.life.fail(err),
      },
      init.o.tickMs,
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
  }

  /** Opens the member in `options.dataDir` and starts it (lifecycle.ts, `openMember`). */
  static open(options: ReplicatedStoreOptions): Promise<ReplicatedStore> {
    return openMember(options, (opened) => {
      const s = new ReplicatedStore(opened);
      s.start();
      return s;
    });
  }

  private start(): void {
    const handler: PeerHandler = {
      receive: (envelope, messages) => this.receive(envelope, messages),
      receiveSnapshot: (envelope, message) => this.receiveSnapshot(envelope, message),
      unreachable: (to) => {
        if (this.driver.running) {
          this.node.reportUnreachable(to);
          this.driver.poke();
        }
      },
    };
    this.transport.start({ clusterId: this.clusterId, memberId: this.memberId }, handler);
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
      return this.propose((request) => encodeWrite(this.memberId, request, b.encode()), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  delete(key: Uint8Array, options?: ReplicatedWriteOptions): Promise<void> {
    try {
      const b = new WriteBatch().delete(key);
      return this.propose((request) => encodeWrite(this.memberId, request, b.encode()), options);
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
      return this.propose((request) => encodeWrite(this.memberId, request, rep), options);
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
      checkKey(key);
      for (const [v, what] of [
        [expected, "expected"],
        [next, "next"],
      ] as const) {
        if (v !== undefined && !(v instanceof Uint8Array)) {
          throw new KvError("INVALID_ARGUMENT", `${what} must be a Uint8Array or undefined`);
        }
      }
      return this.propose(
        (request) => encodeCas(this.memberId, request, key, expected, next),
        options,
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Proposes the entry `make(request)` and resolves with its apply's result. Throws
   * before proposing (nothing done): CLOSED, UNAVAILABLE (removed, failed, or no leader
   * known), ABORTED (signal fired), RESOURCE_EXHAUSTED.
   */
  private propose<T>(
    make: (request: number) => Uint8Array,
    options: ReplicatedWriteOptions | undefined,
  ): Promise<T> {
    this.life.checkServing();
    const signal = options?.signal;
    if (signal?.aborted) throw new KvError("ABORTED", "write cancelled before it was proposed");
    if (this.life.lead === 0) {
      throw unavailable(
        "not proposed: no leader is known (an election may be in progress); safe to retry",
        undefined,
      );
    }
    const timeout = options?.timeoutMs ?? this.o.proposalTimeoutMs;
    const { request, promise } = this.proposals.register<T>(timeout, signal);
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
      const heard = this.lastHeard.get(m.id);
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
   * voter once it caught up (see `promoteLagEntries`). Resolves with its record (and its
   * new ID) once the change is applied here. Start the new member with
   * initialClusterState "existing" and `join: { clusterId, memberId }`.
   */
  addMember(
    spec: { name: string; peerAddress: string; clientAddress?: string },
    options?: ReplicatedWriteOptions,
  ): Promise<MemberInfo> {
    try {
      const name = checkMemberName(spec.name, "name");
      const peerAddress = checkAddress(spec.peerAddress, "peerAddress");
      const clientAddress = spec.clientAddress ?? "";
      if (clientAddress !== "") checkAddress(clientAddress, "clientAddress");
      const m = this.machine.membership;
      const clash = m.members.find((x) => x.name === name || x.peerAddress === peerAddress);
      if (clash !== undefined) {
        throw new KvError(
          "FAILED_PRECONDITION",
          `member ${clash.name} (${formatMemberId(clash.id)}) already has that name or peer address`,
        );
      }
      let id = newMemberId({ name, peerAddress });
      while (memberOf(m, id) !== undefined || isRemoved(m, id))
        id = newMemberId({ name, peerAddress });
      const member: MemberInfo = { id, name, peerAddress, clientAddress, learner: true };
      return this.proposeChange("addLearner", id, member, options) as Promise<MemberInfo>;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Removes member `id`; resolves once the removal is applied here. */
  removeMember(id: MemberId, options?: ReplicatedWriteOptions): Promise<void> {
    try {
      if (memberOf(this.machine.membership, id) === undefined) {
        throw new KvError("FAILED_PRECONDITION", `no member ${formatMemberId(id)} in the cluster`);
      }
      return this.proposeChange("removeNode", id, undefined, options).then(() => undefined);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private proposeChange(
    type: "addLearner" | "addVoter" | "removeNode",
    id: MemberId,
    member: MemberInfo | undefined,
    options: ReplicatedWriteOptions | undefined,
  ): Promise<MemberInfo | undefined> {
    this.life.checkServing();
    if (this.life.lead === 0)
      throw unavailable("not proposed: no leader is known; safe to retry", undefined);
    const timeout = options?.timeoutMs ?? this.o.proposalTimeoutMs;
    const { request, promise } = this.proposals.register<MemberInfo | undefined>(
      timeout,
      options?.signal,
    );
    try {
      this.node.proposeConfChange({
        type,
        nodeId: id,
        context: encodeChangeContext({ proposer: this.memberId, request, member }),
      });
    } catch (err) {
      this.proposals.cancel(request);
      throw proposeError(err, this.life.leaderHint());
    }
    this.driver.poke();
    return promise;
  }

  /**
   * Hands leadership to `to` (default: the most caught-up other voter, when this member
   * leads). Resolves once `to` leads as this member sees it; UNAVAILABLE if that does not
   * happen within `timeoutMs` (default: two election timeouts).
   */
  async transferLeadership(to?: MemberId, timeoutMs?: number): Promise<void> {
    this.life.checkServing();
    let target = to;
    if (target === undefined) {
      const progress = this.life.role === "leader" ? this.node.status().progress : undefined;
      let best = -1;
      for (const [id, pr] of progress ?? []) {
        if (id === this.memberId || pr.isLearner) continue;
        if (pr.match > best) {
          best = pr.match;
          target = id;
        }
      }
      if (target === undefined) {
        throw new KvError(
          "FAILED_PRECONDITION",
          "no other voter to hand leadership to (or this member does not lead)",
        );
      }
    }
    const m = memberOf(this.machine.membership, target);
    if (m === undefined || m.learner) {
      throw new KvError(
        "FAILED_PRECONDITION",
        `${formatMemberId(target)} is not a voter of the cluster`,
      );
    }
    if (this.life.lead === target) return;
    if (this.life.lead === 0)
      throw unavailable("no leader is known to transfer leadership from", undefined);
    this.node.transferLeader(target);
    this.driver.poke();
    const limit = timeoutMs ?? 2 * this.o.electionTicks * this.o.tickMs;
    const deadline = Date.now() + limit;
    while (this.life.lead !== target) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw unavailable(
          `leadership did not pass to ${formatMemberId(target)} within ${limit} ms`,
          this.life.leaderHint(),
        );
      }
      await this.life.leaderChange(left);
    }
  }

  /** Stops the member (lifecycle.ts, MemberLife.close). Idempotent. */
  close(): Promise<void> {
    return this.life.close(async () => {
      for (const { sink } of this.incoming.values()) await sink.abort();
      this.incoming.clear();
    });
  }

  // ---- the peer side ----

  private checkEnvelope(envelope: PeerEnvelope): void {
    let reason: string | undefined;
    if (envelope.clusterId !== this.clusterId) {
      reason = `it belongs to cluster ${formatMemberId(envelope.clusterId)}, not ${formatMemberId(this.clusterId)}`;
    } else if (envelope.to !== this.memberId) {
      reason = `it is for member ${formatMemberId(envelope.to)}, not ${formatMemberId(this.memberId)}`;
    } else if (isRemoved(this.machine.membership, envelope.from)) {
      reason = `member ${formatMemberId(envelope.from)} was removed from the cluster`;
    }
    if (reason === undefined) return;
    const now = Date.now();
    const last = this.refusalsLogged.get(envelope.from);
    if (last === undefined || now - last >= REFUSAL_LOG_MS) {
      this.refusalsLogged.set(envelope.from, now);
      this.emit({ type: "peer-refused", from: envelope.from, reason });
    }
    throw new KvError("FAILED_PRECONDITION", `message refused: ${reason}`);
  }

  private receive(envelope: PeerEnvelope, messages: readonly Message[]): void {
    if (!this.driver.running) return;
    this.checkEnvelope(envelope);
    this.lastHeard.set(envelope.from, Date.now());
    for (const m of messages) {
      if (m.type === "snap" || m.to !== this.memberId) continue;
      try {
        this.node.step(m);
      } catch (err) {
        if (!isRaftError(err)) throw err;
      }
    }
    this.driver.poke();
  }

  private async receiveSnapshot(envelope: PeerEnvelope, message: Message): Promise<SnapshotSink> {
    if (!this.driver.running) throw unavailable(`member ${this.name} is not running`, undefined);
    this.checkEnvelope(envelope);
    const snap = message.snapshot;
    if (message.type !== "snap" || snap === undefined || message.to !== this.memberId) {
      throw new KvError(
        "INVALID_ARGUMENT",
        "a snapshot stream must begin with a snap message for this member",
      );
    }
    const d = decodeDescriptor(snap.data);
    const { index, term } = snap.metadata;
    if (d.index !== index || d.term !== term) {
      throw new KvError(
        "CORRUPTION",
        `snapshot descriptor ${d.term}/${d.index} does not match its message ${term}/${index}`,
      );
    }
    if (index <= this.machine.appliedIndex) {
      throw new KvError(
        "FAILED_PRECONDITION",
        `snapshot ${index} is not newer than what this member applied (${this.machine.appliedIndex})`,
      );
    }
    this.lastHeard.set(envelope.from, Date.now());
    await this.dir.ensureSnapDir();
    const started = performance.now();
    return new IncomingSnapshot(this.o.fs, this.dir.incomingPath(index), d, (sink) => {
      if (!this.driver.running) throw unavailable(`member ${this.name} is not running`, undefined);
      const previous = this.incoming.get(index);
      if (previous !== undefined && previous.sink !== sink) void previous.sink.abort();
      this.incoming.set(index, { sink, from: envelope.from, started });
      try {
        this.node.step(message);
      } catch (err) {
        if (!isRaftError(err)) throw err;
      }
      this.driver.poke();
    });
  }

  /** Sends messages: snapshots through `sendSnapshot`, the rest in one batch per member. */
  private send(messages: readonly Message[]): void {
    let batch: Message[] | undefined;
    let to = -1;
    const batches = new Map<NodeId, Message[]>();
    for (const m of messages) {
      if (m.type === "snap") {
        this.sendSnapshot(m);
        continue;
      }
      if (m.to !== to) {
        to = m.to;
        batch = batches.get(to);
        if (batch === undefined) {
          batch = [];
          batches.set(to, batch);
        }
      }
      batch!.push(m);
    }
    for (const [id, msgs] of batches) this.transport.send(id, msgs);
  }

  private sendSnapshot(m: Message): void {
    const to = m.to;
    const meta = m.snapshot!.metadata;
    const local = this.snapshots.acquire(meta.index);
    if (local === undefined || local.term !== meta.term) {
      if (local !== undefined) void this.snapshots.release(local.index);
      // The log's snapshot has no files here (it was received, or recorded by a roll
      // forward): take one of the current state; the follower is retried after it.
      this.policy.wantFor(to);
      return;
    }
    const message: Message = { ...m, snapshot: { metadata: meta, data: local.descriptor } };
    const started = performance.now();
    const finish = (ok: boolean, err: unknown) => {
      void this.snapshots.release(local.index);
      if (ok) this.counters.snapshotsSent++;
      this.emit({
        type: "snapshot-sent",
        to,
        index: local.index,
        bytes: local.bytes,
        ok,
        message: err === undefined ? undefined : err instanceof Error ? err.message : String(err),
        durationMs: performance.now() - started,
      });
      if (!this.driver.running) return;
      this.node.reportSnapshot(to, ok ? "finished" : "failure");
      this.driver.poke();
    };
    this.transport
      .sendSnapshot(to, {
        message,
        files: local.files,
        bytes: local.bytes,
        read: (file, offset, length) => this.snapshots.read(local, file, offset, length),
      })
      .then(
        () => finish(true, undefined),
        (err: unknown) => finish(false, err),
      );
  }

  // ---- driver hooks ----

  private onTick(): void {
    this.ticks++;
    this.reads.onTick();
    if (this.life.removed) return;
    if (this.life.role === "leader") this.maybePromote();
    this.maybePublish();
  }

  /** Leader: promotes one caught-up learner at a time (docs/cluster.md, "Membership"). */
  private maybePromote(): void {
    if (this.ticks < this.promoteRetryTick) return;
    const st = this.node.status();
    for (const [id, pr] of st.progress ?? []) {
      if (
        !pr.isLearner ||
        pr.state !== "replicate" ||
        pr.match + this.o.promoteLagEntries < st.commit
      )
        continue;
      const member = memberOf(this.machine.membership, id);
      try {
        this.node.proposeConfChange({
          type: "addVoter",
          nodeId: id,
          context: encodeChangeContext({
            proposer: this.memberId,
            request: 0,
            member: member === undefined ? undefined : { ...member, learner: false },
          }),
        });
        this.driver.poke();
      } catch (err) {
        if (!isRaftError(err)) throw err;
      }
      this.promoteRetryTick = this.ticks + 2 * this.o.electionTicks;
      return;
    }
  }

  /** Publishes this member's name and client address once a leader is known, until applied. */
  private maybePublish(): void {
    if (this.life.lead === 0 || this.ticks < this.publishRetryTick) return;
    const me = memberOf(this.machine.membership, this.memberId);
    if (me === undefined || (me.clientAddress === this.o.clientAddress && me.name === this.name))
      return;
    try {
      this.node.propose(encodePublish(this.memberId, 0, this.name, this.o.clientAddress));
      this.driver.poke();
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
    this.publishRetryTick = this.ticks + 2 * this.o.electionTicks;
  }

  private onMembership(change: AppliedChange | undefined, membership: Membership): void {
    this.transport.setPeers(peersOf(membership, this.memberId));
    if (change === undefined) return;
    const cs = this.node.status().config;
    this.emit({
      type: "membership",
      index: change.index,
      change: change.change.type,
      member: change.change.nodeId,
      name: change.member?.name ?? "",
      applied: change.applied,
      voters: cs.voters,
      learners: cs.learners,
    });
    if (!change.applied) return;
    if (change.change.type === "removeNode" && change.change.nodeId === this.memberId) {
      this.life.onRemoved(change.index);
    }
    if (change.change.type !== "removeNode" && this.log.firstIndex() > 1) {
      // A new member needs a snapshot of a configuration that includes it.
      this.policy.want();
    }
  }

  /** After apply, before advance: pending incoming cleanup, the snapshot policy. */
  private async afterApply(): Promise<void> {
    const applied = this.machine.appliedIndex;
    for (const [index, inc] of this.incoming) {
      if (index <= applied) {
        this.incoming.delete(index);
        await inc.sink.abort();
      }
    }
    await this.policy.afterApply();
  }

  /** Takes the received snapshot `term`/`index` (snapshot-install.ts). */
  take(index: number, term: number): ReceivedFromPeer {
    const inc = this.incoming.get(index);
    if (inc === undefined || inc.sink.descriptor.term !== term) {
      throw new Error(
        `raft handed out snapshot ${term}/${index}, which this member did not receive`,
      );
    }
    this.incoming.delete(index);
    return inc;
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
