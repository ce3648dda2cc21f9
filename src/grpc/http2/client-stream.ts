/**
 * ClientStreamCall: an HTTP/2 client connection (RFC 9113) that carries ONE long-lived
 * client-streaming gRPC call, spoken directly over a socket the caller provides (a
 * `net.Socket`, or a `tls.TLSSocket` that negotiates ALPN "h2"; it may still be
 * connecting). Written for the peer link: each flush of its messages leaves as DATA
 * frames in one socket write, without node:http2's native session in between.
 *
 * Contract:
 * - On construction: the preface, SETTINGS (ENABLE_PUSH 0, INITIAL_WINDOW_SIZE the
 *   receive window) and the request HEADERS of stream 1 (`:method POST`, `:scheme`,
 *   `:path`, `:authority`, `content-type: application/grpc`, `te: trailers`, any extra
 *   headers), without END_STREAM.
 * - `write(message)` takes bytes that are ALREADY gRPC-framed (the 5-byte prefix
 *   included) and must not change afterwards; they leave as DATA on stream 1, split at the
 *   server's MAX_FRAME_SIZE, as far as the send windows (the server's INITIAL_WINDOW_SIZE
 *   and WINDOW_UPDATEs, for the stream and the connection) allow; the rest waits, in
 *   order. It returns false when bytes wait or the socket's buffer is full; `drain` is
 *   then called once everything went and the socket takes more. After the call ended,
 *   writes are dropped (and return false).
 * - Every frame produced in one turn (DATA, ACKs, WINDOW_UPDATEs, PINGs) leaves in one
 *   socket write on process.nextTick (OutputQueue).
 * - The server's SETTINGS are acknowledged (INITIAL_WINDOW_SIZE and MAX_FRAME_SIZE
 *   applied), its PINGs answered, the receive window of any DATA returned at once (the
 *   response messages themselves are discarded); every header block is decoded, to keep
 *   the HPACK table in step.
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
import type { TLSSocket } from "node:tls";
import { Status } from "../status.js";
import {
  FrameReader,
  type FrameSink,
  isSettingsError,
  readServerSettings,
} from "./frame-reader.js";
import * as h2 from "./frames.js";
import { FAILED, HpackDecoder } from "./hpack-decoder.js";
import { encodeHeaderBlock } from "./hpack-encoder.js";
import { OutputQueue } from "./output-queue.js";

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

const STREAM_ID = 1;
const MAX_HEADER_LIST = 64 * 1024;
const CLOSE_GRACE_MS = 1000;

type PingCallback = (err: Error | null, ms: number) => void;

export class ClientStreamCall implements FrameSink {
  private readonly out: OutputQueue;
  private readonly reader: FrameReader;
  private readonly decoder = new HpackDecoder(4096);
  private readonly fields: string[] = [];
  private done = false;
  /** The server ended or reset stream 1: no RST_STREAM of ours is due. */
  private streamClosed = false;
  private headersSeen = false;
  // Send side.
  private maxFrame = h2.DEFAULT_MAX_FRAME_SIZE;
  private peerInitialWindow = h2.DEFAULT_WINDOW_SIZE;
  private connWindow = h2.DEFAULT_WINDOW_SIZE;
  private streamWindow = h2.DEFAULT_WINDOW_SIZE;
  /** Messages waiting for send window, in order; the first one from `queuedAt`. */
  private queued: Uint8Array[] = [];
  private queuedAt = 0;
  private socketBlocked = false;
  private needDrain = false;
  // Pings of ours awaiting their ACK, by the number in their payload.
  private readonly pings = new Map<number, { cb: PingCallback; sentAt: number }>();
  private nextPing = 1;

  constructor(
    private readonly socket: Socket,
    options: ClientStreamOptions,
    private readonly handlers: ClientStreamHandlers,
  ) {
    this.out = new OutputQueue(socket, (blocked) => {
      this.socketBlocked = blocked;
      if (!blocked) this.maybeDrain();
    });
    this.reader = new FrameReader(this);
    socket.on("data", (chunk: Buffer) => this.reader.push(chunk));
    socket.on("drain", () => {
      this.socketBlocked = false;
      this.maybeDrain();
    });
    socket.on("error", (err: Error) => this.finish(Status.UNAVAILABLE, err.message));
    socket.on("close", () => this.finish(Status.UNAVAILABLE, "the connection closed"));
    socket.on("secureConnect", () => {
      const alpn = (socket as TLSSocket).alpnProtocol;
      if (alpn !== "h2")
        this.finish(Status.UNAVAILABLE, `TLS negotiated ${alpn || "no"} ALPN, not h2`);
    });
    const receiveWindow = Math.min(
      options.receiveWindow ?? h2.DEFAULT_WINDOW_SIZE,
      h2.MAX_WINDOW_SIZE,
    );
    this.out.bytes(h2.CLIENT_PREFACE);
    const settings = Buffer.allocUnsafe(12);
    settings.writeUInt16BE(h2.SETTINGS_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(h2.SETTINGS_INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(receiveWindow, 8);
    this.out.frame(h2.SETTINGS, 0, 0, settings);
    if (receiveWindow > h2.DEFAULT_WINDOW_SIZE)
      this.windowUpdate(0, receiveWindow - h2.DEFAULT_WINDOW_SIZE);
    const block = encodeHeaderBlock([
      [":method", "POST"],
      [":scheme", options.scheme],
      [":path", options.path],
      [":authority", options.authority],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ...(options.headers ?? []),
    ]);
    // The request block is small: one HEADERS frame within the least MAX_FRAME_SIZE.
    this.out.frame(h2.HEADERS, h2.FLAG_END_HEADERS, STREAM_ID, block);
  }

  /** Whether the call has ended (status given or closed). */
  get ended(): boolean {
    return this.done;
  }

  write(message: Uint8Array): boolean {
    if (this.done) return false;
    if (this.queued.length === 0 && this.fits(message.length)) {
      this.out.frame(h2.DATA, 0, STREAM_ID, message);
      this.connWindow -= message.length;
      this.streamWindow -= message.length;
    } else {
      this.queued.push(message);
      this.pump();
    }
    if (this.queued.length === 0 && !this.socketBlocked) return true;
    this.needDrain = true;
    return false;
  }

  /** Sends a PING; false (and no callback) when the call has ended. */
  ping(cb: PingCallback): boolean {
    if (this.done) return false;
    const n = this.nextPing++ >>> 0;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(n, 4);
    this.pings.set(n, { cb, sentAt: performance.now() });
    this.out.frame(h2.PING, 0, 0, payload);
    return true;
  }

  close(): void {
    this.end();
  }

  // ---- sending ----

  private fits(n: number): boolean {
    return n <= this.maxFrame && n <= this.connWindow && n <= this.streamWindow;
  }

  /** Sends what the windows allow of the queued messages. */
  private pump(): void {
    while (this.queued.length > 0) {
      const m = this.queued[0]!;
      const n = Math.min(
        m.length - this.queuedAt,
        this.maxFrame,
        this.connWindow,
        this.streamWindow,
      );
      if (n <= 0) return;
      this.out.frame(h2.DATA, 0, STREAM_ID, m.subarray(this.queuedAt, this.queuedAt + n));
      this.connWindow -= n;
      this.streamWindow -= n;
      this.queuedAt += n;
      if (this.queuedAt === m.length) {
        this.queued.shift();
        this.queuedAt = 0;
      }
    }
  }

  private maybeDrain(): void {
    if (!this.needDrain || this.done || this.queued.length > 0 || this.socketBlocked) return;
    this.needDrain = false;
    this.handlers.drain();
  }

  private windowUpdate(id: number, increment: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(increment, 0);
    this.out.frame(h2.WINDOW_UPDATE, 0, id, p);
  }

  // ---- receiving (FrameSink) ----

  frame(buf: Buffer, from: number, to: number, type: number, flags: number, id: number): void {
    if (this.done) return;
    const length = to - from;
    switch (type) {
      case h2.DATA:
        if (id === 0) {
          this.protocolError("DATA on stream 0");
          return;
        }
        if (length > 0) {
          this.windowUpdate(0, length);
          if (id === STREAM_ID && (flags & h2.FLAG_END_STREAM) === 0) this.windowUpdate(id, length);
        }
        if (id === STREAM_ID && (flags & h2.FLAG_END_STREAM) !== 0) {
          this.streamClosed = true;
          this.finish(Status.UNAVAILABLE, "the stream ended without a status");
        }
        return;
      case h2.SETTINGS: {
        if ((flags & h2.FLAG_ACK) !== 0) return;
        const settings = readServerSettings(buf, from, to);
        if (isSettingsError(settings)) {
          this.connectionError(settings.code, settings.what);
          return;
        }
        if (settings.initialWindow !== undefined) {
          this.streamWindow += settings.initialWindow - this.peerInitialWindow;
          this.peerInitialWindow = settings.initialWindow;
        }
        if (settings.maxFrame !== undefined) this.maxFrame = settings.maxFrame;
        this.out.frame(h2.SETTINGS, h2.FLAG_ACK, 0);
        this.afterWindow();
        return;
      }
      case h2.PING: {
        if (length !== 8) {
          this.protocolError("PING of the wrong size");
          return;
        }
        if ((flags & h2.FLAG_ACK) === 0) {
          this.out.frame(h2.PING, h2.FLAG_ACK, 0, buf.subarray(from, to));
          return;
        }
        const n = buf.readUInt32BE(from + 4);
        const ping = this.pings.get(n);
        if (ping === undefined) return;
        this.pings.delete(n);
        ping.cb(null, performance.now() - ping.sentAt);
        return;
      }
      case h2.WINDOW_UPDATE: {
        if (length !== 4) {
          this.protocolError("WINDOW_UPDATE of the wrong size");
          return;
        }
        const increment = buf.readUInt32BE(from) & 0x7fff_ffff;
        if (id === 0) this.connWindow += increment;
        else if (id === STREAM_ID) this.streamWindow += increment;
        else return;
        if (this.connWindow > h2.MAX_WINDOW_SIZE || this.streamWindow > h2.MAX_WINDOW_SIZE) {
          this.connectionError(h2.ErrorCode.FLOW_CONTROL_ERROR, "a send window past 2^31-1");
          return;
        }
        this.afterWindow();
        return;
      }
      case h2.RST_STREAM:
        if (length !== 4) {
          this.protocolError("RST_STREAM of the wrong size");
          return;
        }
        if (id !== STREAM_ID) return;
        this.streamClosed = true;
        this.finish(
          Status.UNAVAILABLE,
          `the stream was reset by the peer (${h2.errorCodeName(buf.readUInt32BE(from))})`,
        );
        return;
      case h2.GOAWAY: {
        if (length < 8) {
          this.protocolError("short GOAWAY");
          return;
        }
        const code = h2.errorCodeName(buf.readUInt32BE(from + 4));
        const debug = buf.toString("latin1", from + 8, to);
        this.finish(
          Status.UNAVAILABLE,
          `the peer sent GOAWAY (${code}${debug ? `: ${debug}` : ""})`,
        );
        return;
      }
      case h2.PUSH_PROMISE:
        this.protocolError("PUSH_PROMISE, though push is disabled");
        return;
      default:
        return; // PRIORITY and unknown types are ignored
    }
  }

  headerBlock(id: number, block: Buffer, from: number, to: number, endStream: boolean): void {
    if (this.done) return;
    const fields = this.fields;
    fields.length = 0;
    if (this.decoder.decode(block, from, to, fields, MAX_HEADER_LIST) === FAILED) {
      this.connectionError(
        h2.ErrorCode.COMPRESSION_ERROR,
        "a header block that is not valid HPACK",
      );
      return;
    }
    if (id !== STREAM_ID) return;
    if (endStream) this.streamClosed = true;
    let http = "";
    let grpcStatus: string | undefined;
    let grpcMessage = "";
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const name = fields[i]!;
      if (name === ":status") http = fields[i + 1]!;
      else if (name === "grpc-status") grpcStatus = fields[i + 1]!;
      else if (name === "grpc-message") grpcMessage = fields[i + 1]!;
    }
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

  protocolError(what: string, code: number = h2.ErrorCode.PROTOCOL_ERROR): void {
    this.connectionError(code, what);
  }

  private afterWindow(): void {
    if (this.queued.length > 0) this.pump();
    this.maybeDrain();
  }

  // ---- ending ----

  /** A connection error of the server's: GOAWAY with `code`, then the call ends. */
  private connectionError(code: number, what: string): void {
    if (this.done) return;
    const p = Buffer.alloc(8);
    p.writeUInt32BE(code, 4);
    this.out.frame(h2.GOAWAY, 0, 0, p);
    this.streamClosed = true;
    this.finish(Status.INTERNAL, `HTTP/2 ${h2.errorCodeName(code)} from the peer: ${what}`);
  }

  private finish(code: number, message: string): void {
    if (this.done) return;
    this.end();
    this.handlers.status({ code, message });
  }

  /** Ends the stream and the connection; outstanding pings fail. */
  private end(): void {
    if (this.done) return;
    this.done = true;
    this.reader.stop();
    this.queued = [];
    const socket = this.socket;
    try {
      if (socket.destroyed || socket.connecting) {
        this.out.close();
        socket.destroy();
      } else {
        if (!this.streamClosed) {
          const p = Buffer.alloc(4);
          p.writeUInt32BE(h2.ErrorCode.CANCEL, 0);
          this.out.frame(h2.RST_STREAM, 0, STREAM_ID, p);
        }
        this.out.flush();
        this.out.close();
        socket.end();
        setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
      }
    } catch {
      socket.destroy();
    }
    const pings = [...this.pings.values()];
    this.pings.clear();
    for (const p of pings) p.cb(new Error("the call ended"), 0);
  }
}

function percentDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
