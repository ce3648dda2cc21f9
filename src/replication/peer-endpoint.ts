/**
 * A member's side of the peer transport (peer-transport.ts): what it receives (Raft
 * messages, stepped into the node; snapshot streams, written into an IncomingSnapshot
 * that steps the snapshot message once every file is durable, and kept until Raft hands
 * the snapshot out, snapshot-install.ts) and what it sends (messages in one batch per
 * member; a snapshot from the local snapshot files of the Raft log's snapshot, or, when
 * there are none, a request for a fresh one, snapshot-policy.ts). Every incoming envelope
 * is checked: for this cluster, for this member, not from a removed member; a refusal is
 * FAILED_PRECONDITION to the sender and a "peer-refused" event, at most once per sender per
 * REFUSAL_LOG_MS. It also remembers when each peer was last heard from.
 */
import { KvError } from "../errors.js";
import { isRaftError } from "../raft/errors.js";
import type { Message, NodeId } from "../raft/types.js";
import { IncomingSnapshot } from "./incoming-snapshot.js";
import { unavailable } from "./lifecycle.js";
import type { MemberParts } from "./member-parts.js";
import { formatMemberId, isRemoved, type MemberId } from "./members.js";
import type { PeerEnvelope, PeerHandler, SnapshotSink } from "./peer-transport.js";
import { decodeDescriptor } from "./snapshot-descriptor.js";
import type { ReceivedFromPeer, ReceivedSnapshots } from "./snapshot-install.js";
import type { SnapshotPolicy } from "./snapshot-policy.js";

/** Peer envelope checks are logged at most once per sender per this many milliseconds. */
const REFUSAL_LOG_MS = 10_000;

export class PeerEndpoint implements ReceivedSnapshots {
  /** Received snapshots by index, until Raft hands them out (or passes them). */
  private readonly incoming = new Map<number, ReceivedFromPeer>();
  private readonly lastHeard = new Map<MemberId, number>();
  private readonly refusalsLogged = new Map<MemberId, number>();

  constructor(
    private readonly p: MemberParts,
    private readonly policy: SnapshotPolicy,
    /** Told when the transport could not deliver to a member (MemberLife.onUnreachable). */
    private readonly onUnreachable: (to: MemberId) => void,
  ) {}

  /** What the transport calls (PeerTransport.start). */
  handler(): PeerHandler {
    return {
      receive: (envelope, messages) => this.receive(envelope, messages),
      receiveSnapshot: (envelope, message) => this.receiveSnapshot(envelope, message),
      unreachable: (to) => {
        if (this.p.driver.running) {
          this.p.node.reportUnreachable(to);
          this.onUnreachable(to);
          this.p.driver.poke();
        }
      },
    };
  }

  /** Date.now() when `id` was last heard from (undefined: never). */
  lastContact(id: MemberId): number | undefined {
    return this.lastHeard.get(id);
  }

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

  /** Aborts the received snapshots at or below `applied` (Raft will not hand them out). */
  async abortAppliedThrough(applied: number): Promise<void> {
    for (const [index, inc] of this.incoming) {
      if (index <= applied) {
        this.incoming.delete(index);
        await inc.sink.abort();
      }
    }
  }

  /** Aborts every received snapshot (closing). */
  async abortAll(): Promise<void> {
    for (const { sink } of this.incoming.values()) await sink.abort();
    this.incoming.clear();
  }

  private check(envelope: PeerEnvelope): void {
    let reason: string | undefined;
    if (envelope.clusterId !== this.p.clusterId) {
      reason = `it belongs to cluster ${formatMemberId(envelope.clusterId)}, not ${formatMemberId(this.p.clusterId)}`;
    } else if (envelope.to !== this.p.memberId) {
      reason = `it is for member ${formatMemberId(envelope.to)}, not ${formatMemberId(this.p.memberId)}`;
    } else if (isRemoved(this.p.machine.membership, envelope.from)) {
      reason = `member ${formatMemberId(envelope.from)} was removed from the cluster`;
    }
    if (reason === undefined) return;
    const now = Date.now();
    const last = this.refusalsLogged.get(envelope.from);
    if (last === undefined || now - last >= REFUSAL_LOG_MS) {
      this.refusalsLogged.set(envelope.from, now);
      this.p.emit({ type: "peer-refused", from: envelope.from, reason });
    }
    throw new KvError("FAILED_PRECONDITION", `message refused: ${reason}`);
  }

  private receive(envelope: PeerEnvelope, messages: readonly Message[]): void {
    if (!this.p.driver.running) return;
    this.check(envelope);
    this.lastHeard.set(envelope.from, Date.now());
    for (const m of messages) {
      if (m.type === "snap" || m.to !== this.p.memberId) continue;
      try {
        this.p.node.step(m);
      } catch (err) {
        if (!isRaftError(err)) throw err;
      }
    }
    this.p.driver.poke();
  }

  private async receiveSnapshot(envelope: PeerEnvelope, message: Message): Promise<SnapshotSink> {
    if (!this.p.driver.running)
      throw unavailable(`member ${this.p.name} is not running`, undefined);
    this.check(envelope);
    const snap = message.snapshot;
    if (message.type !== "snap" || snap === undefined || message.to !== this.p.memberId) {
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
    if (index <= this.p.machine.appliedIndex) {
      throw new KvError(
        "FAILED_PRECONDITION",
        `snapshot ${index} is not newer than what this member applied (${this.p.machine.appliedIndex})`,
      );
    }
    this.lastHeard.set(envelope.from, Date.now());
    await this.p.dir.ensureSnapDir();
    const started = performance.now();
    return new IncomingSnapshot(this.p.o.fs, this.p.dir.incomingPath(index), d, (sink) => {
      if (!this.p.driver.running)
        throw unavailable(`member ${this.p.name} is not running`, undefined);
      const previous = this.incoming.get(index);
      if (previous !== undefined && previous.sink !== sink) void previous.sink.abort();
      this.incoming.set(index, { sink, from: envelope.from, started });
      try {
        this.p.node.step(message);
      } catch (err) {
        if (!isRaftError(err)) throw err;
      }
      this.p.driver.poke();
    });
  }

  /** Sends messages: snapshots through `sendSnapshot`, the rest in one batch per member. */
  send(messages: readonly Message[]): void {
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
    for (const [id, msgs] of batches) this.p.transport.send(id, msgs);
  }

  private sendSnapshot(m: Message): void {
    const to = m.to;
    const meta = m.snapshot!.metadata;
    const local = this.p.snapshots.acquire(meta.index);
    if (local === undefined || local.term !== meta.term) {
      if (local !== undefined) void this.p.snapshots.release(local.index);
      // The log's snapshot has no files here (it was received, or recorded by a roll
      // forward): take one of the current state; the follower is retried after it.
      this.policy.wantFor(to);
      return;
    }
    const message: Message = { ...m, snapshot: { metadata: meta, data: local.descriptor } };
    const started = performance.now();
    const finish = (ok: boolean, err: unknown) => {
      void this.p.snapshots.release(local.index);
      if (ok) this.p.counters.snapshotsSent++;
      this.p.emit({
        type: "snapshot-sent",
        to,
        index: local.index,
        bytes: local.bytes,
        ok,
        message: err === undefined ? undefined : err instanceof Error ? err.message : String(err),
        durationMs: performance.now() - started,
      });
      if (!this.p.driver.running) return;
      this.p.node.reportSnapshot(to, ok ? "finished" : "failure");
      this.p.driver.poke();
    };
    this.p.transport
      .sendSnapshot(to, {
        message,
        files: local.files,
        bytes: local.bytes,
        read: (file, offset, length) => this.p.snapshots.read(local, file, offset, length),
      })
      .then(
        () => finish(true, undefined),
        (err: unknown) => finish(false, err),
      );
  }
}
