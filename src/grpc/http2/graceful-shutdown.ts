/**
 * Graceful shutdown of a server connection (RFC 9113, 6.8): `begin()` sends GOAWAY with
 * the largest stream id and a PING; once the PING is answered (or after a second), GOAWAY
 * with the last stream id accepted, so that requests already on the wire are not lost;
 * the streams in progress are served, and the socket is closed when none is left.
 *
 * Streams above `acceptUpTo` are refused (REFUSED_STREAM); it falls to the last stream id
 * at the final GOAWAY, or when the client itself sends GOAWAY.
 */
import { ErrorCode, MAX_STREAM_ID } from "./frames.js";

/** The payload of the shutdown PING. */
export const SHUTDOWN_PING = Buffer.from("kvgoaway", "latin1");
const PING_ACK_TIMEOUT_MS = 1000;

export interface ShutdownHost {
  /** Highest client stream id seen. */
  lastStreamId(): number;
  /** True once the connection is closed. */
  closed(): boolean;
  /** True once the connection is closing (after a connection error, or here). */
  closing(): boolean;
  /** True while any stream is open or at work in the layer above. */
  active(): boolean;
  sendGoAway(lastId: number, code: number): void;
  sendPing(payload: Buffer): void;
  /** Ends the connection once its output is written (nothing more is accepted). */
  close(): void;
}

export class GracefulShutdown {
  private phase: "first" | "final" | undefined;
  /** Streams at or below this id are still served after GOAWAY; above it they are refused. */
  acceptUpTo = MAX_STREAM_ID;

  constructor(private readonly host: ShutdownHost) {}

  /** Starts the shutdown (once; not after close). */
  begin(): void {
    if (this.host.closed() || this.phase !== undefined) return;
    this.phase = "first";
    this.host.sendGoAway(MAX_STREAM_ID, ErrorCode.NO_ERROR);
    this.host.sendPing(SHUTDOWN_PING);
    setTimeout(() => this.final(), PING_ACK_TIMEOUT_MS).unref();
  }

  /** The shutdown PING was answered. */
  pingAcked(): void {
    this.final();
  }

  /** The client sent GOAWAY: it opens no more streams; the ones in progress finish. */
  peerGoingAway(): void {
    this.acceptUpTo = Math.min(this.acceptUpTo, this.host.lastStreamId());
  }

  /** A stream ended or settled: closes the connection if the shutdown waited only for it. */
  maybeFinish(): void {
    if (this.phase !== "final" || this.host.closing()) return;
    if (this.host.active()) return;
    this.host.close();
  }

  private final(): void {
    if (this.phase !== "first" || this.host.closed()) return;
    this.phase = "final";
    this.acceptUpTo = this.host.lastStreamId();
    this.host.sendGoAway(this.host.lastStreamId(), ErrorCode.NO_ERROR);
    this.maybeFinish();
  }
}
