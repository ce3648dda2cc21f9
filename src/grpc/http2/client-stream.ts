/**
 * ClientStreamCall: ONE long-lived client-streaming gRPC call on an HTTP/2 connection of
 * its own (client-connection.ts), over a socket the caller provides (a `net.Socket`, or a
 * `tls.TLSSocket` that negotiates ALPN "h2"; it may still be connecting). Written for the
 * peer link: each flush of its messages leaves as DATA frames in one socket write.
 *
 * Contract:
 * - On construction: the preface, SETTINGS (ENABLE_PUSH 0, INITIAL_WINDOW_SIZE the
 *   receive window) and the request HEADERS of stream 1 (`:method POST`, `:scheme`,
 *   `:path`, `:authority`, `content-type: application/grpc`, `te: trailers`, any extra
 *   headers), without END_STREAM, sent at once (not waiting for the server's SETTINGS).
 * - `write(message)` takes bytes that are ALREADY gRPC-framed (the 5-byte prefix
 *   included) and must not change afterwards; they leave as DATA on stream 1, split at the
 *   server's MAX_FRAME_SIZE, as far as the send windows allow; the rest waits, in order.
 *   It returns false when bytes wait or the socket's buffer is full; `drain` is then called
 *   once everything went and the socket takes more. After the call ended, writes are
 *   dropped (and return false).
 * - The server's SETTINGS are acknowledged, its PINGs answered, the receive window of any
 *   DATA returned at once (the response messages themselves are discarded); every header
 *   block is decoded, to keep the HPACK table in step.
 * - `status` is called once, when the call ended: with grpc-status and the percent-decoded
 *   grpc-message of a trailers-only response or of the trailers; UNKNOWN for an HTTP
 *   status other than 200 without grpc-status; UNAVAILABLE when the stream ends without a
 *   status, on RST_STREAM, on GOAWAY, when the socket errors or closes, or when TLS did not
 *   negotiate h2; INTERNAL for a protocol error of the server's. The connection is then
 *   ended (RST_STREAM CANCEL when the stream was still open, then the socket's end).
 * - `ping(cb)` sends a PING and calls `cb(null, ms)` with its round trip when the ACK
 *   comes, or `cb(err, 0)` when the call ends first.
 * - `close()` ends the call and the connection the same way, without a `status` call;
 *   it never throws. A socket that does not finish closing within a second is destroyed.
 */
import type { Socket } from "node:net";
import { percentDecode, responseStatus } from "../response-status.js";
import { Status } from "../status.js";
import {
  type ClientStream,
  type ClientStreamHandler,
  Http2ClientConnection,
  type StreamEnd,
} from "./client-connection.js";
import * as h2 from "./frames.js";
import { encodeHeaderBlock } from "./hpack-encoder.js";

export interface CallStatus {
  readonly code: number;
  readonly message: string;
}

export interface ClientStreamOptions {
  readonly scheme: "http" | "https";
  readonly authority: string;
  readonly path: string;
  /** Extra request headers (lowercase names), after the standard ones. */
  readonly headers?: readonly (readonly [string, string])[];
  /** The receive window granted to the stream (and the connection). Default 65535. */
  readonly receiveWindow?: number;
}

export interface ClientStreamHandlers {
  /** The call takes more again, after a `write` returned false. */
  drain(): void;
  /** The call ended (called once, never after `close()`). */
  status(s: CallStatus): void;
}

const MAX_HEADER_LIST = 64 * 1024;

type PingCallback = (err: Error | null, ms: number) => void;

export class ClientStreamCall implements ClientStreamHandler {
  private readonly connection: Http2ClientConnection;
  private readonly stream: ClientStream;
  private done = false;
  private headersSeen = false;

  constructor(
    readonly socket: Socket,
    options: ClientStreamOptions,
    private readonly handlers: ClientStreamHandlers,
  ) {
    const window = Math.min(options.receiveWindow ?? h2.DEFAULT_WINDOW_SIZE, h2.MAX_WINDOW_SIZE);
    this.connection = new Http2ClientConnection(socket, options.authority, {
      eager: true,
      streamWindow: window,
      connectionWindow: window,
      maxHeaderListSize: MAX_HEADER_LIST,
      windowUpdateEveryFrame: true,
    });
    const block = encodeHeaderBlock([
      [":method", "POST"],
      [":scheme", options.scheme],
      [":path", options.path],
      [":authority", options.authority],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ...(options.headers ?? []),
    ]);
    this.stream = this.connection.request(block, undefined, this);
  }

  /** Whether the call has ended (status given or closed). */
  get ended(): boolean {
    return this.done;
  }

  write(message: Uint8Array): boolean {
    if (this.done) return false;
    return this.stream.write(message, false);
  }

  /** Hands what was written to the socket now (Http2ClientConnection.flush). */
  flush(): void {
    if (!this.done) this.connection.flush();
  }

  /** Sends a PING; false (and no callback) when the call has ended. */
  ping(cb: PingCallback): boolean {
    if (this.done) return false;
    return this.connection.ping(cb);
  }

  close(): void {
    this.end();
  }

  // ---- ClientStreamHandler ----

  onHeaders(fields: string[], endStream: boolean): void {
    const { http, grpcStatus, grpcMessage } = responseStatus(fields);
    const first = !this.headersSeen;
    this.headersSeen = true;
    if (grpcStatus !== undefined) {
      this.finish(Number(grpcStatus), percentDecode(grpcMessage));
      return;
    }
    if (first && http !== "200") {
      this.finish(Status.UNKNOWN, `HTTP status ${http || "(none)"}`);
      return;
    }
    if (endStream || !first) this.finish(Status.UNAVAILABLE, "the stream ended without a status");
  }

  onData(_buf: Buffer, _from: number, _to: number, endStream: boolean): void {
    if (endStream) this.finish(Status.UNAVAILABLE, "the stream ended without a status");
  }

  onWritable(): void {
    if (!this.done) this.handlers.drain();
  }

  onClose(end: StreamEnd): void {
    const protocol = end.kind === "lost" && end.source === "protocol";
    this.finish(protocol ? Status.INTERNAL : Status.UNAVAILABLE, end.why);
  }

  // ---- ending ----

  private finish(code: number, message: string): void {
    if (this.done) return;
    this.end();
    this.handlers.status({ code, message });
  }

  /** Ends the stream (RST_STREAM CANCEL while open) and the connection; pings fail. */
  private end(): void {
    if (this.done) return;
    this.done = true;
    this.stream.cancel("the call was closed");
    this.connection.close("the call ended");
  }
}
