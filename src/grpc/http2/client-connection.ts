/**
 * The client side of one HTTP/2 connection (RFC 9113) for gRPC, spoken directly over a
 * socket the caller dialled (a `net.Socket`, or a `tls.TLSSocket` that negotiates ALPN
 * "h2"; it may still be connecting), without node:http2's native session: the client
 * transport of KvClient (src/grpc/grpc-client.ts), of the peer link (client-stream.ts)
 * and of the benchmarks' load clients.
 *
 * Contract:
 * - On construction: the preface, SETTINGS (ENABLE_PUSH 0, INITIAL_WINDOW_SIZE
 *   `streamWindow`) and a connection WINDOW_UPDATE up to `connectionWindow`. The
 *   connection is `ready` once the socket is established (TLS: h2 negotiated) and the
 *   server's SETTINGS came. Streams opened before that wait, unless `eager` (then they
 *   go out at once, as the benchmarks' clients do).
 * - `request(block, extra, handler)` opens a stream with the header block `block` (+
 *   `extra`, more fields of the same block): static-table HPACK without a dynamic table
 *   (hpack-encoder.ts), so blocks may be encoded once and reused. Streams past the
 *   server's MAX_CONCURRENT_STREAMS (100 until its SETTINGS say otherwise) wait for a slot.
 * - `ClientStream.writeMessage(m, end)` sends one gRPC message (the 5-byte prefix added
 *   here), `write(bytes, end)` bytes already framed; both as far as the windows (the
 *   server's INITIAL_WINDOW_SIZE and WINDOW_UPDATEs, per stream and for the connection)
 *   and its MAX_FRAME_SIZE allow; the rest waits, in order, and the handler's
 *   `onWritable` runs once all of it went.
 * - Every frame produced in one turn (HEADERS and DATA of every call, ACKs,
 *   WINDOW_UPDATEs) leaves in one socket write on process.nextTick (OutputQueue).
 * - Receiving: the server's SETTINGS are applied and ACKed, its PINGs answered; every
 *   header block is decoded (to keep the HPACK table in step) and handed to its stream's
 *   `onHeaders` (response headers, then trailers); DATA to `onData` as a view of the
 *   socket's chunk, valid only during the call. The connection's receive window is given
 *   back once half of it is consumed; a stream's as its handler calls `consumed(n)` (at
 *   once, unless the stream was opened with `manualWindow`).
 * - A stream's end other than its END_STREAM goes to `onClose` once (StreamEnd):
 *   "reset" (the server's RST_STREAM), "refused" (the call was never sent, or the server
 *   said with GOAWAY that it did not process it: safe to send again), "lost" (sent, then
 *   the connection was lost or broke the protocol), "cancelled" (by `cancel()` or
 *   `close()` on this side).
 * - GOAWAY: streams above its last stream id end "refused", the others may finish; the
 *   connection takes no new stream (`usable` false) and closes once none is left.
 * - `ping(cb)` sends a PING and calls `cb(null, ms)` with its round trip when the ACK
 *   comes, or `cb(err, 0)` when the connection ends first.
 * - `close()` ends the connection (GOAWAY NO_ERROR), its streams "cancelled"; it never
 *   throws. A socket that does not finish closing within a second is destroyed.
 */
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import {
  FrameReader,
  type FrameSink,
  isSettingsError,
  readServerSettings,
} from "./frame-reader.js";
import * as h2 from "./frames.js";
import { FAILED, HpackDecoder } from "./hpack-decoder.js";
import { OutputQueue } from "./output-queue.js";

export interface ClientConnectionOptions {
  /** SETTINGS_INITIAL_WINDOW_SIZE this client grants each stream. Default 16 MiB. */
  readonly streamWindow?: number;
  /** The connection receive window this client grants. Default 1 GiB. */
  readonly connectionWindow?: number;
  /** Send streams before the server's SETTINGS arrived (default false: they wait). */
  readonly eager?: boolean;
  /** The decoded header list accepted in a response. Default 1 MiB. */
  readonly maxHeaderListSize?: number;
  /**
   * Give receive window back with every DATA frame, not once half a window is consumed
   * (for a connection that receives little: the peer link's). Default false.
   */
  readonly windowUpdateEveryFrame?: boolean;
  /**
   * The connection ends ("socket-error") when the server's SETTINGS have not come this
   * long after it was made (a port that accepts and never speaks). Default 20 s.
   */
  readonly handshakeTimeoutMs?: number;
}

export interface ClientConnectionEvents {
  /** The socket is established and the server's SETTINGS came. */
  ready?(): void;
  /** The connection ended (`why`: for people); every stream has been told. */
  closed?(why: string): void;
}

/**
 * What ended a connection (or refused a stream): the socket's error (`why` is its
 * message: ECONNREFUSED, a TLS failure...), the socket closing, a protocol error of the
 * server's (or an HTTP/2 it does not speak: ALPN other than h2, bytes that are no frames),
 * a TLS record where the server's SETTINGS were due (a TLS port spoken to in plaintext),
 * the server's GOAWAY, or this side.
 */
export type EndSource =
  | "socket-error"
  | "socket-closed"
  | "protocol"
  | "tls-port"
  | "goaway"
  | "client";

/** How a stream ended when not by the server's END_STREAM (see the module comment). */
export type StreamEnd =
  | { readonly kind: "reset"; readonly code: number; readonly why: string }
  | {
      readonly kind: "refused" | "lost" | "cancelled";
      readonly why: string;
      readonly source: EndSource;
    };

export interface ClientStreamHandler {
  /** A response header block: `fields` alternate names and values (valid during the call only). */
  onHeaders(fields: string[], endStream: boolean): void;
  /** Response body bytes `buf[from, to)` (valid during the call only). */
  onData(buf: Buffer, from: number, to: number, endStream: boolean): void;
  /** Everything written went out (after a write returned false). */
  onWritable?(): void;
  /** The stream ended otherwise than by the server's END_STREAM (called once, last). */
  onClose(end: StreamEnd): void;
}

const PREFIX_BYTES = 5;
const CLOSE_GRACE_MS = 1000;
type PingCallback = (err: Error | null, ms: number) => void;

/** One stream of a client connection (a call). */
export class ClientStream {
  id = 0;
  /** Send window (may go negative after a SETTINGS change). */
  sendWindow = 0;
  /** Body bytes waiting for send window, in order; the first from `queuedAt`. */
  queued: Uint8Array[] = [];
  queuedAt = 0;
  /** END_STREAM goes with the last queued bytes. */
  endQueued = false;
  /** This side sent END_STREAM (or will, with the queue). */
  localEnded = false;
  /** The stream is over: nothing more is sent or delivered. */
  done = false;
  /** Receive window consumed and not yet given back. */
  unacked = 0;
  wantsWritable = false;

  constructor(
    readonly connection: Http2ClientConnection,
    readonly block: Buffer,
    readonly extra: Buffer | undefined,
    readonly handler: ClientStreamHandler,
    readonly manualWindow: boolean,
  ) {}

  /** True iff the stream's HEADERS have been sent (it is not waiting for readiness or a slot). */
  get sent(): boolean {
    return this.id !== 0;
  }

  /** Sends one gRPC message (prefix added); false when bytes wait for window (see onWritable). */
  writeMessage(message: Uint8Array, endStream: boolean): boolean {
    return this.connection.writeMessage(this, message, endStream);
  }

  /** Sends bytes (already gRPC-framed); false when bytes wait for window (see onWritable). */
  write(data: Uint8Array, endStream: boolean): boolean {
    return this.connection.write(this, data, endStream);
  }

  /** Ends the stream from this side (RST_STREAM `code` once sent); onClose "cancelled". */
  cancel(why = "cancelled by the client", code: number = h2.ErrorCode.CANCEL): void {
    this.connection.cancel(this, why, code);
  }

  /** The handler took `n` body bytes: the server may send them again (manualWindow streams). */
  consumed(n: number): void {
    this.connection.consumed(this, n);
  }
}

export class Http2ClientConnection implements FrameSink {
  private readonly out: OutputQueue;
  private readonly reader: FrameReader;
  private readonly decoder = new HpackDecoder(4096);
  private readonly fields: string[] = [];
  private readonly streams = new Map<number, ClientStream>();
  /** Streams waiting for readiness or a slot, from `waitingHead`. */
  private waiting: ClientStream[] = [];
  private waitingHead = 0;
  /** Streams with bytes waiting for send window, in order. */
  private blocked: ClientStream[] = [];
  private nextId = 1;
  private isReady = false;
  private established: boolean;
  /** GOAWAY received, closing, or stream ids used up: no new streams. */
  private draining = false;
  private closed = false;
  /** Why the connection ended or is ending (for people). */
  failure = "";
  /** What ended it (see EndSource). */
  failureSource: EndSource = "client";
  // Peer settings.
  private maxConcurrent = 100;
  private peerInitialWindow = h2.DEFAULT_WINDOW_SIZE;
  private maxFrame = h2.DEFAULT_MAX_FRAME_SIZE;
  private sendWindow = h2.DEFAULT_WINDOW_SIZE;
  // Receive side.
  private readonly streamWindow: number;
  private readonly connWindow: number;
  private readonly maxHeaderList: number;
  /** Receive window consumed before it is given back (0: every frame's at once). */
  private readonly windowThreshold: number;
  private readonly streamThreshold: number;
  private received = 0;
  private socketBlocked = false;
  private readonly pings = new Map<number, { cb: PingCallback; sentAt: number }>();
  private readonly handshakeTimer: NodeJS.Timeout;
  private nextPing = 1;

  constructor(
    readonly socket: Socket,
    /** The endpoint dialled ("host:port"), for messages. */
    readonly endpoint: string,
    options: ClientConnectionOptions = {},
    private readonly events: ClientConnectionEvents = {},
  ) {
    this.streamWindow = Math.min(options.streamWindow ?? 16 * 1024 * 1024, h2.MAX_WINDOW_SIZE);
    this.connWindow = Math.min(options.connectionWindow ?? 1 << 30, h2.MAX_WINDOW_SIZE);
    this.maxHeaderList = options.maxHeaderListSize ?? 1 << 20;
    const everyFrame = options.windowUpdateEveryFrame === true;
    this.windowThreshold = everyFrame ? 1 : this.connWindow / 2;
    this.streamThreshold = everyFrame ? 1 : this.streamWindow / 2;
    this.established = options.eager === true;
    this.out = new OutputQueue(socket, (blocked) => {
      this.socketBlocked = blocked;
      if (!blocked) this.wakeWritable();
    });
    this.reader = new FrameReader(this);
    socket.on("data", (chunk: Buffer) => {
      if (!this.isReady && isTlsRecord(chunk)) {
        this.fail("the port answered with TLS", "tls-port");
        return;
      }
      this.reader.push(chunk);
    });
    socket.on("drain", () => {
      this.socketBlocked = false;
      this.wakeWritable();
    });
    socket.on("error", (err: Error) => this.fail(err.message, "socket-error"));
    socket.on("close", () => this.fail("the connection closed", "socket-closed"));
    socket.on("secureConnect", () => {
      const alpn = (socket as TLSSocket).alpnProtocol;
      if (alpn !== "h2") this.fail(`TLS negotiated ${alpn || "no"} ALPN, not h2`, "protocol");
    });
    this.out.bytes(h2.CLIENT_PREFACE);
    const settings = Buffer.allocUnsafe(12);
    settings.writeUInt16BE(h2.SETTINGS_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(h2.SETTINGS_INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(this.streamWindow, 8);
    this.out.frame(h2.SETTINGS, 0, 0, settings);
    if (this.connWindow > h2.DEFAULT_WINDOW_SIZE)
      this.windowUpdate(0, this.connWindow - h2.DEFAULT_WINDOW_SIZE);
    const handshakeMs = options.handshakeTimeoutMs ?? 20_000;
    this.handshakeTimer = setTimeout(() => {
      const s = Math.round(handshakeMs / 100) / 10;
      this.fail(`the server did not start HTTP/2 within ${s} s`, "socket-error");
    }, handshakeMs);
    this.handshakeTimer.unref();
  }

  /** The socket is established and the server's SETTINGS came. */
  get ready(): boolean {
    return this.isReady;
  }

  /** Whether new streams may be opened on this connection. */
  get usable(): boolean {
    return !this.closed && !this.draining;
  }

  /** Whether the connection has ended. */
  get ended(): boolean {
    return this.closed;
  }

  /** Open streams (sent, not ended). */
  get openStreams(): number {
    return this.streams.size;
  }

  /**
   * Opens a stream with the header block `block` (+ `extra`, when given). On a connection
   * that is not usable, the handler's onClose ("refused") runs before this returns.
   */
  request(
    block: Buffer,
    extra: Buffer | undefined,
    handler: ClientStreamHandler,
    manualWindow = false,
  ): ClientStream {
    const stream = new ClientStream(this, block, extra, handler, manualWindow);
    if (!this.usable) {
      stream.done = true;
      handler.onClose({
        kind: "refused",
        why: this.failure || "the connection is closing",
        source: this.failureSource,
      });
      return stream;
    }
    if (!this.established || this.streams.size >= this.maxConcurrent) this.waiting.push(stream);
    else this.open(stream);
    return stream;
  }

  /** Sends a PING; false (and no callback) when the connection has ended. */
  ping(cb: PingCallback): boolean {
    if (this.closed) return false;
    const n = this.nextPing++ >>> 0;
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(n, 4);
    this.pings.set(n, { cb, sentAt: performance.now() });
    this.out.frame(h2.PING, 0, 0, payload);
    return true;
  }

  /**
   * Hands what is queued to the socket now instead of at the end of this turn (the queue's
   * own flush, output-queue.ts): for a caller that goes on to work that would hold it.
   */
  flush(): void {
    this.out.flush();
  }

  /** Ends the connection: GOAWAY NO_ERROR, every stream "cancelled". Never throws. */
  close(why = "the client closed the connection"): void {
    if (this.closed) return;
    const p = Buffer.alloc(8);
    p.writeUInt32BE(h2.ErrorCode.NO_ERROR, 4);
    this.end(why, "client", "cancelled", p);
  }

  // ---- for ClientStream ----

  writeMessage(stream: ClientStream, message: Uint8Array, endStream: boolean): boolean {
    const length = PREFIX_BYTES + message.length;
    if (
      stream.sent &&
      stream.queued.length === 0 &&
      length <= this.maxFrame &&
      length <= this.sendWindow &&
      length <= stream.sendWindow &&
      !stream.done &&
      !stream.localEnded
    ) {
      const prefix = Buffer.allocUnsafe(PREFIX_BYTES);
      prefix[0] = 0;
      prefix.writeUInt32BE(message.length, 1);
      this.out.frame2(h2.DATA, endStream ? h2.FLAG_END_STREAM : 0, stream.id, prefix, message);
      this.sendWindow -= length;
      stream.sendWindow -= length;
      if (endStream) stream.localEnded = true;
      return !this.socketBlocked;
    }
    const framed = Buffer.allocUnsafe(length);
    framed[0] = 0;
    framed.writeUInt32BE(message.length, 1);
    framed.set(message, PREFIX_BYTES);
    return this.write(stream, framed, endStream);
  }

  write(stream: ClientStream, data: Uint8Array, endStream: boolean): boolean {
    if (stream.done || stream.localEnded) return false;
    if (data.length > 0) stream.queued.push(data);
    if (endStream) {
      stream.endQueued = true;
      stream.localEnded = true;
    }
    if (!stream.sent) {
      stream.wantsWritable = true;
      return false;
    }
    if (!this.pump(stream)) {
      if (!this.blocked.includes(stream)) this.blocked.push(stream);
      stream.wantsWritable = true;
      return false;
    }
    if (this.socketBlocked) {
      stream.wantsWritable = true;
      return false;
    }
    return true;
  }

  cancel(stream: ClientStream, why: string, code: number): void {
    if (stream.done) return;
    if (stream.sent) {
      this.rstStream(stream.id, code);
      this.forget(stream);
    } else {
      stream.done = true;
      this.unwait(stream);
    }
    stream.done = true;
    stream.handler.onClose({ kind: "cancelled", why, source: "client" });
  }

  consumed(stream: ClientStream, n: number): void {
    if (stream.done || n <= 0) return;
    stream.unacked += n;
    if (stream.unacked >= this.streamThreshold) {
      this.windowUpdate(stream.id, stream.unacked);
      stream.unacked = 0;
    }
  }

  // ---- sending ----

  private open(stream: ClientStream): void {
    const id = this.nextId;
    this.nextId += 2;
    if (this.nextId > h2.MAX_STREAM_ID) this.draining = true;
    stream.id = id;
    stream.sendWindow = this.peerInitialWindow;
    this.streams.set(id, stream);
    const block = stream.block;
    const extra = stream.extra;
    const length = block.length + (extra === undefined ? 0 : extra.length);
    const endHeaders = h2.FLAG_END_HEADERS;
    if (length <= this.maxFrame) {
      if (extra === undefined) this.out.frame(h2.HEADERS, endHeaders, id, block);
      else this.out.frame2(h2.HEADERS, endHeaders, id, block, extra);
    } else {
      const whole = extra === undefined ? block : Buffer.concat([block, extra]);
      for (let from = 0; from < whole.length; from += this.maxFrame) {
        const to = Math.min(whole.length, from + this.maxFrame);
        this.out.frame(
          from === 0 ? h2.HEADERS : h2.CONTINUATION,
          to === whole.length ? endHeaders : 0,
          id,
          whole.subarray(from, to),
        );
      }
    }
    if (stream.queued.length > 0 || stream.endQueued) {
      if (!this.pump(stream)) this.blocked.push(stream);
      else if (stream.wantsWritable) this.notifyWritable(stream);
    }
  }

  /** Sends what the windows allow of `stream`'s queue; true when it is empty. */
  private pump(stream: ClientStream): boolean {
    while (stream.queued.length > 0) {
      const data = stream.queued[0]!;
      const left = data.length - stream.queuedAt;
      const n = Math.min(left, this.maxFrame, this.sendWindow, stream.sendWindow);
      if (n <= 0) return false;
      const last = n === left && stream.queued.length === 1 && stream.endQueued;
      this.out.frame(
        h2.DATA,
        last ? h2.FLAG_END_STREAM : 0,
        stream.id,
        data.subarray(stream.queuedAt, stream.queuedAt + n),
      );
      this.sendWindow -= n;
      stream.sendWindow -= n;
      stream.queuedAt += n;
      if (stream.queuedAt === data.length) {
        stream.queued.shift();
        stream.queuedAt = 0;
        if (last) stream.endQueued = false;
      }
    }
    if (stream.endQueued) {
      // END_STREAM with no bytes left to carry it.
      this.out.frame(h2.DATA, h2.FLAG_END_STREAM, stream.id);
      stream.endQueued = false;
    }
    return true;
  }

  /** Sends what the windows allow of the streams that wait, in order. */
  private pumpBlocked(): void {
    if (this.blocked.length === 0) return;
    const still: ClientStream[] = [];
    for (const s of this.blocked) {
      if (s.done) continue;
      if (this.sendWindow <= 0 || !this.pump(s)) still.push(s);
      else this.notifyWritable(s);
    }
    this.blocked = still;
  }

  private notifyWritable(stream: ClientStream): void {
    if (!stream.wantsWritable || this.socketBlocked || stream.queued.length > 0) return;
    stream.wantsWritable = false;
    stream.handler.onWritable?.();
  }

  private wakeWritable(): void {
    for (const s of this.streams.values()) if (s.wantsWritable) this.notifyWritable(s);
  }

  private windowUpdate(id: number, increment: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(increment, 0);
    this.out.frame(h2.WINDOW_UPDATE, 0, id, p);
  }

  private rstStream(id: number, code: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(code, 0);
    this.out.frame(h2.RST_STREAM, 0, id, p);
  }

  // ---- receiving (FrameSink) ----

  frame(buf: Buffer, from: number, to: number, type: number, flags: number, id: number): void {
    if (this.closed) return;
    switch (type) {
      case h2.DATA:
        this.data(buf, from, to, flags, id);
        return;
      case h2.SETTINGS:
        this.settings(buf, from, to, flags);
        return;
      case h2.PING:
        this.onPing(buf, from, to, flags);
        return;
      case h2.WINDOW_UPDATE: {
        if (to - from !== 4) {
          this.protocolError("WINDOW_UPDATE of the wrong size");
          return;
        }
        const increment = buf.readUInt32BE(from) & h2.MAX_WINDOW_SIZE;
        if (id === 0) {
          this.sendWindow += increment;
          if (this.sendWindow > h2.MAX_WINDOW_SIZE) {
            this.connectionError(h2.ErrorCode.FLOW_CONTROL_ERROR, "a send window past 2^31-1");
            return;
          }
        } else {
          const stream = this.streams.get(id);
          if (stream === undefined) return;
          stream.sendWindow += increment;
        }
        this.pumpBlocked();
        return;
      }
      case h2.RST_STREAM: {
        if (to - from !== 4) {
          this.protocolError("RST_STREAM of the wrong size");
          return;
        }
        const stream = this.streams.get(id);
        if (stream === undefined) return;
        const code = buf.readUInt32BE(from);
        this.forget(stream);
        stream.done = true;
        stream.handler.onClose({
          kind: "reset",
          code,
          why: `stream reset by the server (${h2.errorCodeName(code)})`,
        });
        return;
      }
      case h2.GOAWAY: {
        if (to - from < 8) {
          this.protocolError("short GOAWAY");
          return;
        }
        const last = buf.readUInt32BE(from) & h2.MAX_STREAM_ID;
        const code = h2.errorCodeName(buf.readUInt32BE(from + 4));
        const debug = buf.toString("latin1", from + 8, to);
        this.goaway(last, `GOAWAY from ${this.endpoint} (${code}${debug ? `: ${debug}` : ""})`);
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
    if (this.closed) return;
    const fields = this.fields;
    fields.length = 0;
    // Every block is decoded, whoever it is for, to keep the HPACK table in step.
    if (this.decoder.decode(block, from, to, fields, this.maxHeaderList) === FAILED) {
      this.connectionError(
        h2.ErrorCode.COMPRESSION_ERROR,
        "a header block that is not valid HPACK",
      );
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) return;
    if (endStream) {
      stream.done = true;
      this.forget(stream);
    }
    stream.handler.onHeaders(fields, endStream);
  }

  protocolError(what: string, code: number = h2.ErrorCode.PROTOCOL_ERROR): void {
    this.connectionError(code, what);
  }

  private data(buf: Buffer, from: number, to: number, flags: number, id: number): void {
    if (id === 0) {
      this.protocolError("DATA on stream 0");
      return;
    }
    // The whole payload (padding too) counts against the windows.
    const length = to - from;
    this.received += length;
    if (this.received >= this.windowThreshold) {
      this.windowUpdate(0, this.received);
      this.received = 0;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) return; // a stream this side ended
    let start = from;
    let end = to;
    if ((flags & h2.FLAG_PADDED) !== 0) {
      end -= buf[start]!;
      start++;
      if (start > end) {
        this.protocolError("DATA padding exceeds the frame");
        return;
      }
    }
    const endStream = (flags & h2.FLAG_END_STREAM) !== 0;
    if (endStream) {
      stream.done = true;
      this.forget(stream);
    } else if (!stream.manualWindow) this.consumed(stream, length);
    else this.consumed(stream, length - (end - start));
    stream.handler.onData(buf, start, end, endStream);
  }

  private settings(buf: Buffer, from: number, to: number, flags: number): void {
    if ((flags & h2.FLAG_ACK) !== 0) return;
    const settings = readServerSettings(buf, from, to);
    if (isSettingsError(settings)) {
      this.connectionError(settings.code, settings.what);
      return;
    }
    if (settings.initialWindow !== undefined) {
      const delta = settings.initialWindow - this.peerInitialWindow;
      this.peerInitialWindow = settings.initialWindow;
      for (const s of this.streams.values()) s.sendWindow += delta;
    }
    if (settings.maxFrame !== undefined) this.maxFrame = settings.maxFrame;
    if (settings.maxConcurrent !== undefined) this.maxConcurrent = settings.maxConcurrent;
    this.out.frame(h2.SETTINGS, h2.FLAG_ACK, 0);
    if (!this.isReady) {
      this.isReady = true;
      this.established = true;
      clearTimeout(this.handshakeTimer);
      this.events.ready?.();
    }
    this.startWaiting();
    this.pumpBlocked();
  }

  private onPing(buf: Buffer, from: number, to: number, flags: number): void {
    if (to - from !== 8) {
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
  }

  private goaway(lastStreamId: number, why: string): void {
    this.draining = true;
    if (this.failure === "") {
      this.failure = why;
      this.failureSource = "goaway";
    }
    for (const stream of [...this.streams.values()]) {
      if (stream.id > lastStreamId) {
        this.forget(stream);
        stream.done = true;
        stream.handler.onClose({ kind: "refused", why, source: "goaway" });
      }
    }
    this.refuseWaiting(why, "goaway");
    if (this.streams.size === 0) this.close(why);
  }

  // ---- streams ending ----

  /** The stream is done on this side: forget it, start a stream that waited for its slot. */
  private forget(stream: ClientStream): void {
    if (this.streams.get(stream.id) === stream) this.streams.delete(stream.id);
    if (this.waitingHead < this.waiting.length) this.startWaiting();
    else if (this.draining && this.streams.size === 0 && !this.closed)
      queueMicrotask(() => {
        if (this.streams.size === 0) this.close(this.failure);
      });
  }

  private unwait(stream: ClientStream): void {
    const i = this.waiting.indexOf(stream, this.waitingHead);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  private startWaiting(): void {
    if (!this.established) return;
    while (this.waitingHead < this.waiting.length && this.streams.size < this.maxConcurrent) {
      const stream = this.waiting[this.waitingHead]!;
      this.waiting[this.waitingHead++] = undefined as unknown as ClientStream;
      if (!stream.done) this.open(stream);
    }
    if (this.waitingHead === this.waiting.length && this.waitingHead > 0) {
      this.waiting = [];
      this.waitingHead = 0;
    }
  }

  private refuseWaiting(why: string, source: EndSource): void {
    const waiting = this.waiting.slice(this.waitingHead);
    this.waiting = [];
    this.waitingHead = 0;
    for (const s of waiting) {
      if (s.done) continue;
      s.done = true;
      s.handler.onClose({ kind: "refused", why, source });
    }
  }

  /** A connection error: GOAWAY with `code`, then every stream is lost. */
  private connectionError(code: number, what: string): void {
    if (this.closed) return;
    const p = Buffer.alloc(8);
    p.writeUInt32BE(code, 4);
    this.end(`HTTP/2 ${h2.errorCodeName(code)} from the server: ${what}`, "protocol", "lost", p);
  }

  /** The socket failed or closed, or TLS did not negotiate h2. */
  private fail(why: string, source: EndSource): void {
    if (this.closed) return;
    this.end(why, source, "lost", undefined);
  }

  /**
   * Ends the connection: GOAWAY with `goaway` as its payload when given (and the socket
   * can take it), then the socket's end; streams sent end as `sentKind`, the others
   * "refused".
   */
  private end(
    why: string,
    source: EndSource,
    sentKind: "lost" | "cancelled",
    goaway: Buffer | undefined,
  ): void {
    this.closed = true;
    this.draining = true;
    if (this.failure === "") {
      this.failure = why;
      this.failureSource = source;
    }
    this.reader.stop();
    clearTimeout(this.handshakeTimer);
    const socket = this.socket;
    try {
      if (socket.destroyed || socket.connecting || goaway === undefined) {
        this.out.close();
        socket.destroy();
      } else {
        this.out.frame(h2.GOAWAY, 0, 0, goaway);
        this.out.flush();
        this.out.close();
        socket.end();
        // The connection is over for this side: it keeps no process alive.
        socket.unref();
        setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
      }
    } catch {
      socket.destroy();
    }
    const reason = this.failure;
    const from = this.failureSource;
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.blocked = [];
    for (const s of streams) {
      if (s.done) continue;
      s.done = true;
      s.handler.onClose({ kind: sentKind, why: reason, source: from });
    }
    this.refuseWaiting(reason, from);
    const pings = [...this.pings.values()];
    this.pings.clear();
    for (const p of pings) p.cb(new Error(`the connection ended: ${reason}`), 0);
    this.events.closed?.(reason);
  }
}

/**
 * Whether `chunk` starts like a TLS record (content type 20-23, version 3.x) where an
 * HTTP/2 server's first frame was due (a frame that long would be over any frame size).
 */
function isTlsRecord(chunk: Buffer): boolean {
  return chunk.length >= 2 && chunk[0]! >= 0x14 && chunk[0]! <= 0x17 && chunk[1] === 0x03;
}
