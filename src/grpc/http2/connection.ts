/**
 * The server side of one HTTP/2 connection (RFC 9113) over a socket that has already
 * negotiated h2 (plaintext, or TLS with ALPN): the frames, the streams' states, flow
 * control both ways, SETTINGS, PING, GOAWAY, HPACK, and the limits that keep an abusive
 * client from costing more than it is allowed. It knows nothing of gRPC: each request's
 * header block, once complete and well-formed, goes to `handler.onStream`, which takes the
 * stream from there (see stream.ts).
 *
 * What the client may not do (each ends the connection with GOAWAY and the code named,
 * after which the socket is closed):
 * - break the protocol (PROTOCOL_ERROR, FRAME_SIZE_ERROR, FLOW_CONTROL_ERROR,
 *   COMPRESSION_ERROR), e.g. exceed a window, send frames over 16 KiB, or reuse a stream id;
 * - send a header block (HEADERS + CONTINUATION) over `maxHeaderBlockBytes` compressed
 *   (ENHANCE_YOUR_CALM); a block whose decoded size exceeds `maxHeaderListSize` only
 *   refuses that request (the handler is told the block was oversized);
 * - send more than `maxPingStrikes` PINGs, or SETTINGS frames, that each come within
 *   `minPingIntervalMs` of the previous one with no HEADERS or DATA in between
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
 * stream reset while it waits is dropped at once. A client that has not sent its preface and SETTINGS within
 * `handshakeTimeoutMs` is disconnected; one silent for `keepaliveTimeMs` is sent a PING
 * and disconnected if it does not answer within `keepaliveTimeoutMs`.
 *
 * Shutdown: `shutdown()` sends GOAWAY with the largest stream id and a PING, then, once
 * the PING is answered (or after a second), GOAWAY with the last stream id accepted (so
 * that requests already on the wire are not lost), serves the streams in progress, and
 * closes the socket when none is left. `destroy()` resets every stream and closes at once.
 */
import type { Socket } from "node:net";
import { Admission } from "./admission.js";
import * as frames from "./frames.js";
import {
  CLIENT_PREFACE,
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW_SIZE,
  ErrorCode,
  FRAME_HEADER_BYTES,
  MAX_MAX_FRAME_SIZE,
  MAX_STREAM_ID,
  MAX_WINDOW_SIZE,
} from "./frames.js";
import { FAILED, HpackDecoder, OVERSIZED } from "./hpack-decoder.js";
import { tableSizeUpdate } from "./hpack-encoder.js";
import { OutputQueue } from "./output-queue.js";
import { parseRequestHead, type RequestHead } from "./request-head.js";
import { Http2Stream, type StreamListener } from "./stream.js";

export interface Http2ConnectionOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS, and the number of streams the handler works on at once. */
  maxConcurrentStreams: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE: body bytes a stream may send ahead (>= 65535). */
  streamWindowBytes: number;
  /** Body bytes all streams of the connection may send ahead (>= 65535). */
  connectionWindowBytes: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE: decoded header bytes a request may carry. */
  maxHeaderListSize: number;
  /** Compressed bytes of one header block (HEADERS + CONTINUATION) before the connection is closed. */
  maxHeaderBlockBytes: number;
  handshakeTimeoutMs: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  minPingIntervalMs: number;
  maxPingStrikes: number;
  maxInvalidFrames: number;
  /** Bytes waiting in the socket's buffer beyond which a reply-seeking client is cut off. */
  maxOutputBytes: number;
}

export const DEFAULT_HTTP2_OPTIONS: Readonly<Http2ConnectionOptions> = Object.freeze({
  maxConcurrentStreams: 100,
  streamWindowBytes: 1024 * 1024,
  connectionWindowBytes: 16 * 1024 * 1024,
  maxHeaderListSize: 16 * 1024,
  maxHeaderBlockBytes: 64 * 1024,
  handshakeTimeoutMs: 10_000,
  keepaliveTimeMs: 2 * 60 * 60 * 1000,
  keepaliveTimeoutMs: 20_000,
  minPingIntervalMs: 1000,
  maxPingStrikes: 10,
  maxInvalidFrames: 1000,
  maxOutputBytes: 4 * 1024 * 1024,
});

/** What the layer above (gRPC) implements. */
export interface Http2Handler {
  /**
   * A new request. `head` is undefined when its header block exceeded maxHeaderListSize
   * (the handler should refuse it). Called only while `busy < maxConcurrentStreams` and
   * the server's Admission admits it; the handler counts a stream as busy from here until
   * its work settled (`settled()`). `arrivedAt` is when its HEADERS arrived (Date.now()
   * time), earlier than now when the stream waited for a slot.
   */
  onStream(
    stream: Http2Stream,
    head: RequestHead | undefined,
    endStream: boolean,
    arrivedAt: number,
  ): void;
  /** The connection is closed (every stream has been told, through onReset). */
  onClose(): void;
}

enum Phase {
  Preface,
  Settings,
  Open,
}

const PING_ACK_TIMEOUT_MS = 1000;
/** Bytes of output waiting to be written beyond which streams are told to wait. */
const OUTPUT_HIGH_WATER = 256 * 1024;
const SHUTDOWN_PING = Buffer.from("kvgoaway", "latin1");
const KEEPALIVE_PING = Buffer.from("kvkeepal", "latin1");

/**
 * A stream whose request waits for the handler to have room (rapid-reset protection, or
 * the server's admission): it keeps what arrives meanwhile (at most the stream's window)
 * to hand over on start. A reset drops it from its connection's waiting streams.
 */
class Waiting implements StreamListener {
  private data: Buffer[] = [];
  private ended = false;
  /** Date.now() when the HEADERS arrived. */
  readonly arrivedAt = Date.now();

  constructor(
    private readonly connection: Http2ServerConnection,
    readonly stream: Http2Stream,
    readonly head: RequestHead | undefined,
    readonly endStream: boolean,
  ) {
    stream.listener = this;
  }

  onData(data: Buffer | undefined, endStream: boolean): void {
    if (data !== undefined) this.data.push(data);
    if (endStream) this.ended = true;
  }

  onReset(): void {
    this.data = [];
    this.connection.unwait(this);
  }

  onWritable(): void {}

  /** Replays what arrived to the stream's listener (set by the handler's onStream). */
  replay(): void {
    const data = this.data;
    this.data = [];
    const last = data.length - 1;
    for (let i = 0; i <= last; i++) this.stream.listener.onData(data[i]!, this.ended && i === last);
    if (this.ended && data.length === 0 && !this.endStream)
      this.stream.listener.onData(undefined, true);
  }
}

export class Http2ServerConnection {
  private phase = Phase.Preface;
  private readonly out: OutputQueue;
  private readonly decoder: HpackDecoder;
  private readonly streams = new Map<number, Http2Stream>();
  /** Highest client stream id seen (streams below it that are not in `streams` are closed). */
  private lastStreamId = 0;
  /** Streams at or below this id are still served after GOAWAY; above it they are refused. */
  private acceptUpTo = MAX_STREAM_ID;
  private pending: Buffer | undefined;
  /** The header block being received: its stream, fragments, size, END_STREAM flag. */
  private block:
    | { streamId: number; parts: Buffer[]; bytes: number; endStream: boolean }
    | undefined;
  // Peer settings.
  private peerMaxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  private peerInitialWindow = DEFAULT_WINDOW_SIZE;
  private tableSizeUpdatePending = true;
  // Flow control.
  private sendWindow = DEFAULT_WINDOW_SIZE;
  private receiveWindow: number;
  private receiveUnacked = 0;
  private readonly windowBlocked = new Set<Http2Stream>();
  /** Streams the handler works on (see Http2Handler.onStream). */
  busy = 0;
  /** Streams waiting to be started, oldest first (none of them reset). */
  private readonly waiting: Waiting[] = [];
  /** Streams that waited for this connection's own limit during this busy spell. */
  private spellWaits = 0;
  /** socket.write returned false and 'drain' has not come yet. */
  private socketFull = false;
  /** Streams told they are blocked, to be told when they are not (onWritable). */
  private readonly writableWaiters = new Set<Http2Stream>();
  // Abuse accounting.
  private pingStrikes = 0;
  private lastPingAt = -Infinity;
  private settingsStrikes = 0;
  private lastSettingsAt = -Infinity;
  private invalidFrames = 0;
  // Lifecycle.
  private lastActivity = performance.now();
  private timer: NodeJS.Timeout | undefined;
  private keepalivePingSent = false;
  private goingAway: "first" | "final" | undefined;
  private closing = false;
  closed = false;
  /** Why the connection was closed by this side, for logs and tests. */
  closeReason: string | undefined;

  constructor(
    readonly socket: Socket,
    readonly options: Http2ConnectionOptions,
    private readonly handler: Http2Handler,
    /** Shared by the server's connections (a connection of its own when not given). */
    private readonly admission: Admission = new Admission(Infinity, 0),
  ) {
    this.decoder = new HpackDecoder(4096);
    this.out = new OutputQueue(socket, (blocked) => {
      if (blocked) this.socketFull = true;
      else this.wakeWritable();
    });
    this.receiveWindow = DEFAULT_WINDOW_SIZE;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onSocketData(chunk));
    socket.on("drain", () => this.onSocketDrain());
    socket.on("error", () => {});
    socket.on("close", () => this.onSocketClose());
    this.sendSettings();
    const extra = options.connectionWindowBytes - DEFAULT_WINDOW_SIZE;
    if (extra > 0) {
      this.receiveWindow += extra;
      this.sendWindowUpdate(0, extra);
    }
    this.arm(options.handshakeTimeoutMs);
  }

  /** The stream receive window the server grants (SETTINGS_INITIAL_WINDOW_SIZE). */
  get streamWindowTarget(): number {
    return this.options.streamWindowBytes;
  }

  /**
   * True while the socket's buffer is full, or more than OUTPUT_HIGH_WATER bytes wait to
   * be written (queued in this turn of the event loop, or in the socket's buffer).
   */
  get socketBlocked(): boolean {
    return (
      this.socketFull || this.out.pendingBytes + this.socket.writableLength >= OUTPUT_HIGH_WATER
    );
  }

  /** For Http2Stream: `stream` was told it is blocked; tell it when that changes. */
  wantWritable(stream: Http2Stream): void {
    this.writableWaiters.add(stream);
  }

  /** Open streams (for tests and stats). */
  get openStreams(): number {
    return this.streams.size;
  }

  /** The handler settled one stream's work (see Http2Handler.onStream). */
  settled(): void {
    this.busy--;
    // The slot goes to the connection whose turn it is (this one, if it is its turn).
    this.admission.released();
    const max = this.options.maxConcurrentStreams;
    while (this.waiting.length > 0 && this.busy < max && this.admission.admits(this.busy))
      this.startWaiting();
    if (this.waiting.length > 0 && this.busy < max) this.admission.wait(this);
    if (this.busy < max) this.spellWaits = 0;
    this.maybeFinishShutdown();
  }

  /** For Admission: starts the stream that waited longest, if this connection's limit allows. */
  startWaiting(): boolean {
    if (this.closing || this.busy >= this.options.maxConcurrentStreams) return false;
    const w = this.waiting.shift();
    if (w === undefined) return false;
    this.start(w.stream, w.head, w.endStream, w.arrivedAt);
    if (!w.stream.closed) w.replay();
    return true;
  }

  /** For Admission. */
  get hasWaiting(): boolean {
    return this.waiting.length > 0;
  }

  /** For Waiting: its stream was reset before it started. */
  unwait(w: Waiting): void {
    const i = this.waiting.indexOf(w);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  /** Graceful close (see the module comment). */
  shutdown(): void {
    if (this.closed || this.goingAway !== undefined) return;
    this.goingAway = "first";
    this.sendGoAway(MAX_STREAM_ID, ErrorCode.NO_ERROR);
    this.out.frame(frames.PING, 0, 0, SHUTDOWN_PING);
    setTimeout(() => this.finalGoAway(), PING_ACK_TIMEOUT_MS).unref();
  }

  /** Resets every stream and closes the socket now. */
  destroy(reason = "destroyed"): void {
    if (this.closed) return;
    this.closeReason ??= reason;
    this.out.flush();
    this.socket.destroy();
    this.onSocketClose();
  }

  // ---- receiving ----

  private onSocketData(chunk: Buffer): void {
    if (this.closing) return;
    this.lastActivity = performance.now();
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
      this.arm(this.options.keepaliveTimeMs);
    }
    if (this.block !== undefined && type !== frames.CONTINUATION) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "a header block was interrupted");
      return;
    }
    switch (type) {
      case frames.DATA:
        this.onDataFrame(flags, streamId, buf, start, end);
        return;
      case frames.HEADERS:
        this.onHeadersFrame(flags, streamId, buf, start, end);
        return;
      case frames.CONTINUATION:
        this.onContinuation(flags, streamId, buf, start, end);
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
        // The client will open no more streams; the ones in progress finish.
        else this.acceptUpTo = Math.min(this.acceptUpTo, this.lastStreamId);
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
    this.receiveWindow -= length;
    if (this.receiveWindow < 0) {
      this.fail(ErrorCode.FLOW_CONTROL_ERROR, "the connection's window was exceeded");
      return;
    }
    this.receiveUnacked += length;
    if (this.receiveUnacked >= this.options.connectionWindowBytes / 2) {
      this.receiveWindow += this.receiveUnacked;
      this.sendWindowUpdate(0, this.receiveUnacked);
      this.receiveUnacked = 0;
    }
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
    this.pingStrikes = 0;
    this.settingsStrikes = 0;
    // Padding is consumed at once; the body when the layer above says so.
    stream.consumed(length - (dataEnd - dataStart));
    if (endStream) stream.remoteClosed = true;
    stream.listener.onData(
      dataEnd > dataStart ? buf.subarray(dataStart, dataEnd) : undefined,
      endStream,
    );
    if (endStream && stream.localClosed) this.closeStream(stream);
  }

  private onHeadersFrame(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (id === 0) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "HEADERS on stream 0");
      return;
    }
    let fragStart = start;
    let fragEnd = end;
    if ((flags & frames.FLAG_PADDED) !== 0) {
      if (end - start < 1) {
        this.fail(ErrorCode.PROTOCOL_ERROR, "bad HEADERS padding");
        return;
      }
      const pad = buf[start]!;
      fragStart++;
      fragEnd -= pad;
    }
    if ((flags & frames.FLAG_PRIORITY) !== 0) fragStart += 5;
    if (fragEnd < fragStart) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "bad HEADERS padding");
      return;
    }
    this.block = {
      streamId: id,
      parts: [],
      bytes: 0,
      endStream: (flags & frames.FLAG_END_STREAM) !== 0,
    };
    this.addFragment(flags, buf, fragStart, fragEnd);
  }

  private onContinuation(flags: number, id: number, buf: Buffer, start: number, end: number): void {
    if (this.block === undefined || this.block.streamId !== id) {
      this.fail(ErrorCode.PROTOCOL_ERROR, "CONTINUATION without a header block");
      return;
    }
    if (end === start && (flags & frames.FLAG_END_HEADERS) === 0) this.invalid();
    this.addFragment(flags, buf, start, end);
  }

  private addFragment(flags: number, buf: Buffer, start: number, end: number): void {
    const block = this.block!;
    block.bytes += end - start;
    if (block.bytes > this.options.maxHeaderBlockBytes) {
      this.fail(
        ErrorCode.ENHANCE_YOUR_CALM,
        `a header block over ${this.options.maxHeaderBlockBytes} bytes`,
      );
      return;
    }
    if ((flags & frames.FLAG_END_HEADERS) === 0) {
      // Copied: the socket's chunk is not kept while the block is incomplete.
      block.parts.push(Buffer.from(buf.subarray(start, end)));
      return;
    }
    this.block = undefined;
    let bytes = buf;
    let from = start;
    let to = end;
    if (block.parts.length > 0) {
      block.parts.push(buf.subarray(start, end));
      bytes = Buffer.concat(block.parts);
      from = 0;
      to = bytes.length;
    }
    const fields: string[] = [];
    const result = this.decoder.decode(bytes, from, to, fields, this.options.maxHeaderListSize);
    if (result === FAILED) {
      this.fail(ErrorCode.COMPRESSION_ERROR, "bad HPACK");
      return;
    }
    this.onHeaderBlock(block.streamId, fields, result === OVERSIZED, block.endStream);
  }

  private onHeaderBlock(
    id: number,
    fields: string[],
    oversized: boolean,
    endStream: boolean,
  ): void {
    this.pingStrikes = 0;
    this.settingsStrikes = 0;
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
    if (id > this.acceptUpTo || this.closing) {
      this.sendReset(id, ErrorCode.REFUSED_STREAM);
      return;
    }
    if (this.streams.size >= this.options.maxConcurrentStreams) {
      this.sendReset(id, ErrorCode.REFUSED_STREAM);
      return;
    }
    let head: RequestHead | undefined;
    if (!oversized) {
      const parsed = parseRequestHead(fields);
      if (typeof parsed === "string") {
        this.sendReset(id, ErrorCode.PROTOCOL_ERROR);
        return;
      }
      head = parsed;
    }
    const stream = new Http2Stream(
      this,
      id,
      this.peerInitialWindow,
      this.options.streamWindowBytes,
    );
    if (endStream) stream.remoteClosed = true;
    this.streams.set(id, stream);
    if (this.busy >= this.options.maxConcurrentStreams) {
      // Open streams are at most maxConcurrentStreams: past that, the streams that waited
      // were reset while their calls ran.
      if (++this.spellWaits > 4 * this.options.maxConcurrentStreams) {
        this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too many streams reset while their calls ran");
        return;
      }
      this.waiting.push(new Waiting(this, stream, head, endStream));
      return;
    }
    if (this.waiting.length > 0 || !this.admission.admits(this.busy)) {
      this.waiting.push(new Waiting(this, stream, head, endStream));
      this.admission.wait(this);
      return;
    }
    this.start(stream, head, endStream, Date.now());
  }

  private start(
    stream: Http2Stream,
    head: RequestHead | undefined,
    endStream: boolean,
    arrivedAt: number,
  ): void {
    this.busy++;
    this.admission.acquired();
    this.handler.onStream(stream, head, endStream, arrivedAt);
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
    const now = performance.now();
    if (now - this.lastSettingsAt < this.options.minPingIntervalMs) {
      if (++this.settingsStrikes > this.options.maxPingStrikes) {
        this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too many SETTINGS");
        return;
      }
    }
    this.lastSettingsAt = now;
    for (let at = start; at < end; at += 6) {
      const setting = buf.readUInt16BE(at);
      const value = buf.readUInt32BE(at + 2);
      switch (setting) {
        case frames.SETTINGS_HEADER_TABLE_SIZE:
          this.tableSizeUpdatePending = true;
          break;
        case frames.SETTINGS_ENABLE_PUSH:
          if (value > 1) {
            this.fail(ErrorCode.PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1");
            return;
          }
          break;
        case frames.SETTINGS_INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW_SIZE) {
            this.fail(ErrorCode.FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE too large");
            return;
          }
          const delta = value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          for (const s of this.streams.values()) {
            s.sendWindow += delta;
            if (s.sendWindow > MAX_WINDOW_SIZE) {
              this.fail(ErrorCode.FLOW_CONTROL_ERROR, "a stream's window overflowed");
              return;
            }
          }
          break;
        }
        case frames.SETTINGS_MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_MAX_FRAME_SIZE) {
            this.fail(ErrorCode.PROTOCOL_ERROR, "SETTINGS_MAX_FRAME_SIZE out of range");
            return;
          }
          this.peerMaxFrameSize = value;
          break;
        default:
          // MAX_CONCURRENT_STREAMS (this server pushes nothing), MAX_HEADER_LIST_SIZE
          // (advisory), and unknown settings are ignored.
          break;
      }
    }
    this.controlReply(frames.SETTINGS, frames.FLAG_ACK, undefined);
    this.resumeBlocked();
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
      if (payload.equals(SHUTDOWN_PING)) this.finalGoAway();
      else if (payload.equals(KEEPALIVE_PING)) this.keepalivePingSent = false;
      return;
    }
    const now = performance.now();
    if (now - this.lastPingAt < this.options.minPingIntervalMs) {
      if (++this.pingStrikes > this.options.maxPingStrikes) {
        this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too_many_pings");
        return;
      }
    }
    this.lastPingAt = now;
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
      this.sendWindow += increment;
      if (this.sendWindow > MAX_WINDOW_SIZE) {
        this.fail(ErrorCode.FLOW_CONTROL_ERROR, "the connection's window overflowed");
        return;
      }
      this.resumeBlocked();
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
    if (this.windowBlocked.has(stream) && stream.drainQueue()) {
      this.windowBlocked.delete(stream);
      this.notifyWritable(stream);
    }
  }

  // ---- sending (used by Http2Stream) ----

  /** Sends a header block as HEADERS (+ CONTINUATION when over the peer's frame size). */
  sendHeaderBlock(id: number, block: Buffer, endStream: boolean): void {
    let payload = block;
    if (this.tableSizeUpdatePending) {
      this.tableSizeUpdatePending = false;
      payload = Buffer.concat([tableSizeUpdate(), block]);
    }
    const max = this.peerMaxFrameSize;
    const end = endStream ? frames.FLAG_END_STREAM : 0;
    if (payload.length <= max) {
      this.out.frame(frames.HEADERS, end | frames.FLAG_END_HEADERS, id, payload);
      return;
    }
    this.out.frame(frames.HEADERS, end, id, payload.subarray(0, max));
    for (let at = max; at < payload.length; at += max) {
      const last = at + max >= payload.length;
      this.out.frame(
        frames.CONTINUATION,
        last ? frames.FLAG_END_HEADERS : 0,
        id,
        payload.subarray(at, Math.min(at + max, payload.length)),
      );
    }
  }

  /** Sends DATA frames of `data[at..]` while the windows allow; returns how far it got. */
  sendDataFrames(stream: Http2Stream, data: Uint8Array, at: number): number {
    const max = this.peerMaxFrameSize;
    while (at < data.length) {
      const n = Math.min(data.length - at, max, stream.sendWindow, this.sendWindow);
      if (n <= 0) break;
      this.out.frame(frames.DATA, 0, stream.id, data.subarray(at, at + n));
      stream.sendWindow -= n;
      this.sendWindow -= n;
      at += n;
    }
    return at;
  }

  /** A stream has queued data waiting for a window. */
  blockedOnWindow(stream: Http2Stream): void {
    this.windowBlocked.add(stream);
  }

  sendReset(id: number, code: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(code);
    this.out.frame(frames.RST_STREAM, 0, id, p);
  }

  sendWindowUpdate(id: number, increment: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(increment);
    this.out.frame(frames.WINDOW_UPDATE, 0, id, p);
  }

  /** The stream is closed on both sides: forget it. */
  closeStream(stream: Http2Stream): void {
    this.removeStream(stream);
    stream.closed = true;
  }

  // ---- internals ----

  private removeStream(stream: Http2Stream): void {
    if (this.streams.get(stream.id) === stream) this.streams.delete(stream.id);
    this.windowBlocked.delete(stream);
    this.writableWaiters.delete(stream);
    this.maybeFinishShutdown();
  }

  private sendSettings(): void {
    const o = this.options;
    const entries: [number, number][] = [
      [frames.SETTINGS_MAX_CONCURRENT_STREAMS, o.maxConcurrentStreams],
      [frames.SETTINGS_INITIAL_WINDOW_SIZE, o.streamWindowBytes],
      [frames.SETTINGS_MAX_HEADER_LIST_SIZE, o.maxHeaderListSize],
    ];
    const p = Buffer.allocUnsafe(entries.length * 6);
    entries.forEach(([id, value], i) => {
      p.writeUInt16BE(id, i * 6);
      p.writeUInt32BE(value, i * 6 + 2);
    });
    this.out.frame(frames.SETTINGS, 0, 0, p);
  }

  private sendGoAway(lastId: number, code: number, debug = ""): void {
    const text = Buffer.from(debug, "utf8");
    const p = Buffer.allocUnsafe(8 + text.length);
    p.writeUInt32BE(lastId, 0);
    p.writeUInt32BE(code, 4);
    text.copy(p, 8);
    this.out.frame(frames.GOAWAY, 0, 0, p);
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
    if (++this.invalidFrames > this.options.maxInvalidFrames) {
      this.fail(ErrorCode.ENHANCE_YOUR_CALM, "too many frames that do nothing");
    }
  }

  private streamError(id: number, code: number): void {
    const stream = this.streams.get(id);
    if (stream === undefined) {
      this.sendReset(id, code);
      return;
    }
    this.abortStream(stream, code);
  }

  /** A stream error found by this side: RST_STREAM, and the layer above is told. */
  private abortStream(stream: Http2Stream, code: number): void {
    this.sendReset(stream.id, code);
    this.removeStream(stream);
    stream.gone(code);
  }

  /** A connection error: GOAWAY with `code`, then close. */
  private fail(code: number, why: string): void {
    if (this.closing) return;
    this.closeReason = `${frames.errorCodeName(code)}: ${why}`;
    this.sendGoAway(this.lastStreamId, code, why);
    this.closing = true;
    this.out.flush();
    this.socket.end();
    // A client that never closes its side is cut off.
    setTimeout(() => this.destroy(), 1000).unref();
    this.resetAll(ErrorCode.CANCEL);
  }

  private finalGoAway(): void {
    if (this.goingAway !== "first" || this.closed) return;
    this.goingAway = "final";
    this.acceptUpTo = this.lastStreamId;
    this.sendGoAway(this.lastStreamId, ErrorCode.NO_ERROR);
    this.maybeFinishShutdown();
  }

  private maybeFinishShutdown(): void {
    if (this.goingAway !== "final" || this.closing) return;
    if (this.streams.size > 0 || this.busy > 0) return;
    this.closing = true;
    this.out.flush();
    this.socket.end();
    setTimeout(() => this.destroy(), 1000).unref();
  }

  private resetAll(code: number): void {
    const streams = [...this.streams.values()];
    this.streams.clear();
    this.windowBlocked.clear();
    for (const s of streams) s.gone(code);
    this.waiting.length = 0;
  }

  private resumeBlocked(): void {
    if (this.windowBlocked.size === 0 || this.sendWindow <= 0) return;
    for (const s of [...this.windowBlocked]) {
      if (this.sendWindow <= 0) break;
      if (s.drainQueue()) {
        this.windowBlocked.delete(s);
        this.notifyWritable(s);
      }
    }
  }

  private notifyWritable(stream: Http2Stream): void {
    if (stream.wantsWritable && !this.socketBlocked && stream.queuedBytes === 0) {
      stream.wantsWritable = false;
      this.writableWaiters.delete(stream);
      stream.listener.onWritable();
    }
  }

  /** Tells the streams waiting for the socket that it has room again. */
  private wakeWritable(): void {
    if (this.writableWaiters.size === 0 || this.socketBlocked) return;
    for (const s of [...this.writableWaiters]) {
      if (s.closed) this.writableWaiters.delete(s);
      else this.notifyWritable(s);
    }
  }

  private onSocketDrain(): void {
    this.socketFull = false;
    this.wakeWritable();
  }

  private onSocketClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.closing = true;
    this.closeReason ??= "the client closed the connection";
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.out.close();
    this.resetAll(ErrorCode.CANCEL);
    this.handler.onClose();
  }

  /** (Re)arms the connection's one timer: handshake, then keepalive. */
  private arm(ms: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.onTimer(), ms);
    this.timer.unref();
  }

  private onTimer(): void {
    if (this.closed) return;
    if (this.phase !== Phase.Open) {
      this.destroy("no HTTP/2 preface and SETTINGS within the handshake timeout");
      return;
    }
    if (this.keepalivePingSent) {
      this.destroy("no answer to a keepalive PING");
      return;
    }
    const idle = performance.now() - this.lastActivity;
    if (idle >= this.options.keepaliveTimeMs) {
      this.keepalivePingSent = true;
      this.out.frame(frames.PING, 0, 0, KEEPALIVE_PING);
      this.arm(this.options.keepaliveTimeoutMs);
      return;
    }
    this.arm(this.options.keepaliveTimeMs - idle);
  }
}
