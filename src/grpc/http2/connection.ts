/**
 * The server side of one HTTP/2 connection (RFC 9113) over a socket that has already
 * negotiated h2 (plaintext, or TLS with ALPN): the preface, the frames as they arrive and
 * where each goes, and the table of open streams. It knows nothing of gRPC: each
 * request's header block, once complete and well-formed, goes to `handler.onStream`,
 * which takes the stream from there (see stream.ts). Its parts, one concept each:
 * - connection-options.ts: the limits below, their defaults, the handler interface;
 * - header-block-assembler.ts: HEADERS + CONTINUATION put together and HPACK-decoded;
 * - stream-starts.ts: when a new stream goes to the handler (this connection's limit, the
 *   server-wide admission.ts), and the rapid-reset limit;
 * - peer-settings.ts: SETTINGS both ways;
 * - abuse-limits.ts: PING, SETTINGS and do-nothing frame limits;
 * - keepalive.ts: the handshake timeout, then keepalive PINGs;
 * - flow-control.ts: the windows both ways, and the streams' back-pressure;
 * - frame-writer.ts: the frames this side sends (DATA aside);
 * - graceful-shutdown.ts: GOAWAY, PING, GOAWAY, then close when idle.
 *
 * What the client may not do (each ends the connection with GOAWAY and the code named,
 * after which the socket is closed):
 * - break the protocol (PROTOCOL_ERROR, FRAME_SIZE_ERROR, FLOW_CONTROL_ERROR,
 *   COMPRESSION_ERROR), e.g. exceed a window, send frames over 16 KiB, or reuse a stream id;
 * - send a header block (HEADERS + CONTINUATION) over `maxHeaderBlockBytes` compressed
 *   (ENHANCE_YOUR_CALM); a block whose decoded size exceeds `maxHeaderListSize` only
 *   refuses that request (the handler is told the block was oversized);
 * - send more than `maxPingStrikes` PINGs, or SETTINGS frames, that each come within
 *   `minPingIntervalMs` of the previous one with no HEADERS or DATA in between (either
 *   way: DATA the server sends counts too)
 *   (ENHANCE_YOUR_CALM "too_many_pings");
 * - send more than `maxInvalidFrames` frames that do nothing (empty DATA without
 *   END_STREAM, empty CONTINUATION, PRIORITY, unknown types) (ENHANCE_YOUR_CALM); frames
 *   on streams this side already closed are normal races and are ignored;
 * - open streams while the layer above is still busy with `maxConcurrentStreams` of its
 *   streams (reset streams whose work has not settled count: rapid reset, CVE-2023-44487):
 *   such streams wait without being started, and once 4 x `maxConcurrentStreams` have
 *   waited so during one busy spell (reset ones included) the connection is closed
 *   (ENHANCE_YOUR_CALM);
 * - leave its output unread while it keeps asking for replies (PING, SETTINGS ACKs): once
 *   `maxOutputBytes` wait in the socket's buffer the connection is closed.
 * Open streams beyond `maxConcurrentStreams` (advertised in SETTINGS) are refused with
 * REFUSED_STREAM. Streams also wait, without counting as above, while the server as a
 * whole is busy (admission.ts: the connections share `Admission`, and take turns); a
 * stream reset while it waits is dropped at once. A client that has not sent its preface
 * and SETTINGS within `handshakeTimeoutMs` is disconnected; one silent for
 * `keepaliveTimeMs` is sent a PING and disconnected if it does not answer within
 * `keepaliveTimeoutMs`.
 *
 * Shutdown: `shutdown()` (graceful-shutdown.ts) serves the requests already on the wire
 * and the streams in progress, then closes the socket. `destroy()` resets every stream and
 * closes at once.
 */
import type { Socket } from "node:net";
import { AbuseLimits } from "./abuse-limits.js";
import { Admission } from "./admission.js";
import type {
  ConnectionError,
  Http2ConnectionOptions,
  Http2Handler,
} from "./connection-options.js";
import { ReceiveWindow, SendFlow } from "./flow-control.js";
import { FrameWriter } from "./frame-writer.js";
import * as frames from "./frames.js";
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  ErrorCode,
  FRAME_HEADER_BYTES,
  MAX_STREAM_ID,
  MAX_WINDOW_SIZE,
} from "./frames.js";
import { GracefulShutdown, SHUTDOWN_PING } from "./graceful-shutdown.js";
import {
  type HeaderBlock,
  HeaderBlockAssembler,
  isConnectionError,
} from "./header-block-assembler.js";
import { KEEPALIVE_PING, Keepalive } from "./keepalive.js";
import { OutputQueue } from "./output-queue.js";
import { PeerSettings, serverSettingsPayload } from "./peer-settings.js";
import { parseRequestHead, type RequestHead } from "./request-head.js";
import { Http2Stream, type StreamHost } from "./stream.js";
import { StreamStarts } from "./stream-starts.js";

enum Phase {
  Preface,
  Settings,
  Open,
}

export class Http2ServerConnection implements StreamHost {
  private phase = Phase.Preface;
  private readonly out: OutputQueue;
  private readonly write: FrameWriter;
  private readonly streams = new Map<number, Http2Stream>();
  /** Highest client stream id seen (streams below it that are not in `streams` are closed). */
  lastStreamId = 0;
  private pending: Buffer | undefined;
  private readonly blocks: HeaderBlockAssembler;
  private readonly peer = new PeerSettings();
  private readonly limits: AbuseLimits;
  private readonly keepalive: Keepalive;
  private readonly flow: SendFlow;
  private readonly receive: ReceiveWindow;
  private readonly starts: StreamStarts;
  private readonly goAway: GracefulShutdown;
  closing = false;
  closed = false;
  /** Why the connection was closed by this side, for logs and tests. */
  closeReason: string | undefined;

  constructor(
    readonly socket: Socket,
    readonly options: Http2ConnectionOptions,
    handler: Http2Handler,
    /** Shared by the server's connections (a connection of its own when not given). */
    admission: Admission = new Admission(Infinity, 0),
  ) {
    this.blocks = new HeaderBlockAssembler(
      options.maxHeaderBlockBytes,
      options.maxHeaderListSize,
      () => this.invalid(),
    );
    this.out = new OutputQueue(socket, (blocked) => this.flow.flushed(blocked));
    this.write = new FrameWriter(this.out, this.peer);
    this.limits = new AbuseLimits(options);
    this.flow = new SendFlow(socket, this.out, this.peer);
    this.receive = new ReceiveWindow(options.connectionWindowBytes);
    this.starts = new StreamStarts(
      options.maxConcurrentStreams,
      admission,
      handler,
      () => this.closing,
    );
    this.goAway = new GracefulShutdown({
      lastStreamId: () => this.lastStreamId,
      closed: () => this.closed,
      closing: () => this.closing,
      active: () => this.streams.size > 0 || this.starts.busy > 0,
      sendGoAway: (lastId, code) => this.write.goAway(lastId, code),
      sendPing: (payload) => this.write.ping(payload),
      close: () => this.closeWhenWritten(),
    });
    this.keepalive = new Keepalive(options, {
      destroy: (reason) => this.destroy(reason),
      sendPing: () => this.write.ping(KEEPALIVE_PING),
    });
    this.onClose = () => handler.onClose();
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onSocketData(chunk));
    socket.on("drain", () => this.flow.drained());
    socket.on("error", () => {});
    socket.on("close", () => this.onSocketClose());
    this.write.settings(serverSettingsPayload(options));
    const extra = this.receive.initialIncrement();
    if (extra > 0) this.write.windowUpdate(0, extra);
    this.keepalive.start();
  }

  private readonly onClose: () => void;

  // ---- for the layer above, and StreamHost ----

  /** The stream receive window the server grants (SETTINGS_INITIAL_WINDOW_SIZE). */
  get streamWindowTarget(): number {
    return this.options.streamWindowBytes;
  }

  /** True while the socket's buffer is full or much output waits (flow-control.ts). */
  get socketBlocked(): boolean {
    return this.flow.socketBlocked;
  }

  /** Streams the handler works on (see Http2Handler.onStream). */
  get busy(): number {
    return this.starts.busy;
  }

  /** Open streams (for tests and stats). */
  get openStreams(): number {
    return this.streams.size;
  }

  wantWritable(stream: Http2Stream): void {
    this.flow.wantWritable(stream);
  }

  /** The handler settled one stream's work (see Http2Handler.onStream). */
  settled(): void {
    this.starts.settled();
    this.goAway.maybeFinish();
  }

  sendHeaderBlock(id: number, block: Buffer, endStream: boolean): void {
    this.write.headerBlock(id, block, endStream);
  }

  sendDataFrames(stream: Http2Stream, data: Uint8Array, at: number): number {
    const sent = this.flow.sendDataFrames(stream, data, at);
    // Data sent invites the client's window updates and BDP PINGs (grpc-go sends one with
    // each): they are welcome, as grpc-go's server resets its ping strikes when it writes.
    if (sent > 0) this.limits.activity();
    return sent;
  }

  blockedOnWindow(stream: Http2Stream): void {
    this.flow.blockedOnWindow(stream);
  }

  sendReset(id: number, code: number): void {
    this.write.reset(id, code);
  }

  sendWindowUpdate(id: number, increment: number): void {
    this.write.windowUpdate(id, increment);
  }

  /** The stream is closed on both sides: forget it. */
  closeStream(stream: Http2Stream): void {
    this.removeStream(stream);
    stream.closed = true;
  }

  /** Graceful close (graceful-shutdown.ts). */
  shutdown(): void {
    this.goAway.begin();
  }

  /** Resets every stream and closes the socket now. */
  destroy(reason = "destroyed"): void {
    if (this.closed) return;
    this.closeReason ??= reason;
    this.out.flush();
    this.socket.destroy();
    this.onSocketClose();
  }

  // ---- receiving: the preface, then frames ----

  private onSocketData(chunk: Buffer): void {
    if (this.closing) return;
    this.keepalive.touch();
    let buf = chunk;
    if (this.pending !== undefined) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    let at = 0;
    if (this.phase === Phase.Preface) {
      const n = Math.min(buf.length, CLIENT_PREFACE.length);
      if (buf.compare(CLIENT_PREFACE, 0, n, 0, n) !== 0) {
        this.destroy("not an HTTP/2 client preface");
        return;
      }
      if (buf.length < CLIENT_PREFACE.length) {
        this.pending = buf;
        return;
      }
      at = CLIENT_PREFACE.length;
      this.phase = Phase.Settings;
    }
    while (!this.closing) {
      const left = buf.length - at;
      if (left < FRAME_HEADER_BYTES) break;
      const length = (buf[at]! << 16) | (buf[at + 1]! << 8) | buf[at + 2]!;
      if (length > DEFAULT_MAX_FRAME_SIZE) {
        this.fail(ErrorCode.FRAME_SIZE_ERROR, `frame of ${length} bytes`);
        return;
      }
      if (left < FRAME_HEADER_BYTES + length) break;
      const type = buf[at + 3]!;
      const flags = buf[at + 4]!;
      const streamId = buf.readUInt32BE(at + 5) & MAX_STREAM_ID;
      const start = at + FRAME_HEADER_BYTES;
      at = start + length;
      this.onFrame(type, flags, streamId, buf, start, at);
    }
    if (!this.closing && at < buf.length) this.pending = buf.subarray(at);
  }

  /** One frame, payload `buf[start, end)`: checked, and sent where it goes. */
  private onFrame(
    type: number,
    flags: number,
    streamId: number,
    buf: Buffer,
    start: number,
    end: number,
  ): void {
    if (this.phase === Phase.Settings) {
      if (type !== frames.SETTINGS || (flags & frames.FLAG_ACK) !== 0) {
        this.fail(ErrorCode.PROTOCOL_ERROR, "the client preface must end with SETTINGS");
        return;
      }
      this.phase = Phase.Open;
      this.keepalive.opened();
    }
    if (this.blocks.inProgress && type !== frames.CONTINUATION) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "a header block was interrupted");
      return;
    }
    switch (type) {
      case frames.DATA:
        this.onDataFrame(flags, streamId, buf, start, end);
        return;
      case frames.HEADERS:
        this.onBlockPart(this.blocks.headers(flags, streamId, buf, start, end));
        return;
      case frames.CONTINUATION:
        this.onBlockPart(this.blocks.continuation(flags, streamId, buf, start, end));
        return;
      case frames.PRIORITY:
        if (streamId === 0) this.fail(ErrorCode.PROTOCOL_ERROR, "PRIORITY on stream 0");
        else if (end - start !== 5) this.streamError(streamId, ErrorCode.FRAME_SIZE_ERROR);
        else this.invalid();
        return;
      case frames.RST_STREAM:
        this.onResetFrame(streamId, buf, start, end);
        return;
      case frames.SETTINGS:
        this.onSettings(flags, streamId, buf, start, end);
        return;
      case frames.PUSH_PROMISE:
        this.fail(ErrorCode.PROTOCOL_ERROR, "PUSH_PROMISE from a client");
        return;
      case frames.PING:
        this.onPing(flags, streamId, buf, start, end);
        return;
      case frames.GOAWAY:
        if (streamId !== 0) this.fail(ErrorCode.PROTOCOL_ERROR, "GOAWAY on a stream");
        else if (end - start < 8) this.fail(ErrorCode.FRAME_SIZE_ERROR, "short GOAWAY");
        else this.goAway.peerGoingAway();
        return;
      case frames.WINDOW_UPDATE:
        this.onWindowUpdate(streamId, buf, start, end);
        return;
      default:
        this.invalid(); // unknown frame types are ignored (RFC 9113, 4.1)
    }
  }

  private onDataFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "DATA on stream 0");
      return;
    }
    const length = end - start;
    // Every DATA frame counts against the connection's window, whatever its stream's state.
    const increment = this.receive.received(length);
    if (increment < 0) {
      this.fail(ErrorCode.FLOW_CONTROL_ERROR, "the connection's window was exceeded");
      return;
    }
    if (increment > 0) this.write.windowUpdate(0, increment);
    let dataStart = start;
    let dataEnd = end;
    if ((flags & frames.FLAG_PADDED) !== 0) {
      if (length < 1 || buf[start]! >= length) {
        this.fail(ErrorCode.PROTOCOL_ERROR, "bad DATA padding");
        return;
      }
      dataStart = start + 1;
      dataEnd = end - buf[start]!;
    }
    const stream = this.streams.get(id);
    if (stream === undefined || stream.remoteClosed) {
      if (id > this.lastStreamId) {
        this.fail(ErrorCode.PROTOCOL_ERROR, "DATA on an idle stream");
      } else if (stream !== undefined) {
        this.abortStream(stream, ErrorCode.STREAM_CLOSED);
      }
      // Else a stream this side closed: its data was in flight (a normal race).
      return;
    }
    const endStream = (flags & frames.FLAG_END_STREAM) !== 0;
    if (length === 0 && !endStream) this.invalid();
    stream.receiveWindow -= length;
    if (stream.receiveWindow < 0) {
      this.abortStream(stream, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    this.limits.activity();
    // Padding is consumed at once; the body when the layer above says so.
    stream.consumed(length - (dataEnd - dataStart));
    if (endStream) stream.remoteClosed = true;
    stream.listener.onData(
      dataEnd > dataStart ? buf.subarray(dataStart, dataEnd) : undefined,
      endStream,
    );
    if (endStream && stream.localClosed) this.closeStream(stream);
  }

  /** What the header block assembler made of a HEADERS or CONTINUATION frame. */
  private onBlockPart(r: HeaderBlock | ConnectionError | undefined): void {
    if (r === undefined) return;
    if (isConnectionError(r)) this.fail(r.code, r.why);
    else this.onHeaderBlock(r);
  }

  private onHeaderBlock(block: HeaderBlock): void {
    const { streamId: id, fields, oversized, endStream } = block;
    this.limits.activity();
    const existing = this.streams.get(id);
    if (existing !== undefined) {
      // Trailers from the client: they must end the stream; their fields are ignored.
      if (!endStream || existing.remoteClosed) {
        this.abortStream(existing, ErrorCode.PROTOCOL_ERROR);
        return;
      }
      existing.remoteClosed = true;
      existing.listener.onData(undefined, true);
      if (existing.localClosed) this.closeStream(existing);
      return;
    }
    if (id <= this.lastStreamId || id % 2 === 0) {
      if (id % 2 === 0 || id > this.lastStreamId) {
        this.fail(ErrorCode.PROTOCOL_ERROR, `HEADERS opening stream ${id}`);
      } else {
        this.fail(ErrorCode.STREAM_CLOSED, `HEADERS on closed stream ${id}`);
      }
      return;
    }
    this.lastStreamId = id;
    if (id > this.goAway.acceptUpTo || this.closing) {
      this.write.reset(id, ErrorCode.REFUSED_STREAM);
      return;
    }
    if (this.streams.size >= this.options.maxConcurrentStreams) {
      this.write.reset(id, ErrorCode.REFUSED_STREAM);
      return;
    }
    let head: RequestHead | undefined;
    if (!oversized) {
      const parsed = parseRequestHead(fields);
      if (typeof parsed === "string") {
        this.write.reset(id, ErrorCode.PROTOCOL_ERROR);
        return;
      }
      head = parsed;
    }
    const stream = new Http2Stream(
      this,
      id,
      this.peer.initialWindow,
      this.options.streamWindowBytes,
    );
    if (endStream) stream.remoteClosed = true;
    this.streams.set(id, stream);
    if (!this.starts.open(stream, head, endStream)) {
      this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too many streams reset while their calls ran");
    }
  }

  private onResetFrame(id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on stream 0");
      return;
    }
    if (end - start !== 4) {
      this.fail(ErrorCode.FRAME_SIZE_ERROR, "RST_STREAM of the wrong size");
      return;
    }
    if (id > this.lastStreamId) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "RST_STREAM on an idle stream");
      return;
    }
    const stream = this.streams.get(id);
    // A stream this side closed already: the reset crossed its end (a normal race).
    if (stream === undefined) return;
    const code = buf.readUInt32BE(start);
    this.removeStream(stream);
    stream.gone(code);
  }

  private onSettings(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "SETTINGS on a stream");
      return;
    }
    const length = end - start;
    if ((flags & frames.FLAG_ACK) !== 0) {
      if (length !== 0) this.fail(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS ACK with a payload");
      return;
    }
    if (length % 6 !== 0) {
      this.fail(ErrorCode.FRAME_SIZE_ERROR, "SETTINGS of the wrong size");
      return;
    }
    if (!this.limits.settings(performance.now())) {
      this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too many SETTINGS");
      return;
    }
    const err = this.peer.apply(buf, start, end, (delta) => {
      for (const s of this.streams.values()) {
        s.sendWindow += delta;
        if (s.sendWindow > MAX_WINDOW_SIZE) {
          return { code: ErrorCode.FLOW_CONTROL_ERROR, why: "a stream's window overflowed" };
        }
      }
      return undefined;
    });
    if (err !== undefined) {
      this.fail(err.code, err.why);
      return;
    }
    this.controlReply(frames.SETTINGS, frames.FLAG_ACK, undefined);
    this.flow.resumeBlocked();
  }

  private onPing(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id !== 0) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "PING on a stream");
      return;
    }
    if (end - start !== 8) {
      this.fail(ErrorCode.FRAME_SIZE_ERROR, "PING of the wrong size");
      return;
    }
    if ((flags & frames.FLAG_ACK) !== 0) {
      const payload = buf.subarray(start, end);
      if (payload.equals(SHUTDOWN_PING)) this.goAway.pingAcked();
      else if (payload.equals(KEEPALIVE_PING)) this.keepalive.acked();
      return;
    }
    if (!this.limits.ping(performance.now())) {
      this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too_many_pings");
      return;
    }
    this.controlReply(frames.PING, frames.FLAG_ACK, buf.subarray(start, end));
  }

  private onWindowUpdate(id: number, buf: Buffer, start: number, end: number): void {
    if (end - start !== 4) {
      this.fail(ErrorCode.FRAME_SIZE_ERROR, "WINDOW_UPDATE of the wrong size");
      return;
    }
    const increment = buf.readUInt32BE(start) & MAX_WINDOW_SIZE;
    if (id === 0) {
      if (increment === 0) {
        this.fail(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE of 0");
        return;
      }
      this.flow.window += increment;
      if (this.flow.window > MAX_WINDOW_SIZE) {
        this.fail(ErrorCode.FLOW_CONTROL_ERROR, "the connection's window overflowed");
        return;
      }
      this.flow.resumeBlocked();
      return;
    }
    if (id > this.lastStreamId) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE on an idle stream");
      return;
    }
    const stream = this.streams.get(id);
    if (stream === undefined) return; // a closed stream (a normal race)
    if (increment === 0) {
      this.abortStream(stream, ErrorCode.PROTOCOL_ERROR);
      return;
    }
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW_SIZE) {
      this.abortStream(stream, ErrorCode.FLOW_CONTROL_ERROR);
      return;
    }
    this.flow.streamWindowOpened(stream);
  }

  // ---- streams and errors ----

  private removeStream(stream: Http2Stream): void {
    if (this.streams.get(stream.id) === stream) this.streams.delete(stream.id);
    this.flow.forget(stream);
    this.goAway.maybeFinish();
  }

  /** A reply the client asked for (PING or SETTINGS ACK), unless it does not read its replies. */
  private controlReply(type: number, flags: number, payload: Buffer | undefined): void {
    if (this.socket.writableLength + this.out.pendingBytes > this.options.maxOutputBytes) {
      this.fail(ErrorCode.ENHANCE_YOUR_CALM, "the client does not read its replies");
      return;
    }
    this.out.frame(type, flags, 0, payload);
  }

  private invalid(): void {
    if (!this.limits.invalid()) {
      this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too many frames that do nothing");
    }
  }

  private streamError(id: number, code: number): void {
    const stream = this.streams.get(id);
    if (stream === undefined) {
      this.write.reset(id, code);
      return;
    }
    this.abortStream(stream, code);
  }

  /** A stream error found by this side: RST_STREAM, and the layer above is told. */
  private abortStream(stream: Http2Stream, code: number): void {
    this.write.reset(stream.id, code);
    this.removeStream(stream);
    stream.gone(code);
  }

  /** A connection error: GOAWAY with `code`, then close. */
  private fail(code: number, why: string): void {
    if (this.closing) return;
    this.closeReason = `${frames.errorCodeName(code)}: ${why}`;
    this.write.goAway(this.lastStreamId, code, why);
    this.closeWhenWritten();
    this.resetAll(ErrorCode.CANCEL);
  }

  /** Takes nothing more; ends the socket once its output is written (destroyed after a second). */
  private closeWhenWritten(): void {
    this.closing = true;
    this.out.flush();
    this.socket.end();
    // A client that never closes its side is cut off.
    setTimeout(() => this.destroy(), 1000).unref();
  }

  private resetAll(code: number): void {
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.flow.forgetAll();
    for (const s of streams) s.gone(code);
    this.starts.dropWaiting();
  }

  private onSocketClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.closing = true;
    this.closeReason ??= "the client closed the connection";
    this.keepalive.stop();
    this.out.close();
    this.resetAll(ErrorCode.CANCEL);
    this.onClose();
  }
}
