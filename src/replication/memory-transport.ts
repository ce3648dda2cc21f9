/**
 * An in-memory PeerTransport for tests and benchmarks: the members of one process talk
 * through a MemoryNetwork that can drop, delay, partition and cut links one way, seeded
 * so that a run replays. Messages go through the Raft codec (encodeMessage /
 * decodeMessage) as on a real wire, and are delivered asynchronously (never inside
 * `send`), one batch per call, in order per link unless delays reorder them. A member
 * that is not attached (closed, crashed) is unreachable: its senders are told so. A cut
 * or partitioned link loses everything silently, as a black-holed network does.
 * Snapshots are streamed chunk by chunk, awaiting each SnapshotSink.write (back-pressure);
 * a stream whose link goes down midway fails on its next chunk.
 */
import { KvError } from "../errors.js";
import { decodeMessage, encodeMessage } from "../raft/codec.js";
import type { Message } from "../raft/types.js";
import type { MemberId } from "./members.js";
import type {
  OutgoingSnapshot,
  PeerAddress,
  PeerEnvelope,
  PeerHandler,
  PeerTransport,
} from "./peer-transport.js";

export interface MemoryNetworkOptions {
  /** Seeds drops and delays. Default 1. */
  seed?: number;
  /** Probability that a batch is lost. Default 0. */
  dropRate?: number;
  /** Each batch is delivered after a delay drawn from [min, max] ms. Default [0, 0]: next turn. */
  delayMs?: readonly [number, number];
  /** Snapshot bytes per chunk. Default 64 KiB. */
  snapshotChunkBytes?: number;
  /** Pass messages through the codec. Default true. */
  encode?: boolean;
}

/**
 * Sees each batch as it is delivered and returns what is delivered instead (a fault hook:
 * return fewer messages to drop some, e.g. by type).
 */
export type BatchHook = (
  from: MemberId,
  to: MemberId,
  messages: readonly Message[],
) => readonly Message[];

/** Called before each snapshot chunk moves; throw to break the stream (a fault hook). */
export type SnapshotChunkHook = (
  from: MemberId,
  to: MemberId,
  file: string,
  offset: number,
) => void | Promise<void>;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Attached {
  readonly transport: MemoryTransport;
  readonly clusterId: number;
  readonly handler: PeerHandler;
}

export class MemoryNetwork {
  private readonly attached = new Map<MemberId, Attached>();
  /** One-way cuts, as "from>to". */
  private readonly cuts = new Set<string>();
  private readonly random: () => number;
  dropRate: number;
  delayMs: readonly [number, number];
  readonly snapshotChunkBytes: number;
  private readonly encode: boolean;
  /** A fault hook run on each batch at delivery. */
  onBatch: BatchHook | undefined;
  /** A fault hook run before each snapshot chunk. */
  onSnapshotChunk: SnapshotChunkHook | undefined;
  /** Counters. */
  readonly counts = {
    batches: 0,
    messages: 0,
    dropped: 0,
    refused: 0,
    snapshots: 0,
    snapshotBytes: 0,
  };

  constructor(options: MemoryNetworkOptions = {}) {
    this.random = mulberry32(options.seed ?? 1);
    this.dropRate = options.dropRate ?? 0;
    this.delayMs = options.delayMs ?? [0, 0];
    this.snapshotChunkBytes = options.snapshotChunkBytes ?? 64 << 10;
    this.encode = options.encode ?? true;
  }

  /** A transport for one member of this network. */
  transport(): MemoryTransport {
    return new MemoryTransport(this);
  }

  /** Cuts the link from `from` to `to` (one way). */
  cut(from: MemberId, to: MemberId): void {
    this.cuts.add(`${from}>${to}`);
  }

  /** Cuts both directions between `a` and `b`. */
  cutBoth(a: MemberId, b: MemberId): void {
    this.cut(a, b);
    this.cut(b, a);
  }

  /** Only members of the same group reach each other (members in no group reach nobody). */
  partition(...groups: readonly (readonly MemberId[])[]): void {
    const all = new Set<MemberId>([...this.attached.keys(), ...groups.flat()]);
    const group = new Map<MemberId, number>();
    groups.forEach((g, i) => {
      for (const id of g) group.set(id, i);
    });
    for (const a of all) {
      for (const b of all) {
        if (a !== b && (group.get(a) === undefined || group.get(a) !== group.get(b)))
          this.cut(a, b);
      }
    }
  }

  /** Cuts `id` off from every other member, both ways. */
  isolate(id: MemberId, others: readonly MemberId[] = [...this.attached.keys()]): void {
    for (const o of others) if (o !== id) this.cutBoth(id, o);
  }

  /** Restores every link. */
  heal(): void {
    this.cuts.clear();
  }

  isCut(from: MemberId, to: MemberId): boolean {
    return this.cuts.has(`${from}>${to}`);
  }

  /** @internal */
  attach(id: MemberId, a: Attached): void {
    this.attached.set(id, a);
  }

  /** True iff member `id` is attached (its transport started and not closed). */
  isAttached(id: MemberId): boolean {
    return this.attached.has(id);
  }

  /** @internal */
  detach(id: MemberId, t: MemoryTransport): void {
    if (this.attached.get(id)?.transport === t) this.attached.delete(id);
  }

  private delay(): number {
    const [lo, hi] = this.delayMs;
    return hi <= 0 ? 0 : lo + Math.floor(this.random() * (hi - lo + 1));
  }

  /** @internal Routes one batch from `from` to `to`. */
  route(from: Attached & { id: MemberId }, to: MemberId, messages: readonly Message[]): void {
    this.counts.batches++;
    this.counts.messages += messages.length;
    const payload = this.encode ? messages.map((m) => encodeMessage(m)) : messages;
    const deliver = () => {
      if (from.transport.closed) return;
      const dest = this.attached.get(to);
      if (dest === undefined) {
        this.counts.dropped++;
        from.handler.unreachable(to);
        return;
      }
      if (this.isCut(from.id, to) || (this.dropRate > 0 && this.random() < this.dropRate)) {
        this.counts.dropped++;
        return;
      }
      let msgs = this.encode
        ? (payload as Uint8Array[]).map((b) => decodeMessage(b))
        : (payload as readonly Message[]);
      if (this.onBatch !== undefined) msgs = this.onBatch(from.id, to, msgs);
      if (msgs.length === 0) return;
      const envelope: PeerEnvelope = { clusterId: from.clusterId, from: from.id, to };
      try {
        dest.handler.receive(envelope, msgs);
      } catch (err) {
        if (err instanceof KvError && err.code === "FAILED_PRECONDITION") this.counts.refused++;
        else throw err;
      }
    };
    const d = this.delay();
    if (d === 0) setImmediate(deliver);
    else setTimeout(deliver, d);
  }

  private linkUp(from: MemberId, to: MemberId): Attached {
    const dest = this.attached.get(to);
    if (dest === undefined || this.isCut(from, to) || this.isCut(to, from)) {
      throw new KvError("UNAVAILABLE", `snapshot stream from ${from} to ${to}: the link is down`);
    }
    return dest;
  }

  /** @internal Streams a snapshot from `from` to `to`. */
  async stream(
    from: Attached & { id: MemberId },
    to: MemberId,
    snap: OutgoingSnapshot,
  ): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    const dest = this.linkUp(from.id, to);
    const envelope: PeerEnvelope = { clusterId: from.clusterId, from: from.id, to };
    const message = this.encode ? decodeMessage(encodeMessage(snap.message)) : snap.message;
    const sink = await dest.handler.receiveSnapshot(envelope, message);
    try {
      for (const f of snap.files) {
        for (let offset = 0; offset < f.size; ) {
          await this.onSnapshotChunk?.(from.id, to, f.name, offset);
          if (from.transport.closed) throw new KvError("UNAVAILABLE", "the sender closed");
          if (this.linkUp(from.id, to) !== dest)
            throw new KvError("UNAVAILABLE", "the receiver restarted");
          const chunk = await snap.read(f.name, offset, this.snapshotChunkBytes);
          if (chunk.length === 0)
            throw new KvError("CORRUPTION", `snapshot file ${f.name} ended early`);
          await sink.write(f.name, Uint8Array.from(chunk));
          offset += chunk.length;
          this.counts.snapshotBytes += chunk.length;
        }
      }
      await this.onSnapshotChunk?.(from.id, to, "", -1);
      this.linkUp(from.id, to);
      await sink.finish();
      this.counts.snapshots++;
    } catch (err) {
      await sink.abort(err);
      throw err;
    }
  }
}

export class MemoryTransport implements PeerTransport {
  private self: (Attached & { id: MemberId }) | undefined;
  closed = false;
  peers: readonly PeerAddress[] = [];

  constructor(private readonly network: MemoryNetwork) {}

  /** The member this transport serves (after start). */
  get memberId(): MemberId | undefined {
    return this.self?.id;
  }

  start(
    self: { readonly clusterId: number; readonly memberId: MemberId },
    handler: PeerHandler,
  ): void {
    if (this.self !== undefined) throw new Error("MemoryTransport.start called twice");
    const a = { transport: this, clusterId: self.clusterId, handler, id: self.memberId };
    this.self = a;
    this.network.attach(self.memberId, a);
  }

  setPeers(peers: readonly PeerAddress[]): void {
    this.peers = peers;
  }

  send(to: MemberId, messages: readonly Message[]): void {
    if (this.closed || this.self === undefined || messages.length === 0) return;
    this.network.route(this.self, to, messages);
  }

  /** False iff `to` is not attached to the network (stopped), as a refused connection. */
  reachable(to: MemberId): boolean {
    return !this.closed && this.network.isAttached(to);
  }

  sendSnapshot(to: MemberId, snapshot: OutgoingSnapshot): Promise<void> {
    if (this.closed || this.self === undefined) {
      return Promise.reject(new KvError("UNAVAILABLE", "the transport is closed"));
    }
    return this.network.stream(this.self, to, snapshot);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.self !== undefined) this.network.detach(this.self.id, this);
  }
}
