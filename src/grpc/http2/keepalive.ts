/**
 * The one timer of a server connection: first the handshake (the client's preface and
 * SETTINGS within `handshakeTimeoutMs`), then keepalive (a client silent for
 * `keepaliveTimeMs` is sent a PING, and disconnected if it does not answer within
 * `keepaliveTimeoutMs`).
 *
 * Legal call order: `start()`; `opened()` once the preface and SETTINGS came; `touch()`
 * whenever bytes arrive; `acked()` when the keepalive PING's ACK came; `stop()` at close.
 */
import type { Http2ConnectionOptions } from "./connection-options.js";

/** The payload of the keepalive PING. */
export const KEEPALIVE_PING = Buffer.from("kvkeepal", "latin1");

export interface KeepaliveHost {
  /** Ends the connection at once for `reason`. */
  destroy(reason: string): void;
  /** Sends a PING with KEEPALIVE_PING. */
  sendPing(): void;
}

export class Keepalive {
  private open = false;
  private lastActivity = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private pingSent = false;
  private stopped = false;

  constructor(
    private readonly options: Pick<
      Http2ConnectionOptions,
      "handshakeTimeoutMs" | "keepaliveTimeMs" | "keepaliveTimeoutMs"
    >,
    private readonly host: KeepaliveHost,
  ) {}

  /** Arms the handshake timeout. */
  start(): void {
    this.arm(this.options.handshakeTimeoutMs);
  }

  /** The handshake is done: keepalive from now. */
  opened(): void {
    this.open = true;
    this.arm(this.options.keepaliveTimeMs);
  }

  /** Bytes arrived. */
  touch(): void {
    this.lastActivity = performance.now();
  }

  /** The keepalive PING was answered. */
  acked(): void {
    this.pingSent = false;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
  }

  /** (Re)arms the timer. */
  private arm(ms: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.onTimer(), ms);
    this.timer.unref();
  }

  private onTimer(): void {
    if (this.stopped) return;
    if (!this.open) {
      this.host.destroy("no HTTP/2 preface and SETTINGS within the handshake timeout");
      return;
    }
    if (this.pingSent) {
      this.host.destroy("no answer to a keepalive PING");
      return;
    }
    const idle = performance.now() - this.lastActivity;
    if (idle >= this.options.keepaliveTimeMs) {
      this.pingSent = true;
      this.host.sendPing();
      this.arm(this.options.keepaliveTimeoutMs);
      return;
    }
    this.arm(this.options.keepaliveTimeMs - idle);
  }
}
