/**
 * GrpcPeerTransport: the PeerTransport of cluster members (src/replication/peer-transport.ts
 * states the contract), over raft.v1.Peer (proto/raft/v1/peer.proto):
 *
 * - incoming: a GrpcServer (the lean gRPC path) on the peer port serves Messages (one
 *   long-lived client stream per sending peer, batches delivered to the store in order),
 *   Snapshot (snapshot-stream.ts) and Discover (how a joining member learns its IDs);
 * - outgoing: a PeerLink per peer (peer-link.ts: its own HTTP/2 client stream, batching,
 *   bounded queue, back-off, pings), and a node:http2 connection of its own per snapshot;
 * - TLS for peers as for clients; mutual TLS unless `tls.clientCertAuth` is false.
 *
 * Test hook (`dialOverrides`): a map from a member's peer address (as the membership
 * holds it) to the `host:port` this process dials instead, e.g. a TCP proxy per directed
 * link that a test cuts, delays or cuts one way (test/support/tcp-proxy.ts). The peer
 * still advertises and listens on its own address; only this process's dialling changes.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { KvError } from "../errors.js";
import { GrpcServer } from "../grpc/grpc-server.js";
import type { MethodDescriptor, ServiceDescriptor } from "../grpc/method.js";
import { protobufMethod } from "../grpc/method.js";
import { GrpcError, Status } from "../grpc/status.js";
import {
  type DiscoverRequest,
  DiscoverRequestSchema,
  type DiscoverResponse,
  DiscoverResponseSchema,
  file_raft_v1_peer,
  type MessagesSummary,
  MessagesSummarySchema,
  SnapshotChunkSchema,
  SnapshotResultSchema,
} from "../proto/gen/raft/v1/peer_pb.js";
import { decodeMessage } from "../raft/codec.js";
import type { Message } from "../raft/types.js";
import type { MemberId } from "../replication/members.js";
import type {
  OutgoingSnapshot,
  PeerAddress,
  PeerHandler,
  PeerTransport,
} from "../replication/peer-transport.js";
import { statusOf } from "../server/rpc-status.js";
import { decodeBatch, type WireBatch } from "./batch-codec.js";
import { dial, type PeerTlsOptions, pem, unaryCall } from "./peer-call.js";
import type { PeerTransportEvent, PeerTransportEventListener } from "./peer-events.js";
import { type LinkHost, type LinkStats, MESSAGES_PATH, PeerLink } from "./peer-link.js";
import { receiveSnapshotStream, sendSnapshotStream } from "./snapshot-stream.js";

export const PEER_SERVICE_NAME = "raft.v1.Peer";
const DISCOVER_PATH = `/${PEER_SERVICE_NAME}/Discover`;

export interface GrpcPeerTransportOptions {
  /** Interface the peer port listens on. Default "127.0.0.1". */
  host?: string;
  /** The peer port; 0 picks a free one (read it from `port`). */
  port: number;
  /** TLS for peers (default: plaintext). */
  tls?: PeerTlsOptions;
  /** Test hook: peer address -> address dialled instead (see the module comment). */
  dialOverrides?: ReadonlyMap<string, string>;
  /**
   * Largest incoming gRPC message (a batch or a snapshot chunk). Must exceed the store's
   * maxEntryBytes plus 64 KiB. Default 4 MiB + 1 MiB.
   */
  maxMessageBytes?: number;
  /** Bytes of messages waiting per peer before new ones are dropped. Default 16 MiB. */
  queueBytes?: number;
  /** Target bytes of messages per batch. Default 1 MiB. */
  batchBytes?: number;
  /** Bytes of snapshot file data per chunk. Default 1 MiB. */
  snapshotChunkBytes?: number;
  /** A snapshot transfer without progress for this long fails. Default 30,000 ms. */
  snapshotStallMs?: number;
  /** Pings per peer connection (round-trip times, dead connections). Default 1000 ms. */
  pingIntervalMs?: number;
  /** A ping unanswered this long breaks the connection. Default 5000 ms. */
  pingTimeoutMs?: number;
  onEvent?: PeerTransportEventListener;
}

/** What Discover answers a joining member. */
export interface Discovered {
  readonly clusterId: number;
  /** The joining member's ID. */
  readonly memberId: MemberId;
  readonly responderId: MemberId;
  /** Every member (peer addresses as the membership holds them). */
  readonly members: readonly PeerAddress[];
}

/** How a joining member is found: by its name and peer address. */
export type Discoverer = (name: string, peerAddress: string) => Discovered;

/** The raft.v1.Peer methods, as the lean server registers them. */
function peerService() {
  const messages: MethodDescriptor<WireBatch, MessagesSummary, "client_streaming"> = {
    name: "Messages",
    path: MESSAGES_PATH,
    kind: "client_streaming",
    decode: (bytes) => decodeBatch(bytes),
    encode: (m) => toBinary(MessagesSummarySchema, m),
  };
  return {
    name: PEER_SERVICE_NAME,
    file: file_raft_v1_peer,
    methods: {
      Messages: messages,
      Snapshot: protobufMethod(
        PEER_SERVICE_NAME,
        "Snapshot",
        "client_streaming",
        SnapshotChunkSchema,
        SnapshotResultSchema,
      ),
      Discover: protobufMethod(
        PEER_SERVICE_NAME,
        "Discover",
        "unary",
        DiscoverRequestSchema,
        DiscoverResponseSchema,
      ),
    },
  } satisfies ServiceDescriptor;
}

function emit(listener: PeerTransportEventListener | undefined, e: PeerTransportEvent): void {
  if (listener === undefined) return;
  try {
    listener(e);
  } catch {
    // A listener must not break the transport.
  }
}

export class GrpcPeerTransport implements PeerTransport {
  private handler: PeerHandler | undefined;
  private self: { clusterId: number; memberId: MemberId } | undefined;
  private readonly links = new Map<MemberId, PeerLink>();
  private readonly addresses = new Map<MemberId, string>();
  /** Peers known from Discover, used while the store's membership names none. */
  private seeds: readonly PeerAddress[] = [];
  private storePeers: readonly PeerAddress[] = [];
  private readonly unreachable = new Set<MemberId>();
  private unreachableScheduled = false;
  private readonly stopping = new AbortController();
  private closing: Promise<void> | undefined;
  private discoverer: Discoverer | undefined;
  private readonly host: LinkHost;

  private constructor(
    private readonly server: GrpcServer,
    private readonly o: GrpcPeerTransportOptions,
    /** The peer port listened on. */
    readonly port: number,
  ) {
    const transport = this;
    this.host = {
      get clusterId() {
        return transport.self?.clusterId ?? 0;
      },
      get self() {
        return transport.self?.memberId ?? 0;
      },
      tls: o.tls,
      queueBytes: o.queueBytes ?? 16 << 20,
      batchBytes: o.batchBytes ?? 1 << 20,
      pingIntervalMs: o.pingIntervalMs ?? 1000,
      pingTimeoutMs: o.pingTimeoutMs ?? 5000,
      unreachable: (to) => this.reportUnreachable(to),
      event: (e) => emit(o.onEvent, e),
    };
  }

  /** Starts the peer server; resolves once it listens. */
  static async listen(o: GrpcPeerTransportOptions): Promise<GrpcPeerTransport> {
    const maxMessageBytes = o.maxMessageBytes ?? (4 << 20) + (1 << 20);
    const tls = o.tls;
    let transport: GrpcPeerTransport | undefined;
    const server = new GrpcServer({
      host: o.host ?? "127.0.0.1",
      port: o.port,
      ...(tls === undefined
        ? {}
        : {
            tls: {
              cert: pem(tls.cert),
              key: pem(tls.key),
              ...(tls.clientCertAuth === false ? {} : { clientCa: pem(tls.ca) }),
            },
          }),
      maxReceiveMessageBytes: maxMessageBytes,
      // Peers ping every second or so; heartbeats must not be refused for it.
      minPingIntervalMs: 50,
      errorStatus: (err) => {
        const { code, details } = statusOf(err);
        return { code, message: details };
      },
      onCallEnd: (path, code) => {
        if (code !== Status.OK && code !== Status.CANCELLED && transport !== undefined) {
          emit(o.onEvent, { type: "peer-call-refused", path, code, message: "" });
        }
      },
    });
    const service = peerService();
    server.addService(service, {
      Messages: async (requests) => {
        let batches = 0;
        for await (const batch of requests) {
          transport!.deliver(batch);
          batches++;
        }
        return { $typeName: "raft.v1.MessagesSummary", batches: BigInt(batches) };
      },
      Snapshot: async (requests) => {
        const bytes = await receiveSnapshotStream(requests, transport!.handler);
        return { $typeName: "raft.v1.SnapshotResult", bytes: BigInt(bytes) };
      },
      Discover: (request: DiscoverRequest): DiscoverResponse => transport!.answerDiscover(request),
    });
    const port = await server.listen();
    transport = new GrpcPeerTransport(server, o, port);
    return transport;
  }

  /** Sets how Discover is answered (the cluster node wires it to the store's membership). */
  setDiscoverer(d: Discoverer | undefined): void {
    this.discoverer = d;
  }

  // ---- PeerTransport ----

  start(self: { readonly clusterId: number; readonly memberId: MemberId }, handler: PeerHandler) {
    if (this.self !== undefined) throw new Error("GrpcPeerTransport.start called twice");
    this.self = { clusterId: self.clusterId, memberId: self.memberId };
    this.handler = handler;
  }

  setPeers(peers: readonly PeerAddress[]): void {
    this.storePeers = peers;
    this.applyPeers();
  }

  /**
   * Peers to reach while the store knows no membership yet (a joining member before its
   * first snapshot or conf change is applied): the members Discover listed, but this one.
   */
  seedPeers(peers: readonly PeerAddress[]): void {
    this.seeds = peers.filter((p) => p.id !== this.self?.memberId);
    this.applyPeers();
  }

  private applyPeers(): void {
    if (this.closing !== undefined) return;
    const peers = this.storePeers.length > 0 ? this.storePeers : this.seeds;
    const keep = new Set<MemberId>();
    for (const p of peers) {
      keep.add(p.id);
      this.addresses.set(p.id, p.peerAddress);
      const dialled = this.dialAddress(p.peerAddress);
      const link = this.links.get(p.id);
      if (link === undefined) this.links.set(p.id, new PeerLink(this.host, p.id, dialled));
      else link.setAddress(dialled);
    }
    for (const [id, link] of this.links) {
      if (keep.has(id)) continue;
      link.close();
      this.links.delete(id);
      this.addresses.delete(id);
    }
  }

  send(to: MemberId, messages: readonly Message[]): void {
    if (this.closing !== undefined || messages.length === 0) return;
    const link = this.links.get(to);
    if (link === undefined) {
      this.reportUnreachable(to);
      return;
    }
    link.send(messages);
  }

  reachable(to: MemberId): boolean {
    return this.closing === undefined && this.links.get(to)?.deliverable === true;
  }

  async sendSnapshot(to: MemberId, snapshot: OutgoingSnapshot): Promise<void> {
    const address = this.addresses.get(to);
    const self = this.self;
    if (this.closing !== undefined || self === undefined) {
      throw new KvError("CLOSED", "the peer transport is closed");
    }
    if (address === undefined) {
      throw new KvError("UNAVAILABLE", `no peer address known for member ${to.toString(16)}`);
    }
    await sendSnapshotStream(snapshot, {
      address: this.dialAddress(address),
      tls: this.o.tls,
      envelope: { clusterId: self.clusterId, from: self.memberId, to },
      chunkBytes: this.o.snapshotChunkBytes ?? 1 << 20,
      stallMs: this.o.snapshotStallMs ?? 30_000,
      signal: this.stopping.signal,
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.handler = undefined;
      this.stopping.abort();
      for (const link of this.links.values()) link.close();
      this.links.clear();
      await this.server.shutdown(0);
    })();
    return this.closing;
  }

  // ---- for tests, metrics and the cluster service ----

  /** Per peer: connection, round-trip time, counters. */
  stats(): Map<MemberId, LinkStats> {
    const out = new Map<MemberId, LinkStats>();
    for (const [id, link] of this.links) out.set(id, link.stats());
    return out;
  }

  /** The address this process dials for a member at `peerAddress` (the test hook applied). */
  dialAddress(peerAddress: string): string {
    return this.o.dialOverrides?.get(peerAddress) ?? peerAddress;
  }

  /**
   * Asks the members at `peerAddresses` (tried in turn, the test hook applied) for the IDs of
   * member `name` at `selfPeerAddress`, as MemberAdd recorded them: the first that knows
   * it answers. Throws KvError FAILED_PRECONDITION when none knows it and at least one
   * answered that it knows no such member, UNAVAILABLE when none answered at all.
   */
  static async discover(
    peerAddresses: readonly string[],
    self: { name: string; peerAddress: string },
    o: { tls?: PeerTlsOptions; dialOverrides?: ReadonlyMap<string, string>; timeoutMs?: number },
  ): Promise<Discovered> {
    const request = toBinary(DiscoverRequestSchema, {
      $typeName: "raft.v1.DiscoverRequest",
      name: self.name,
      peerAddress: self.peerAddress,
    });
    const failures: string[] = [];
    let refusal: KvError | undefined;
    for (const address of peerAddresses) {
      const dialled = o.dialOverrides?.get(address) ?? address;
      const session = dial(dialled, o.tls);
      session.on("error", () => {});
      try {
        const bytes = await unaryCall(session, DISCOVER_PATH, request, o.timeoutMs ?? 3000);
        const r = fromBinary(DiscoverResponseSchema, bytes);
        return {
          clusterId: Number(r.clusterId),
          memberId: Number(r.memberId),
          responderId: Number(r.responderId),
          members: r.members.map((m) => ({ id: Number(m.id), peerAddress: m.peerAddress })),
        };
      } catch (err) {
        const e = err as { code?: number; details?: string; message?: string };
        if (e.code === Status.FAILED_PRECONDITION) {
          // This member does not know the joiner (yet: it may not have applied the add
          // that another member already applied); ask the others before refusing.
          refusal ??= new KvError("FAILED_PRECONDITION", `${address}: ${e.details ?? e.message}`);
          continue;
        }
        failures.push(`${address}: ${e.message ?? String(err)}`);
      } finally {
        session.destroy();
      }
    }
    if (refusal !== undefined) throw refusal;
    throw new KvError(
      "UNAVAILABLE",
      `no member answered at ${peerAddresses.join(", ")} (${failures.join("; ")})`,
    );
  }

  // ---- internals ----

  private deliver(batch: WireBatch): void {
    const handler = this.handler;
    if (handler === undefined) {
      throw new GrpcError(Status.UNAVAILABLE, "this member is not running (yet)");
    }
    const messages: Message[] = [];
    for (const bytes of batch.messages) {
      try {
        messages.push(decodeMessage(bytes));
      } catch (err) {
        throw new KvError(
          "INVALID_ARGUMENT",
          `a message does not decode: ${(err as Error).message}`,
        );
      }
    }
    handler.receive({ clusterId: batch.clusterId, from: batch.from, to: batch.to }, messages);
  }

  private answerDiscover(request: DiscoverRequest): DiscoverResponse {
    const d = this.discoverer;
    if (d === undefined || this.handler === undefined) {
      throw new GrpcError(Status.UNAVAILABLE, "this member is not running (yet)");
    }
    const r = d(request.name, request.peerAddress);
    return {
      $typeName: "raft.v1.DiscoverResponse",
      clusterId: BigInt(r.clusterId),
      memberId: BigInt(r.memberId),
      responderId: BigInt(r.responderId),
      members: r.members.map((m) => ({
        $typeName: "raft.v1.PeerInfo" as const,
        id: BigInt(m.id),
        peerAddress: m.peerAddress,
      })),
    };
  }

  private reportUnreachable(to: MemberId): void {
    this.unreachable.add(to);
    if (this.unreachableScheduled) return;
    this.unreachableScheduled = true;
    setImmediate(() => {
      this.unreachableScheduled = false;
      const ids = [...this.unreachable];
      this.unreachable.clear();
      const handler = this.handler;
      if (handler === undefined || this.closing !== undefined) return;
      for (const id of ids) handler.unreachable(id);
    });
  }
}
