/**
 * PeerTransport: how a ReplicatedStore talks to the other members (docs/cluster.md,
 * "Peer transport"). The store has no networking of its own: the gRPC peer service
 * (src/cluster) and the in-memory transport of the tests (memory-transport.ts) implement
 * this interface.
 *
 * Contract:
 * - Legal call order: `start` once, then any of `setPeers`, `send`, `sendSnapshot`, then
 *   `close` (after which nothing is delivered to the handler).
 * - `send` never blocks and never throws for network trouble: it queues the messages for
 *   `to` and returns. Messages to one member leave in the order given; they may be lost
 *   (Raft tolerates loss, reordering and duplication). A transport that cannot deliver
 *   (no connection, queue over its bound) drops them and calls `handler.unreachable(to)`.
 *   Messages must never wait behind a snapshot stream or a disk write: a snapshot goes on
 *   a connection (or stream) of its own.
 * - Every batch is delivered with its envelope (cluster ID, sender, recipient): the
 *   receiving store checks it. A handler that throws KvError FAILED_PRECONDITION refused
 *   the batch (another cluster, a removed or unknown sender, another recipient): the
 *   transport answers the sender with that status (gRPC FAILED_PRECONDITION) and logs it;
 *   other throws are bugs of the store.
 * - Messages are raft Messages; on the wire the transport encodes them with
 *   `encodeMessage` / `decodeMessage` (kv-engine/raft, docs/format/raft-codec.md). A
 *   message may be as large as the store's `maxEntryBytes` plus 64 KiB (one entry of the
 *   largest size, with its framing); the transport must accept that size.
 * - Snapshots: `sendSnapshot` streams the files of an OutgoingSnapshot to `to` in chunks,
 *   pulling each chunk with `read` only when the previous one was taken by the network
 *   (back-pressure end to end: the receiver awaits each `SnapshotSink.write`). On the
 *   receiving side the transport calls `handler.receiveSnapshot(envelope, message)` for
 *   the sink, writes every file (in the order of `files`, each from offset 0) and calls
 *   `finish`; when a stream breaks it calls `abort`. `sendSnapshot` resolves once the
 *   receiver's `finish` resolved (the files are durable there and the message stepped);
 *   it rejects when the stream failed anywhere. The store then reports the outcome to Raft.
 */
import type { Message } from "../raft/types.js";
import type { MemberId } from "./members.js";

/** Who a batch is from and for. */
export interface PeerEnvelope {
  readonly clusterId: number;
  readonly from: MemberId;
  readonly to: MemberId;
}

/** A member the transport must be able to reach. */
export interface PeerAddress {
  readonly id: MemberId;
  /** `host:port` of its peer service. */
  readonly peerAddress: string;
}

/** A file of a snapshot: its name in the snapshot directory, size and CRC-32C. */
export interface SnapshotFileInfo {
  readonly name: string;
  readonly size: number;
  readonly crc32c: number;
}

/** A snapshot to stream, made by the sending store. */
export interface OutgoingSnapshot {
  /** The Raft `snap` message; its `snapshot.data` is the descriptor naming `files`. */
  readonly message: Message;
  readonly files: readonly SnapshotFileInfo[];
  /** Total bytes of `files`. */
  readonly bytes: number;
  /**
   * Reads up to `length` bytes of `file` from `offset` (fewer only at its end). The files
   * stay readable until `sendSnapshot` settles.
   */
  read(file: string, offset: number, length: number): Promise<Uint8Array>;
}

/** Where a received snapshot's files go (made by the receiving store). */
export interface SnapshotSink {
  /**
   * Appends `data` to `file` (files in the descriptor's order, each from offset 0).
   * Resolves once written; the transport awaits it before it takes more from the network.
   * Rejects (KvError INVALID_ARGUMENT / CORRUPTION) for a file the descriptor does not
   * name, out of order, or past its size: the transport aborts the stream then.
   */
  write(file: string, data: Uint8Array): Promise<void>;
  /**
   * Every file was written: checks sizes and checksums, makes the files durable and steps
   * the message into Raft. Resolves once stepped; rejects when a check fails (nothing is
   * stepped, what was received is removed).
   */
  finish(): Promise<void>;
  /** The stream broke: removes what was received. Never rejects. */
  abort(reason?: unknown): Promise<void>;
}

/** What the store offers the transport for incoming traffic. */
export interface PeerHandler {
  /** A batch of messages (see the module comment for what a throw means). */
  receive(envelope: PeerEnvelope, messages: readonly Message[]): void;
  /** A snapshot stream begins with its `snap` message; throws like `receive`. */
  receiveSnapshot(envelope: PeerEnvelope, message: Message): Promise<SnapshotSink>;
  /** Messages to `to` could not be delivered (the store tells Raft, which probes again). */
  unreachable(to: MemberId): void;
}

export interface PeerTransport {
  /** Starts delivering incoming traffic for member `self` of cluster `clusterId` to `handler`. */
  start(
    self: { readonly clusterId: number; readonly memberId: MemberId },
    handler: PeerHandler,
  ): void;
  /** The members to reach (called at start and whenever the membership changes). */
  setPeers(peers: readonly PeerAddress[]): void;
  /** Queues `messages` for `to` (see the module comment); never blocks, never throws. */
  send(to: MemberId, messages: readonly Message[]): void;
  /**
   * False iff the transport knows that messages sent to `to` now would be dropped (its
   * connection was refused or lost and is not dialled again yet, or `to` is no peer); true
   * otherwise, including when it cannot tell (a silent network partition).
   */
  reachable(to: MemberId): boolean;
  /** Streams a snapshot to `to` (see the module comment). */
  sendSnapshot(to: MemberId, snapshot: OutgoingSnapshot): Promise<void>;
  /** Stops: drops what is queued, ends streams, delivers nothing more. */
  close(): Promise<void>;
}
