/**
 * One simulated node: a RawNode over the durable Raft log (RaftLogStorage) on its own
 * crash-clonable disk, the KV state machine, and the application loop that drives them
 * in exactly the order the core's contract states (docs/raft.md):
 *
 *   rd = ready(); send rd.messages; persist snapshot, entries and hard state (one save,
 *   one fsync when mustSync); send rd.messagesAfterPersist; apply rd.committedEntries
 *   (applyConfChange for conf-change entries); answer rd.readStates once applied; then
 *   advance().
 *
 * The disk has a latency in virtual time (LatencyFileSystem), so between ready() and
 * advance() the node keeps ticking, stepping messages, taking proposals and reads, and
 * sends what `takeMessages()` hands out at once. A crash can strike at any virtual
 * moment: while a Ready is being persisted (unsynced bytes then survive per the run's
 * retention, possibly torn), between persisting and applying, while the state machine is
 * being saved or a snapshot taken. The crashed incarnation's pending work never resumes.
 *
 * The state machine is saved (with its applied index) now and then and whenever a
 * snapshot is taken; a restarted node reloads it, takes the Raft log's snapshot instead
 * if that is newer, and passes its applied index to the core, which hands out only later
 * entries (and replays the membership changes up to it itself). Snapshots are sent as streams of chunks (a broken stream is reported
 * with reportSnapshot "failure"), assembled by the receiver and stepped in as one MsgSnap.
 */
import { decodeConfChange, decodeMessage, encodeMessage } from "../../../src/raft/codec.js";
import { describeMessage } from "../../../src/raft/describe.js";
import { isRaftError } from "../../../src/raft/errors.js";
import { RawNode, type Ready } from "../../../src/raft/raw-node.js";
import { RaftLogStorage } from "../../../src/raft/storage/raft-log-storage.js";
import type {
  ConfChange,
  ConfState,
  Entry,
  Message,
  NodeId,
  ReadState,
  Snapshot,
} from "../../../src/raft/types.js";
import type { MemoryFileSystem } from "../../../src/vfs/memory-file-system.js";
import { randInt } from "../../support/random.js";
import type { ClientReply, ClientRequest } from "./client.js";
import { encodeCommand, KvStateMachine } from "./kv-state-machine.js";
import { LatencyFileSystem } from "./latency-file-system.js";
import type { SimNetwork } from "./network.js";
import type { SafetyChecker } from "./safety-checker.js";
import type { Scheduler } from "./scheduler.js";

export const RAFT_DIR = "raft";
export const SM_DIR = "sm";

/** What a node needs from the simulation around it. */
export interface NodeEnv {
  readonly scheduler: Scheduler;
  readonly network: SimNetwork;
  readonly random: () => number;
  readonly checker: SafetyChecker;
  readonly config: NodeConfig;
  node(id: NodeId): SimNode | undefined;
  reply(from: NodeId, reply: ClientReply): void;
  /** The node just became leader. */
  elected(node: SimNode): void;
  /** The node leads and is about to send the entries it appended (a chance to cut it off). */
  appending(node: SimNode): void;
  /** The node crashed (the simulation restarts it later). */
  crashed(node: SimNode): void;
  /** Tracks async work: errors fail the run; the loop lets pending work progress. */
  track(work: Promise<unknown>): void;
  trace(line: string): void;
}

export interface NodeConfig {
  readonly tickMs: number;
  readonly electionTick: number;
  readonly heartbeatTick: number;
  readonly maxSizePerMsg: number;
  readonly maxInflightMsgs: number;
  /** RaftConfig.deferCommitBroadcast. */
  readonly deferCommitBroadcast: boolean;
  /**
   * Virtual ms after which a leader with an untold commit calls RawNode.tellCommit (as the
   * node driver's commitTellMs does); undefined: never.
   */
  readonly commitTellMs: number | undefined;
  /** Unsynced changes kept by a crash (crashClone's unsyncedRetention). */
  readonly retention: number;
  readonly tornWriteProbability: number;
  /** Disk latency per sync: uniform in [1, diskLatency] ms, or [1, slowDiskLatency] when slow. */
  readonly diskLatency: number;
  readonly slowDiskLatency: number;
  /** Virtual ms between persisting a Ready and applying it: uniform in [0, applyDelay]. */
  readonly applyDelay: number;
  /** Probability that the state machine is saved after an apply phase. */
  readonly saveStateRate: number;
  /** Applied entries between snapshots. */
  readonly snapshotEvery: number;
  /** Take snapshots (and compact) before advance(), else in the background after it. */
  readonly snapshotBeforeAdvance: boolean;
  /** Entries kept below a snapshot when compacting. */
  readonly keepEntries: number;
  readonly snapshotChunkBytes: number;
  /** Probability that a snapshot stream breaks at each chunk. */
  readonly streamBreakRate: number;
  readonly raftSegmentBytes: number;
}

export type NodeStatus = "down" | "starting" | "up" | "removed";

/**
 * Points of the application loop where an armed crash strikes (besides crashes at random
 * virtual times): after ready() before the save is issued; once the save is durable
 * before messagesAfterPersist go out; after those before applying; halfway through the
 * committed entries; after applying before the state is saved and advance(); inside a
 * snapshot (state saved, snapshot not yet recorded; recorded, log not yet compacted).
 */
export const CRASH_POINTS = [
  "beforeSave",
  "afterSave",
  "beforeApply",
  "midApply",
  "afterApply",
  "snapshotStateSaved",
  "snapshotRecorded",
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

interface InboundStream {
  readonly stream: number;
  readonly parts: Uint8Array[];
}

interface PendingRead {
  readonly request: ClientRequest;
}

export class SimNode {
  status: NodeStatus = "down";
  /** Changes at every crash and start: work of an older incarnation is dropped. */
  incarnation = 0;
  slowDisk = false;
  /** A crash armed to strike when the loop next reaches this point. */
  crashPoint: CrashPoint | undefined;
  /**
   * Until this virtual time the process is stalled (a long GC pause, a stopped VM): it
   * neither ticks nor takes in messages, snapshot chunks or client requests, which wait
   * in arrival order. Its disk still completes what it was given, and the Ready cycle
   * under way still runs on (its acknowledgements and self-addressed messages included).
   */
  pausedUntil = 0;
  readonly stats = {
    crashes: 0,
    snapshotsTaken: 0,
    snapshotsSent: 0,
    snapshotsInstalled: 0,
    streamsBroken: 0,
  };
  #disk: MemoryFileSystem;
  #fs: LatencyFileSystem | undefined;
  #storage: RaftLogStorage | undefined;
  #raw: RawNode | undefined;
  #sm: KvStateMachine | undefined;
  /** Between ready() and advance(). */
  #inCycle = false;
  #kicking = false;
  #kickAgain = false;
  #lastSnapshot = 0;
  #readSeq = 0;
  #streamSeq = 0;
  readonly #pendingWrites = new Set<string>();
  readonly #pendingReads = new Map<string, PendingRead>();
  readonly #confirmedReads: ReadState[] = [];
  readonly #inbound = new Map<NodeId, InboundStream>();
  readonly #outbound = new Set<NodeId>();
  readonly #selfMessages: Message[] = [];
  #stateSaves: Promise<void> = Promise.resolve();
  #previousVoters: readonly NodeId[] | undefined;

  constructor(
    readonly id: NodeId,
    disk: MemoryFileSystem,
    private readonly env: NodeEnv,
  ) {
    this.#disk = disk;
  }

  get raw(): RawNode | undefined {
    return this.status === "up" ? this.#raw : undefined;
  }

  /** The configuration as of the state machine's applied index (undefined when not up). */
  get confState(): ConfState | undefined {
    return this.status === "up" ? this.#sm?.confState : undefined;
  }

  get applied(): number {
    return this.#sm?.applied ?? 0;
  }

  isLeader(): boolean {
    return this.raw?.status().role === "leader";
  }

  /** Starts (or restarts) the node from what its disk holds. */
  start(): void {
    if (this.status === "up" || this.status === "starting" || this.status === "removed") return;
    this.status = "starting";
    const inc = ++this.incarnation;
    const fs = new LatencyFileSystem(this.#disk, this.env.scheduler, () => this.#diskLatency());
    this.#fs = fs;
    this.env.track(this.#open(fs, inc));
  }

  async #open(fs: LatencyFileSystem, inc: number): Promise<void> {
    const storage = await RaftLogStorage.open(fs, RAFT_DIR, {
      segmentBytes: this.env.config.raftSegmentBytes,
    });
    if (inc !== this.incarnation) return;
    await fs.mkdir(SM_DIR);
    let sm = await KvStateMachine.load(fs, SM_DIR);
    if (inc !== this.incarnation) return;
    const snap = storage.snapshot();
    if (snap.metadata.index > sm.applied && snap.data.length > 0) sm = stateFromSnapshot(snap);
    const initial = storage.initialState();
    const c = this.env.config;
    const raw = new RawNode({
      id: this.id,
      storage,
      electionTick: c.electionTick,
      heartbeatTick: c.heartbeatTick,
      maxSizePerMsg: c.maxSizePerMsg,
      maxInflightMsgs: c.maxInflightMsgs,
      deferCommitBroadcast: c.deferCommitBroadcast,
      applied: sm.applied,
      seed: randInt(this.env.random, 2 ** 31),
    });
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.env.checker.started(this.id, {
      hardState: initial.hardState,
      snapshotIndex: first - 1,
      snapshotTerm: storage.term(first - 1),
      entries: last >= first ? storage.entries(first, last + 1, Number.MAX_SAFE_INTEGER) : [],
      repairThrough: initial.repair?.throughIndex,
      applied: sm.applied,
    });
    this.#storage = storage;
    this.#sm = sm;
    this.#raw = raw;
    this.#lastSnapshot = snap.metadata.index;
    this.status = "up";
    this.env.trace(
      `n${this.id} up (incarnation ${inc}): term ${initial.hardState.term} log ${first - 1}..${last} applied ${sm.applied}` +
        (initial.repair ? ` REPAIR through ${initial.repair.throughIndex}` : ""),
    );
    this.#scheduleTick(inc);
    this.kick();
  }

  /** Power loss: the disk keeps what a crash keeps; everything in memory is gone. */
  crash(): void {
    if (this.status === "down" || this.status === "removed") return;
    const wasUp = this.status === "up";
    this.incarnation++;
    this.#fs?.kill();
    this.stats.crashes++;
    if (wasUp) this.env.checker.crashed(this.id);
    this.status = "down";
    this.#reset();
    const c = this.env.config;
    this.#disk = this.#disk.crashClone({
      unsyncedRetention: c.retention,
      seed: randInt(this.env.random, 2 ** 31),
      tornWriteProbability: c.tornWriteProbability,
    });
    this.env.trace(`n${this.id} crashed`);
    this.env.crashed(this);
  }

  /** Crashes iff a crash is armed at `point`; true iff it did (the caller stops). */
  #crashesAt(point: CrashPoint): boolean {
    if (this.crashPoint !== point) return false;
    this.crashPoint = undefined;
    this.env.trace(`n${this.id} reaches crash point ${point}`);
    this.crash();
    return true;
  }

  /** The node left the group: it stops for good. */
  shutDown(): void {
    if (this.status === "removed") return;
    this.incarnation++;
    this.#fs?.kill();
    this.status = "removed";
    this.#reset();
    this.env.trace(`n${this.id} shut down (removed)`);
  }

  #reset(): void {
    this.crashPoint = undefined;
    this.#raw = undefined;
    this.#storage = undefined;
    this.#sm = undefined;
    this.#inCycle = false;
    this.#pendingWrites.clear();
    this.#pendingReads.clear();
    this.#confirmedReads.length = 0;
    this.#inbound.clear();
    this.#outbound.clear();
    this.#selfMessages.length = 0;
    this.#commitTellArmed = false;
    this.#stateSaves = Promise.resolve();
    this.#previousVoters = undefined;
  }

  #diskLatency(): number {
    const c = this.env.config;
    return 1 + randInt(this.env.random, this.slowDisk ? c.slowDiskLatency : c.diskLatency);
  }

  #scheduleTick(inc: number): void {
    this.env.scheduler.after(this.env.config.tickMs, () => {
      if (inc !== this.incarnation || this.status !== "up") return;
      if (!this.#paused()) {
        this.#raw!.tick();
        this.kick();
      }
      this.#scheduleTick(inc);
    });
  }

  // ---- the Ready cycle ----

  /** Moves the node on after any input: sends what can go at once, or starts a Ready cycle. */
  kick(): void {
    if (this.#kicking) {
      this.#kickAgain = true;
      return;
    }
    this.#kicking = true;
    try {
      do {
        this.#kickAgain = false;
        if (this.status !== "up") return;
        const raw = this.#raw!;
        while (this.#selfMessages.length > 0) this.#step(this.#selfMessages.shift()!);
        if (this.#inCycle) {
          this.#send(raw.takeMessages());
        } else if (raw.hasReady()) {
          this.#startCycle(raw);
        }
        this.#armCommitTell(raw);
      } while (this.#kickAgain);
    } finally {
      this.#kicking = false;
    }
  }

  #commitTellArmed = false;

  /** Mirrors the node driver: an untold commit is told after commitTellMs. */
  #armCommitTell(raw: RawNode): void {
    const ms = this.env.config.commitTellMs;
    if (ms === undefined || this.#commitTellArmed || !raw.commitUntold()) return;
    this.#commitTellArmed = true;
    const inc = this.incarnation;
    this.env.scheduler.after(ms, () => {
      if (inc !== this.incarnation) return;
      this.#commitTellArmed = false;
      if (this.status !== "up" || this.#paused()) return;
      this.#raw!.tellCommit();
      this.kick();
    });
  }

  #startCycle(raw: RawNode): void {
    const rd = raw.ready();
    this.#inCycle = true;
    this.env.checker.readyHandedOut(this.id, rd, () => this.#configs(raw));
    for (const rs of rd.readStates) {
      this.env.checker.readAnswered(this.id, decoder.decode(rs.context), rs.index);
    }
    if (rd.softState !== undefined) {
      this.env.trace(
        `n${this.id} ${rd.softState.role} (lead ${rd.softState.lead}) term ${raw.status().term}`,
      );
      if (rd.softState.role === "leader") this.env.elected(this);
    }
    if (rd.entries.length > 0 && raw.status().role === "leader") this.env.appending(this);
    this.#send(rd.messages);
    if (this.#crashesAt("beforeSave")) return;
    const inc = this.incarnation;
    const save = this.#storage!.save({
      hardState: rd.hardState,
      entries: rd.entries,
      snapshot: rd.snapshot,
      mustSync: rd.mustSync,
    });
    this.env.track(
      save.then(() => {
        if (inc === this.incarnation) this.#persisted(rd, inc);
      }),
    );
  }

  #persisted(rd: Ready, inc: number): void {
    this.env.checker.persisted(this.id);
    if (this.#crashesAt("afterSave")) return;
    this.#send(rd.messagesAfterPersist);
    const delay = randInt(this.env.random, this.env.config.applyDelay + 1);
    this.env.scheduler.after(delay, () => {
      if (inc !== this.incarnation || this.#crashesAt("beforeApply")) return;
      this.env.track(this.#apply(rd, inc));
    });
  }

  async #apply(rd: Ready, inc: number): Promise<void> {
    const raw = this.#raw!;
    let sm = this.#sm!;
    let removedSelf = false;
    let memberAdded = false;
    if (rd.snapshot !== undefined && rd.snapshot.metadata.index > sm.applied) {
      sm = stateFromSnapshot(rd.snapshot);
      this.#sm = sm;
      this.#lastSnapshot = rd.snapshot.metadata.index;
      this.stats.snapshotsInstalled++;
      this.env.checker.restoredSnapshot(this.id, sm.applied);
      this.env.trace(`n${this.id} installed snapshot ${sm.applied}`);
    }
    const half = rd.committedEntries.length >> 1;
    for (const e of rd.committedEntries) {
      if (e === rd.committedEntries[half] && this.#crashesAt("midApply")) return;
      this.env.checker.applying(this.id, e);
      const result = sm.apply(e);
      if (e.type === "confChange") {
        const cc = this.#applyConfChange(raw, sm, e);
        if (cc.type === "removeNode" && cc.nodeId === this.id) removedSelf = true;
        // A snapshot taken before a node joined is no use to it: take a newer one.
        if (cc.type !== "removeNode") memberAdded = true;
      }
      if (result !== undefined) {
        const key = `${result.client}:${result.request}`;
        if (this.#pendingWrites.delete(key)) this.env.reply(this.id, result);
      }
    }
    for (const rs of rd.readStates) this.#confirmedReads.push(rs);
    this.#answerReads(sm);
    if (this.#crashesAt("afterApply")) return;
    const c = this.env.config;
    const snapshotDue = memberAdded || sm.applied - this.#lastSnapshot >= c.snapshotEvery;
    if (snapshotDue) this.#lastSnapshot = sm.applied;
    if (snapshotDue && c.snapshotBeforeAdvance) {
      await this.#takeSnapshot(sm, inc);
    } else if (!snapshotDue && this.env.random() < c.saveStateRate) {
      await this.#saveState(sm.serialize());
    }
    if (inc !== this.incarnation) return;
    raw.advance();
    this.#inCycle = false;
    // Or in the background, while the next Ready cycles run.
    if (snapshotDue && !c.snapshotBeforeAdvance) this.env.track(this.#takeSnapshot(sm, inc));
    if (removedSelf) {
      // Linger a little so the last messages (a removed leader's commit) go out.
      this.env.scheduler.after(20, () => {
        if (inc === this.incarnation) this.shutDown();
      });
    }
    this.kick();
  }

  /** The voters the core's commit decisions may have used: now, and before the last change. */
  #configs(raw: RawNode): (readonly NodeId[])[] {
    const voters = raw.status().config.voters;
    return this.#previousVoters === undefined ? [voters] : [voters, this.#previousVoters];
  }

  #applyConfChange(raw: RawNode, sm: KvStateMachine, e: Entry): ConfChange {
    const cc = decodeConfChange(e.data);
    this.#previousVoters = raw.status().config.voters;
    sm.confState = raw.applyConfChange(cc);
    this.env.trace(
      `n${this.id} applied ${cc.type} ${cc.nodeId} at ${e.index}: voters ${sm.confState.voters} learners ${sm.confState.learners}`,
    );
    return cc;
  }

  /**
   * Takes a snapshot of the state machine as it is now (index = applied), records it in
   * the Raft log and compacts the log behind it, keeping `keepEntries` entries.
   */
  async #takeSnapshot(sm: KvStateMachine, inc: number): Promise<void> {
    const storage = this.#storage!;
    const index = sm.applied;
    const confState = sm.confState;
    const state = sm.serialize();
    // The state machine is durable at `index` before the log may lose what precedes it.
    await this.#saveState(state);
    if (inc !== this.incarnation || this.#crashesAt("snapshotStateSaved")) return;
    if (index <= storage.snapshot().metadata.index) return;
    try {
      await storage.createSnapshot(index, confState, state);
    } catch (err) {
      // In the background a leader's snapshot may have overtaken this one: then it is moot.
      if (isRaftError(err) && storage.snapshot().metadata.index >= index) return;
      throw err;
    }
    this.stats.snapshotsTaken++;
    if (inc !== this.incarnation || this.#crashesAt("snapshotRecorded")) return;
    const compactTo = index - this.env.config.keepEntries;
    if (compactTo < storage.firstIndex()) return;
    try {
      await storage.compact(compactTo);
    } catch (err) {
      if (isRaftError(err) && storage.firstIndex() > compactTo) return;
      throw err;
    }
  }

  /** Saves state machine bytes durably, one save at a time (they share a temp file). */
  #saveState(state: Uint8Array): Promise<void> {
    const fs = this.#fs!;
    const next = this.#stateSaves.then(() => KvStateMachine.saveBytes(fs, SM_DIR, state));
    this.#stateSaves = next.catch(() => {});
    return next;
  }

  #answerReads(sm: KvStateMachine): void {
    const reads = this.#confirmedReads;
    let kept = 0;
    for (const rs of reads) {
      if (rs.index > sm.applied) {
        reads[kept++] = rs;
        continue;
      }
      const ctx = decoder.decode(rs.context);
      const pending = this.#pendingReads.get(ctx);
      if (pending === undefined) continue;
      this.#pendingReads.delete(ctx);
      const r = pending.request;
      this.env.reply(this.id, {
        client: r.client,
        request: r.request,
        output: { type: "get", value: sm.get(r.key) },
      });
    }
    reads.length = kept;
  }

  // ---- messages ----

  #send(messages: readonly Message[]): void {
    for (const m of messages) {
      this.env.checker.sending(this.id, m);
      if (TRACE_MESSAGES) this.env.trace(`send ${describeMessage(m)}`);
      if (m.to === this.id) {
        this.#selfMessages.push(m);
        this.#kickAgain = true;
        continue;
      }
      if (m.type === "snap") {
        this.#streamSnapshot(m);
        continue;
      }
      const target = this.env.node(m.to);
      if (target === undefined || target.status !== "up") {
        if (m.type === "app") this.#reportUnreachable(m.to);
      }
      const bytes = encodeMessage(m);
      const to = m.to;
      this.env.network.send(this.id, to, () => this.env.node(to)?.receiveMessage(bytes));
    }
  }

  #reportUnreachable(to: NodeId): void {
    try {
      this.#raw?.reportUnreachable(to);
    } catch (err) {
      if (!isRaftError(err)) throw err;
    }
  }

  #paused(): boolean {
    return this.env.scheduler.now < this.pausedUntil;
  }

  /** True iff the node is paused: then `input` is taken in once the pause ends. */
  #deferred(input: () => void): boolean {
    if (!this.#paused()) return false;
    this.env.scheduler.after(this.pausedUntil - this.env.scheduler.now, input);
    return true;
  }

  receiveMessage(bytes: Uint8Array): void {
    if (this.status !== "up") return;
    if (this.#deferred(() => this.receiveMessage(bytes))) return;
    this.#step(decodeMessage(bytes));
    this.kick();
  }

  #step(m: Message): void {
    try {
      this.#raw!.step(m);
    } catch (err) {
      if (isRaftError(err, "PEER_NOT_FOUND")) return;
      throw err;
    }
  }

  /**
   * Sends a MsgSnap as a stream: header and data chunks in order; any break fails it. As
   * etcd's server does (createMergedSnapshotMessage), what is sent is the state machine's
   * current state, not the stored snapshot: a stored one may predate the recipient's
   * addition, and a node ignores a snapshot whose configuration does not include it.
   */
  #streamSnapshot(m: Message): void {
    const to = m.to;
    if (this.#outbound.has(to)) return;
    this.#outbound.add(to);
    this.stats.snapshotsSent++;
    const sm = this.#sm!;
    const snap: Snapshot = {
      metadata: { index: sm.applied, term: sm.appliedTerm, confState: sm.confState },
      data: sm.serialize(),
    };
    const header = encodeMessage({
      ...m,
      snapshot: { metadata: snap.metadata, data: new Uint8Array(0) },
    });
    const data = snap.data;
    const size = this.env.config.snapshotChunkBytes;
    const chunks: Uint8Array[] = [];
    for (let off = 0; off < data.length || chunks.length === 0; off += size) {
      chunks.push(data.subarray(off, Math.min(data.length, off + size)));
    }
    const stream = ++this.#streamSeq;
    const inc = this.incarnation;
    const { scheduler, network, random } = this.env;
    const finish = (outcome: "finished" | "failure", delay: number): void => {
      scheduler.after(delay, () => {
        if (inc !== this.incarnation || this.status !== "up") return;
        this.#outbound.delete(to);
        if (outcome === "failure") this.stats.streamsBroken++;
        this.#raw!.reportSnapshot(to, outcome);
        this.kick();
      });
    };
    const sendChunk = (i: number): void => {
      scheduler.after(network.delay(), () => {
        if (inc !== this.incarnation || this.status !== "up") return;
        const target = this.env.node(to);
        if (
          target === undefined ||
          target.status !== "up" ||
          network.isCut(this.id, to) ||
          random() < this.env.config.streamBreakRate
        ) {
          finish("failure", 50);
          return;
        }
        target.receiveSnapshotChunk(this.id, stream, i, chunks.length, header, chunks[i]!);
        if (i + 1 < chunks.length) sendChunk(i + 1);
        else finish(network.isCut(to, this.id) ? "failure" : "finished", network.delay());
      });
    };
    sendChunk(0);
  }

  receiveSnapshotChunk(
    from: NodeId,
    stream: number,
    i: number,
    n: number,
    header: Uint8Array,
    chunk: Uint8Array,
  ): void {
    if (this.status !== "up") return;
    if (this.#deferred(() => this.receiveSnapshotChunk(from, stream, i, n, header, chunk))) return;
    let s = this.#inbound.get(from);
    if (s === undefined || s.stream !== stream) {
      if (i !== 0) return;
      s = { stream, parts: [] };
      this.#inbound.set(from, s);
    }
    if (i !== s.parts.length) {
      this.#inbound.delete(from);
      return;
    }
    s.parts.push(chunk.slice());
    if (s.parts.length < n) return;
    this.#inbound.delete(from);
    const data = concat(s.parts);
    const m = decodeMessage(header);
    this.#step({ ...m, snapshot: { metadata: m.snapshot!.metadata, data } });
    this.kick();
  }

  // ---- clients ----

  receiveClientRequest(request: ClientRequest): void {
    if (this.status !== "up") return;
    if (this.#deferred(() => this.receiveClientRequest(request))) return;
    const raw = this.#raw!;
    try {
      if (request.input.type === "get") {
        const ctx = `${this.id}/${request.client}/${request.request}/${++this.#readSeq}`;
        this.#pendingReads.set(ctx, { request });
        this.env.checker.readRequested(this.id, ctx);
        raw.readIndex(encoder.encode(ctx));
      } else {
        this.#pendingWrites.add(`${request.client}:${request.request}`);
        raw.propose(encodeCommand(request));
      }
    } catch (err) {
      if (!isRaftError(err)) throw err;
      this.env.reply(this.id, {
        client: request.client,
        request: request.request,
        error: err.code,
      });
      return;
    }
    this.kick();
  }
}

/** KV_SIM_TRACE=2 traces every message sent, too. */
const TRACE_MESSAGES = process.env["KV_SIM_TRACE"] === "2";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function stateFromSnapshot(snap: Snapshot): KvStateMachine {
  const sm = KvStateMachine.deserialize(snap.data);
  if (sm.applied !== snap.metadata.index) {
    throw new Error(`snapshot ${snap.metadata.index} holds state applied through ${sm.applied}`);
  }
  sm.confState = snap.metadata.confState;
  return sm;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}
