/**
 * An in-process Raft group for tests: RawNodes on MemoryStorage, a message queue per
 * destination, and the application loop of docs/raft.md done by hand (persist, send,
 * apply, advance). Everything is explicit and deterministic: nothing moves unless a test
 * calls tick, processReady, deliver or stabilize. The scenario runner (interaction-env.ts)
 * prints what happens; unit tests assert on state.
 */
import { decodeConfChange } from "../../../src/raft/codec.js";
import type { RaftConfig } from "../../../src/raft/config.js";
import { describeMessage } from "../../../src/raft/describe.js";
import type { RaftLogger } from "../../../src/raft/logger.js";
import { MemoryStorage } from "../../../src/raft/memory-storage.js";
import { RawNode, type Ready } from "../../../src/raft/raw-node.js";
import type {
  ConfState,
  Entry,
  Message,
  NodeId,
  ReadState,
  Snapshot,
} from "../../../src/raft/types.js";

export type NodeOptions = Omit<RaftConfig, "id" | "storage" | "applied">;

export interface TestNode {
  readonly id: NodeId;
  node: RawNode;
  storage: MemoryStorage;
  options: NodeOptions;
  /** Every entry applied, in order (across restarts). */
  readonly applied: Entry[];
  /** The index the state machine has applied. */
  appliedIndex: number;
  /** The configuration as of appliedIndex. */
  confState: ConfState;
  readonly readStates: ReadState[];
  /** A Ready handed out and not yet advanced (see readyOnly / finishReady). */
  pending: Ready | undefined;
  /** Snapshots this node installed. */
  readonly snapshots: Snapshot[];
  /** Entries applied and snapshots installed, in order. */
  readonly history: (Entry | Snapshot)[];
}

/** Receives each line of what happens, when set. */
export type Tracer = (line: string) => void;

export class Cluster {
  readonly nodes = new Map<NodeId, TestNode>();
  /** Messages in flight, by destination, in send order. */
  readonly inflight = new Map<NodeId, Message[]>();
  /** Returns true to drop a message at send time (partitions, one-way cuts). */
  dropFilter: ((m: Message) => boolean) | undefined = undefined;
  tracer: Tracer | undefined = undefined;
  logger: RaftLogger | undefined = undefined;

  /**
   * Adds nodes `ids` starting from a snapshot at `index` (term 1 when index > 0) whose
   * configuration is `confState`.
   */
  add(
    ids: readonly NodeId[],
    confState: ConfState,
    options: NodeOptions = {},
    index = 0,
  ): TestNode[] {
    const out: TestNode[] = [];
    for (const id of ids) {
      const snapshot: Snapshot = {
        metadata: { index, term: index > 0 ? 1 : 0, confState },
        data: new Uint8Array(0),
      };
      const storage = new MemoryStorage({ snapshot });
      const opts: NodeOptions =
        this.logger !== undefined && options.logger === undefined
          ? { ...options, logger: this.logger }
          : { ...options };
      const n: TestNode = {
        id,
        node: new RawNode({ ...opts, id, storage }),
        storage,
        options: opts,
        applied: [],
        appliedIndex: index,
        confState,
        readStates: [],
        pending: undefined,
        snapshots: [],
        history: [],
      };
      this.nodes.set(id, n);
      out.push(n);
    }
    return out;
  }

  /** Adds node `id` on `storage` (with whatever log it holds). */
  addWithStorage(id: NodeId, storage: MemoryStorage, options: NodeOptions = {}): TestNode {
    const opts: NodeOptions =
      this.logger !== undefined && options.logger === undefined
        ? { ...options, logger: this.logger }
        : { ...options };
    const index = storage.firstIndex() - 1;
    const n: TestNode = {
      id,
      node: new RawNode({ ...opts, id, storage }),
      storage,
      options: opts,
      applied: [],
      appliedIndex: index,
      confState: storage.initialState().confState,
      readStates: [],
      pending: undefined,
      snapshots: [],
      history: [],
    };
    this.nodes.set(id, n);
    return n;
  }

  get(id: NodeId): TestNode {
    const n = this.nodes.get(id);
    if (n === undefined) throw new Error(`no node ${id}`);
    return n;
  }

  raw(id: NodeId): RawNode {
    return this.get(id).node;
  }

  private trace(line: string): void {
    this.tracer?.(line);
  }

  /** Queues `msgs` for delivery (after the drop filter). */
  send(msgs: readonly Message[]): void {
    for (const m of msgs) {
      if (this.dropFilter?.(m) === true) {
        this.trace(`dropped ${describeMessage(m)}`);
        continue;
      }
      let q = this.inflight.get(m.to);
      if (q === undefined) {
        q = [];
        this.inflight.set(m.to, q);
      }
      q.push(m);
    }
  }

  /** The first half of the loop: ready(), send rd.messages; the Ready stays pending. */
  readyOnly(id: NodeId, inspect?: (rd: Ready) => void): Ready {
    const n = this.get(id);
    if (n.pending !== undefined) throw new Error(`node ${id} has a pending Ready`);
    const rd = n.node.ready();
    n.pending = rd;
    inspect?.(rd);
    this.send(rd.messages);
    return rd;
  }

  /** The second half: persist, send messagesAfterPersist, apply, advance. */
  finishReady(id: NodeId): void {
    const n = this.get(id);
    const rd = n.pending;
    if (rd === undefined) throw new Error(`node ${id} has no pending Ready`);
    n.storage.save(rd);
    this.send(rd.messagesAfterPersist);
    if (rd.snapshot !== undefined) {
      n.snapshots.push(rd.snapshot);
      n.history.push(rd.snapshot);
      n.appliedIndex = rd.snapshot.metadata.index;
      n.confState = rd.snapshot.metadata.confState;
    }
    for (const e of rd.committedEntries) {
      if (e.index <= n.appliedIndex) throw new Error(`node ${id} applies ${e.index} twice`);
      if (e.type === "confChange") {
        try {
          n.confState = n.node.applyConfChange(decodeConfChange(e.data));
        } catch (err) {
          this.trace(`${id} refused conf change ${e.index}: ${(err as Error).message}`);
        }
      }
      n.applied.push(e);
      n.history.push(e);
      n.appliedIndex = e.index;
    }
    for (const rs of rd.readStates) n.readStates.push(rs);
    n.pending = undefined;
    n.node.advance();
  }

  /** One full Ready cycle on `id`; returns it, or undefined if there was nothing to do. */
  processReady(id: NodeId): Ready | undefined {
    const n = this.get(id);
    if (!n.node.hasReady()) return undefined;
    const rd = this.readyOnly(id);
    this.finishReady(id);
    return rd;
  }

  /** takeMessages() on `id` into the network. */
  takeMessages(id: NodeId): Message[] {
    const msgs = this.get(id).node.takeMessages();
    this.send(msgs);
    return msgs;
  }

  /** Delivers every message queued for `id` (those matching `filter`, if given). */
  deliver(id: NodeId, filter?: (m: Message) => boolean): Message[] {
    const q = this.inflight.get(id) ?? [];
    const now = filter === undefined ? q : q.filter(filter);
    const rest = filter === undefined ? [] : q.filter((m) => !filter(m));
    this.inflight.set(id, rest);
    const n = this.nodes.get(id);
    for (const m of now) {
      if (n === undefined) continue;
      this.trace(describeMessage(m));
      try {
        n.node.step(m);
      } catch (err) {
        this.trace(`${id} refused ${m.type}: ${(err as Error).message}`);
      }
    }
    return now;
  }

  /** Drops every message queued for `id` (matching `filter`, if given). */
  dropQueued(id: NodeId, filter?: (m: Message) => boolean): Message[] {
    const q = this.inflight.get(id) ?? [];
    const gone = filter === undefined ? q : q.filter(filter);
    this.inflight.set(id, filter === undefined ? [] : q.filter((m) => !filter(m)));
    return gone;
  }

  hasInflight(ids: readonly NodeId[]): boolean {
    for (const id of ids) if ((this.inflight.get(id)?.length ?? 0) > 0) return true;
    return false;
  }

  /**
   * Processes Readies and delivers messages among `ids` (default: all) until nothing
   * moves. Nodes with a pending Ready (readyOnly) are left alone.
   */
  stabilize(
    ids: readonly NodeId[] = [...this.nodes.keys()],
    onStep?: (what: string) => void,
  ): void {
    for (let round = 0; round < 10_000; round++) {
      let moved = false;
      for (const id of ids) {
        const n = this.get(id);
        if (n.pending !== undefined || !n.node.hasReady()) continue;
        onStep?.(`> ${id} handling Ready`);
        const rd = this.readyOnly(id);
        onStep?.(`ready:${id}`);
        this.finishReady(id);
        void rd;
        moved = true;
      }
      for (const id of ids) {
        if ((this.inflight.get(id)?.length ?? 0) === 0) continue;
        onStep?.(`> ${id} receiving messages`);
        this.deliver(id);
        moved = true;
      }
      if (!moved) return;
    }
    throw new Error("stabilize: no fixed point after 10000 rounds");
  }

  tick(id: NodeId, n = 1): void {
    for (let i = 0; i < n; i++) this.raw(id).tick();
  }

  /** Drops every message to or from one of `ids` from now on (until heal). */
  isolate(ids: readonly NodeId[]): void {
    const cut = new Set(ids);
    this.dropFilter = (m) => cut.has(m.from) !== cut.has(m.to);
  }

  heal(): void {
    this.dropFilter = undefined;
  }

  /** The IDs of nodes that believe they lead, by term. */
  leaders(): NodeId[] {
    return [...this.nodes.values()]
      .filter((n) => n.node.status().role === "leader")
      .map((n) => n.id);
  }

  /**
   * Restarts `id` from what its storage holds (an outstanding Ready is lost, as in a
   * crash before it was persisted). Messages in flight to it are kept.
   */
  restart(id: NodeId, storage?: MemoryStorage): TestNode {
    const n = this.get(id);
    if (storage !== undefined) n.storage = storage;
    n.pending = undefined;
    n.node = new RawNode({ ...n.options, id, storage: n.storage, applied: n.appliedIndex });
    return n;
  }
}

/** Bytes of a string, for proposals. */
export function bytes(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

export function text(b: Uint8Array): string {
  return new TextDecoder().decode(b);
}
