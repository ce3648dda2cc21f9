/**
 * PeerLink: the stream of Raft message batches from this member to one peer
 * (raft.v1.Peer/Messages, a long-lived client-streaming call on an HTTP/2 connection of
 * its own, spoken by ClientStreamCall straight over the socket: a batch is one socket
 * write; snapshots never use it).
 *
 * Contract (PeerTransport's `send`, docs/cluster.md "Peer transport"):
 * - `send` never blocks and never throws. Messages are encoded at once and leave in the
 *   order given, batched: whatever waits when the stream can take more leaves as one
 *   MessageBatch (up to `batchBytes`; a larger message travels alone). A send's batch is
 *   handed to the socket before `send` returns (when the stream can take it), not at the
 *   end of the turn: the node driver sends a Ready's messages and then writes the Raft log
 *   or applies entries synchronously, which would otherwise hold every append and commit
 *   notice for that long (one call per Ready and peer, so this costs no extra writes).
 * - Back-pressure: while the stream cannot take more (HTTP/2 flow control, socket
 *   buffer), messages wait in a queue of at most `queueBytes`; messages that do not fit
 *   are dropped and the peer reported unreachable.
 * - A broken stream (connection refused or lost, ping timeout, the peer's refusal) drops
 *   what waits, reports the peer unreachable and backs off (50 ms doubling to 1 s; 1 s to
 *   5 s after a refusal) before the next send dials again; during the back-off, sends are
 *   dropped and reported. A stream that lived 2 s or more starts the back-off afresh.
 * - A ping every `pingIntervalMs` measures the round trip (HTTP/2 PING) and detects a dead
 *   connection: no answer within `pingTimeoutMs` breaks the stream.
 */
import { ClientStreamCall } from "../grpc/http2/client-stream.js";
import { PREFIX_BYTES } from "../grpc/message-framing.js";
import { Status } from "../grpc/status.js";
import { encodeMessage } from "../raft/codec.js";
import type { Message } from "../raft/types.js";
import type { MemberId } from "../replication/members.js";
import { encodeBatch } from "./batch-codec.js";
import { dialSocket, type PeerTlsOptions } from "./peer-call.js";
import type { PeerTransportEvent } from "./peer-events.js";

export const MESSAGES_PATH = "/raft.v1.Peer/Messages";

export interface LinkHost {
  readonly clusterId: number;
  readonly self: MemberId;
  readonly tls: PeerTlsOptions | undefined;
  readonly queueBytes: number;
  readonly batchBytes: number;
  readonly pingIntervalMs: number;
  readonly pingTimeoutMs: number;
  /** Messages to `to` were lost (called outside `send`, at most once per turn). */
  unreachable(to: MemberId): void;
  event(e: PeerTransportEvent): void;
}

type State = "idle" | "open" | "backoff" | "closed";

const FIRST_BACKOFF_MS = 50;
const MAX_BACKOFF_MS = 1000;
const REFUSED_BACKOFF_MS = 1000;
const MAX_REFUSED_BACKOFF_MS = 5000;
const FRESH_AFTER_MS = 2000;
/** Smoothing of the round-trip average (weight of the newest sample). */
const RTT_WEIGHT = 0.25;

export interface LinkStats {
  readonly connected: boolean;
  /** Smoothed round-trip time in ms (undefined until measured). */
  readonly rttMs: number | undefined;
  readonly batchesSent: number;
  readonly messagesSent: number;
  readonly messagesDropped: number;
  readonly connects: number;
}

export class PeerLink {
  private state: State = "idle";
  private call: ClientStreamCall | undefined;
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private blocked = false;
  private backoffMs = 0;
  private backoffTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private pingSentAt: number | undefined;
  private openedAt = 0;
  private rtt: number | undefined;
  private batches = 0;
  private sent = 0;
  private dropped = 0;
  private connects = 0;

  constructor(
    private readonly host: LinkHost,
    readonly id: MemberId,
    /** Where it is dialled (the peer address, or the test hook's override). */
    private address: string,
  ) {}

  get dialAddress(): string {
    return this.address;
  }

  /**
   * True iff a send now is expected to reach the peer: the stream is connected, or it
   * never failed (the next send dials). False after a refused or lost connection until a
   * new stream is connected (backing off, idle after the back-off, dialling), and once
   * closed.
   */
  get deliverable(): boolean {
    if (this.state === "open") return this.openedAt > 0 || this.backoffMs === 0;
    return this.state === "idle" && this.backoffMs === 0;
  }

  stats(): LinkStats {
    return {
      connected: this.state === "open" && this.openedAt > 0,
      rttMs: this.rtt,
      batchesSent: this.batches,
      messagesSent: this.sent,
      messagesDropped: this.dropped,
      connects: this.connects,
    };
  }

  /** Dials `address` from now on (an open stream to the old one is ended). */
  setAddress(address: string): void {
    if (address === this.address) return;
    this.address = address;
    if (this.state === "open") this.teardown("the peer's address changed", false);
    this.clearBackoff();
    if (this.state !== "closed") this.state = "idle";
  }

  send(messages: readonly Message[]): void {
    if (this.state === "closed" || this.state === "backoff") {
      this.drop(messages.length);
      return;
    }
    let bytes = 0;
    const encoded: Uint8Array[] = [];
    for (const m of messages) {
      const e = encodeMessage(m);
      encoded.push(e);
      bytes += e.length;
    }
    if (this.pendingBytes + bytes > this.host.queueBytes && this.pending.length > 0) {
      this.drop(messages.length);
      return;
    }
    for (const e of encoded) this.pending.push(e);
    this.pendingBytes += bytes;
    if (this.state === "idle") this.connect();
    this.flush();
    this.call?.flush();
  }

  close(): void {
    if (this.state === "closed") return;
    this.teardown("closed", false);
    this.clearBackoff();
    this.state = "closed";
  }

  // ---- internals ----

  private drop(count: number): void {
    this.dropped += count;
    this.host.unreachable(this.id);
  }

  private connect(): void {
    this.connects++;
    this.state = "open";
    this.openedAt = 0;
    this.blocked = false;
    const { socket, readyEvent, scheme } = dialSocket(this.address, this.host.tls);
    const call: ClientStreamCall = new ClientStreamCall(
      socket,
      { scheme, authority: this.address, path: MESSAGES_PATH },
      {
        drain: () => {
          if (this.call !== call) return;
          this.blocked = false;
          this.flush();
        },
        status: (s) => {
          if (this.call !== call) return;
          const refused = s.code === Status.FAILED_PRECONDITION;
          if (refused) {
            this.host.event({
              type: "peer-refused",
              to: this.id,
              code: s.code,
              message: s.message,
            });
          }
          this.fail(`the stream ended: ${s.message} (status ${s.code})`, refused);
        },
      },
    );
    this.call = call;
    socket.once(readyEvent, () => {
      if (this.call !== call || call.ended) return;
      this.openedAt = Date.now();
      this.host.event({ type: "peer-connected", to: this.id, address: this.address });
    });
    this.pingTimer = setInterval(() => this.ping(), this.host.pingIntervalMs);
    this.pingTimer.unref();
  }

  private ping(): void {
    const call = this.call;
    if (call === undefined || this.openedAt === 0) return;
    const now = Date.now();
    if (this.pingSentAt !== undefined) {
      if (now - this.pingSentAt > this.host.pingTimeoutMs) {
        this.fail(`no answer to a ping within ${this.host.pingTimeoutMs} ms`, false);
      }
      return;
    }
    this.pingSentAt = now;
    const sent = call.ping((err, duration) => {
      if (this.call !== call) return;
      this.pingSentAt = undefined;
      if (err !== null) return;
      this.rtt = this.rtt === undefined ? duration : this.rtt + RTT_WEIGHT * (duration - this.rtt);
      this.host.event({ type: "peer-rtt", to: this.id, ms: duration });
    });
    if (!sent) this.pingSentAt = undefined;
  }

  private flush(): void {
    const call = this.call;
    if (call === undefined || this.state !== "open") return;
    while (this.pending.length > 0 && !this.blocked) {
      let n = 0;
      let bytes = 0;
      const sizes: number[] = [];
      while (n < this.pending.length) {
        const s = this.pending[n]!.length;
        if (n > 0 && bytes + s > this.host.batchBytes) break;
        sizes.push(s);
        bytes += s;
        n++;
      }
      const messages = this.pending.splice(0, n);
      this.pendingBytes -= bytes;
      const out = encodeBatch(
        { clusterId: this.host.clusterId, from: this.host.self, to: this.id, messages },
        PREFIX_BYTES,
      );
      out[0] = 0;
      out.writeUInt32BE(out.length - PREFIX_BYTES, 1);
      this.batches++;
      this.sent += n;
      if (!call.write(out)) this.blocked = true;
    }
  }

  /** The stream broke: drop what waits, report, back off. */
  private fail(reason: string, refused: boolean): void {
    if (this.state !== "open") return;
    const lived = this.openedAt === 0 ? 0 : Date.now() - this.openedAt;
    this.teardown(reason, true);
    if (lived >= FRESH_AFTER_MS) this.backoffMs = 0;
    this.backoffMs = refused
      ? Math.min(MAX_REFUSED_BACKOFF_MS, Math.max(REFUSED_BACKOFF_MS, 2 * this.backoffMs))
      : Math.min(MAX_BACKOFF_MS, Math.max(FIRST_BACKOFF_MS, 2 * this.backoffMs));
    this.state = "backoff";
    this.backoffTimer = setTimeout(() => {
      this.backoffTimer = undefined;
      if (this.state === "backoff") this.state = "idle";
    }, this.backoffMs);
    this.backoffTimer.unref();
  }

  private teardown(reason: string, report: boolean): void {
    const wasConnected = this.openedAt > 0;
    const lost = this.pending.length;
    this.pending = [];
    this.pendingBytes = 0;
    this.blocked = false;
    this.openedAt = 0;
    this.pingSentAt = undefined;
    if (this.pingTimer !== undefined) clearInterval(this.pingTimer);
    this.pingTimer = undefined;
    const call = this.call;
    this.call = undefined;
    call?.close();
    if (report) {
      if (lost > 0) this.drop(lost);
      else this.host.unreachable(this.id);
      if (wasConnected) this.host.event({ type: "peer-disconnected", to: this.id, reason });
    }
  }

  private clearBackoff(): void {
    if (this.backoffTimer !== undefined) clearTimeout(this.backoffTimer);
    this.backoffTimer = undefined;
    this.backoffMs = 0;
  }
}
