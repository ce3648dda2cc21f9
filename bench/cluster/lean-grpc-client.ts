/**
 * A lean gRPC client for the load processes of the cluster benchmarks: HTTP/2 (RFC 9113)
 * spoken directly over one node:net socket (cleartext, prior knowledge), with the server's
 * own HTTP/2 pieces (src/grpc/http2/: frame constants, the frame reader, the HPACK decoder,
 * the static-only HPACK encoder). It drives kv-engine and etcd alike (each with its own messages), and
 * costs the 2-core machine far less CPU per call than node:http2's client did (against one
 * server, 64 gets in flight: ~3-4 µs against ~48 for kv-engine, ~9-11 against ~66-82 for
 * etcd; ~130-140 µs in the cluster runs), so that the cluster figures say more about the
 * servers:
 *
 * - the request header block of a path is encoded once (literals without indexing: the
 *   same bytes every time, no encoder state) and copied into each HEADERS frame;
 * - every frame produced in one event-loop turn (the HEADERS and DATA of each call, the
 *   WINDOW_UPDATEs, ACKs) is written into one slab and goes out in ONE socket.write;
 * - a response message that fits in one DATA frame is a view of the socket's chunk (no
 *   copy); one that spans frames is copied once into a buffer of its size.
 *
 * What it does: preface + SETTINGS (ENABLE_PUSH 0, a large INITIAL_WINDOW_SIZE) + a
 * connection WINDOW_UPDATE; ACKs the server's SETTINGS and PINGs; honours its
 * INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE and MAX_CONCURRENT_STREAMS (calls past the limit
 * wait); keeps the connection and stream send windows (a body past them waits for
 * WINDOW_UPDATE); returns receive window with WINDOW_UPDATE once half of a window is
 * consumed (the connection's, and a stream's when a long Scan gets that far); decodes
 * every header block (HEADERS + CONTINUATION) to keep the HPACK table in step; handles
 * trailers-only responses, RST_STREAM (that call rejects), GOAWAY (calls above its last
 * stream id reject, the rest may finish; the next call opens a new connection) and socket
 * errors (all outstanding calls reject; the next call reconnects). The deadline travels as
 * `grpc-timeout`; a call the server never answers rejects `timeoutMs` + 1 s after it was
 * made. No retries, no compression, no TLS.
 */
import { connect, type Socket } from "node:net";
import {
  FrameReader,
  type FrameSink,
  isSettingsError,
  readServerSettings,
} from "../../src/grpc/http2/frame-reader.js";
import * as h2 from "../../src/grpc/http2/frames.js";
import { FAILED, HpackDecoder } from "../../src/grpc/http2/hpack-decoder.js";
import { encodeHeaderBlock } from "../../src/grpc/http2/hpack-encoder.js";

const { FRAME_HEADER_BYTES: FH } = h2;

export interface LeanGrpcClientOptions {
  /** SETTINGS_INITIAL_WINDOW_SIZE this client grants each stream. Default 16 MiB. */
  streamWindow?: number;
  /** The connection receive window this client grants. Default 1 GiB. */
  connectionWindow?: number;
}

/** A call that did not end with grpc-status 0 (`grpcStatus` undefined: no status came). */
export class LeanGrpcError extends Error {
  constructor(
    message: string,
    readonly grpcStatus: number | undefined,
  ) {
    super(message);
    this.name = "LeanGrpcError";
  }
}

/** Time past the deadline after which a call the server never answered rejects. */
const LOCAL_DEADLINE_SLACK_MS = 1000;
/** Bytes of a write slab (frames are written into it, a region per flush). */
const SLAB_BYTES = 64 * 1024;
/** The decoded header list this client accepts. */
const MAX_HEADER_LIST = 1 << 20;

export class LeanGrpcClient {
  private conn: Connection | undefined;
  private readonly blocks = new Map<string, Buffer>();
  private readonly host: string;
  private readonly port: number;

  constructor(
    readonly endpoint: string,
    private readonly timeoutMs: number,
    private readonly options: LeanGrpcClientOptions = {},
  ) {
    const colon = endpoint.lastIndexOf(":");
    if (colon < 0) throw new Error(`endpoint ${endpoint}: not host:port`);
    this.host = endpoint.slice(0, colon).replace(/^\[|\]$/g, "");
    this.port = Number(endpoint.slice(colon + 1));
  }

  /**
   * Calls `path` with one request message; resolves to the response's messages (one for a
   * unary call, any number for server streaming) once grpc-status is 0; rejects otherwise.
   */
  call(path: string, request: Uint8Array): Promise<Buffer[]> {
    let block = this.blocks.get(path);
    if (block === undefined) {
      block = encodeHeaderBlock([
        [":method", "POST"],
        [":scheme", "http"],
        [":path", path],
        [":authority", this.endpoint],
        ["content-type", "application/grpc"],
        ["te", "trailers"],
        ["grpc-timeout", `${Math.max(1, Math.ceil(this.timeoutMs))}m`],
      ]);
      this.blocks.set(path, block);
    }
    let c = this.conn;
    if (c === undefined || !c.usable()) {
      c = new Connection(this.host, this.port, this.endpoint, this.timeoutMs, this.options);
      this.conn = c;
      this.connections++;
    }
    const call = new Call(path, block, request, Date.now());
    const p = new Promise<Buffer[]>((resolve, reject) => {
      call.resolve = resolve;
      call.reject = reject;
    });
    c.start(call);
    return p;
  }

  /** Connections opened so far (for tests). */
  connections = 0;

  /** Whether a connection is open that takes new calls (for tests). */
  get connected(): boolean {
    return this.conn?.usable() === true;
  }

  /** Closes the connection; calls still outstanding reject. */
  close(): void {
    this.conn?.close();
    this.conn = undefined;
  }
}

/** One call: its stream's state on both sides. */
class Call {
  id = 0;
  resolve: (messages: Buffer[]) => void = noop;
  reject: (err: Error) => void = noop;
  /** The framed request body still to send (from `bodyAt`). */
  body: Buffer | undefined;
  bodyAt = 0;
  sendWindow = 0;
  /** Receive window consumed since the last stream WINDOW_UPDATE. */
  received = 0;
  messages: Buffer[] = [];
  /** A message spanning DATA frames: its buffer and bytes filled. */
  partial: Buffer | undefined;
  partialAt = 0;
  /** Bytes of a 5-byte message prefix split across frames (0 when none pending). */
  prefixGot = 0;
  prefixLength = 0;
  compressed = false;
  headersSeen = false;
  httpStatus = "";
  grpcStatus = "";
  grpcMessage = "";

  constructor(
    readonly path: string,
    readonly block: Buffer,
    readonly request: Uint8Array,
    readonly startedMs: number,
  ) {}
}

function noop(): void {}

class Connection implements FrameSink {
  private readonly socket: Socket;
  private readonly decoder = new HpackDecoder(4096);
  private readonly fields: string[] = [];
  private readonly reader: FrameReader;
  private readonly streams = new Map<number, Call>();
  /** Calls waiting for a stream slot (MAX_CONCURRENT_STREAMS), from `waitingHead`. */
  private waiting: Call[] = [];
  private waitingHead = 0;
  /** Started calls whose bodies wait for send window, in order. */
  private blocked: Call[] = [];
  private nextId = 1;
  private closed = false;
  /** GOAWAY received (or stream ids used up): no new streams. */
  private draining = false;
  private failure = "";
  // Peer settings.
  /**
   * Until the server's SETTINGS come, 100 (RFC 9113 recommends no less): a server refuses
   * streams past its limit, and the first calls go out before its SETTINGS arrive.
   */
  private maxConcurrent = 100;
  private peerInitialWindow = h2.DEFAULT_WINDOW_SIZE;
  private maxFrame = h2.DEFAULT_MAX_FRAME_SIZE;
  private sendWindow = h2.DEFAULT_WINDOW_SIZE;
  // Receive side.
  private readonly streamWindow: number;
  private readonly connWindow: number;
  private received = 0;
  // Output: frames written into `slab` from `slabStart` to `slabAt`, plus full regions.
  private slab: Buffer = Buffer.allocUnsafe(SLAB_BYTES);
  private slabStart = 0;
  private slabAt = 0;
  private readonly regions: Buffer[] = [];
  private flushScheduled = false;
  private readonly flushNow = () => this.flush();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    host: string,
    port: number,
    private readonly endpoint: string,
    private readonly timeoutMs: number,
    options: LeanGrpcClientOptions,
  ) {
    this.streamWindow = Math.min(options.streamWindow ?? 16 * 1024 * 1024, h2.MAX_WINDOW_SIZE);
    this.connWindow = Math.min(options.connectionWindow ?? 1 << 30, h2.MAX_WINDOW_SIZE);
    this.reader = new FrameReader(this);
    const socket = connect({ host, port });
    socket.setNoDelay(true);
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => this.reader.push(chunk));
    socket.on("error", (err) => this.fail(`connection to ${endpoint}: ${err.message}`));
    socket.on("close", () => this.fail(`connection to ${endpoint} closed`));
    // Preface, SETTINGS, and the connection window raised to connWindow.
    let at = this.reserve(h2.CLIENT_PREFACE.length + FH + 12 + FH + 4);
    const out = this.slab;
    at += h2.CLIENT_PREFACE.copy(out, at);
    at = h2.writeFrameHeader(out, at, 12, h2.SETTINGS, 0, 0);
    out.writeUInt16BE(h2.SETTINGS_ENABLE_PUSH, at);
    out.writeUInt32BE(0, at + 2);
    out.writeUInt16BE(h2.SETTINGS_INITIAL_WINDOW_SIZE, at + 6);
    out.writeUInt32BE(this.streamWindow, at + 8);
    at += 12;
    this.slabAt = at;
    if (this.connWindow > h2.DEFAULT_WINDOW_SIZE)
      this.windowUpdate(0, this.connWindow - h2.DEFAULT_WINDOW_SIZE);
    this.flush();
    const every = Math.min(1000, Math.max(50, Math.floor(timeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  /** Whether new calls may go on this connection. */
  usable(): boolean {
    return !this.closed && !this.draining;
  }

  start(call: Call): void {
    if (this.closed || this.draining) {
      this.finishWithError(call, this.failure || `connection to ${this.endpoint} is closing`);
      return;
    }
    if (this.streams.size >= this.maxConcurrent) {
      this.waiting.push(call);
      return;
    }
    this.open(call);
  }

  close(): void {
    if (this.closed) return;
    // GOAWAY(NO_ERROR) with no stream accepted from the server (it pushes none).
    const at = this.frameHeader(8, h2.GOAWAY, 0, 0);
    this.slab.writeUInt32BE(0, at);
    this.slab.writeUInt32BE(h2.ErrorCode.NO_ERROR, at + 4);
    this.slabAt = at + 8;
    this.flush();
    this.fail("client closed");
    const s = this.socket;
    s.end(() => s.destroy());
  }

  // --- sending ---

  private open(call: Call): void {
    const id = this.nextId;
    this.nextId += 2;
    if (this.nextId > h2.MAX_STREAM_ID) this.draining = true;
    call.id = id;
    call.sendWindow = this.peerInitialWindow;
    this.streams.set(id, call);
    // HEADERS (+ CONTINUATION when the block exceeds the peer's frame size).
    const block = call.block;
    if (block.length <= this.maxFrame) {
      let at = this.reserve(FH + block.length);
      at = h2.writeFrameHeader(this.slab, at, block.length, h2.HEADERS, h2.FLAG_END_HEADERS, id);
      this.slabAt = at + block.copy(this.slab, at);
    } else {
      for (let from = 0; from < block.length; from += this.maxFrame) {
        const n = Math.min(this.maxFrame, block.length - from);
        const last = from + n === block.length;
        let at = this.reserve(FH + n);
        at = h2.writeFrameHeader(
          this.slab,
          at,
          n,
          from === 0 ? h2.HEADERS : h2.CONTINUATION,
          last ? h2.FLAG_END_HEADERS : 0,
          id,
        );
        this.slabAt = at + block.copy(this.slab, at, from, from + n);
      }
    }
    // The body: one DATA frame with END_STREAM when the windows and frame size allow.
    const req = call.request;
    const length = 5 + req.length;
    if (length <= this.maxFrame && length <= this.sendWindow && length <= call.sendWindow) {
      let at = this.reserve(FH + length);
      const out = this.slab;
      at = h2.writeFrameHeader(out, at, length, h2.DATA, h2.FLAG_END_STREAM, id);
      out[at] = 0;
      out.writeUInt32BE(req.length, at + 1);
      out.set(req, at + 5);
      this.slabAt = at + length;
      this.sendWindow -= length;
      call.sendWindow -= length;
    } else {
      const body = Buffer.allocUnsafe(length);
      body[0] = 0;
      body.writeUInt32BE(req.length, 1);
      body.set(req, 5);
      call.body = body;
      this.blocked.push(call);
      this.sendBlocked();
    }
    this.scheduleFlush();
  }

  /** Sends what the windows allow of the bodies that wait, in order. */
  private sendBlocked(): void {
    let i = 0;
    for (; i < this.blocked.length; i++) {
      const call = this.blocked[i]!;
      const body = call.body;
      if (body !== undefined && this.streams.get(call.id) === call) {
        while (call.bodyAt < body.length) {
          const n = Math.min(
            body.length - call.bodyAt,
            this.maxFrame,
            this.sendWindow,
            call.sendWindow,
          );
          if (n <= 0) break;
          const last = call.bodyAt + n === body.length;
          let at = this.reserve(FH + n);
          at = h2.writeFrameHeader(
            this.slab,
            at,
            n,
            h2.DATA,
            last ? h2.FLAG_END_STREAM : 0,
            call.id,
          );
          this.slabAt = at + body.copy(this.slab, at, call.bodyAt, call.bodyAt + n);
          call.bodyAt += n;
          this.sendWindow -= n;
          call.sendWindow -= n;
        }
        if (call.bodyAt < body.length) {
          if (this.sendWindow <= 0) break; // the connection window: everyone waits
          continue; // this stream's window: later bodies may still go
        }
        call.body = undefined;
      }
    }
    this.blocked = this.blocked.filter((c) => c.body !== undefined && this.streams.get(c.id) === c);
    this.scheduleFlush();
  }

  private windowUpdate(streamId: number, increment: number): void {
    const at = this.frameHeader(4, h2.WINDOW_UPDATE, 0, streamId);
    this.slab.writeUInt32BE(increment, at);
    this.slabAt = at + 4;
    this.scheduleFlush();
  }

  private rstStream(streamId: number, code: number): void {
    const at = this.frameHeader(4, h2.RST_STREAM, 0, streamId);
    this.slab.writeUInt32BE(code, at);
    this.slabAt = at + 4;
    this.scheduleFlush();
  }

  /**
   * Reserves room for a frame with a payload of `length` bytes, writes its header into the
   * slab and returns the payload's offset there. (Reserve before reading `this.slab`: the
   * reservation may start a new slab.)
   */
  private frameHeader(length: number, type: number, flags: number, id: number): number {
    const at = this.reserve(FH + length);
    return h2.writeFrameHeader(this.slab, at, length, type, flags, id);
  }

  /** An offset in `slab` with `n` bytes free after it (a new slab when this one is full). */
  private reserve(n: number): number {
    if (this.slab.length - this.slabAt >= n) return this.slabAt;
    if (this.slabAt > this.slabStart)
      this.regions.push(this.slab.subarray(this.slabStart, this.slabAt));
    this.slab = Buffer.allocUnsafe(Math.max(SLAB_BYTES, n));
    this.slabStart = 0;
    this.slabAt = 0;
    return 0;
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flushNow);
  }

  /** Writes everything produced since the last flush, in one write when it is one region. */
  private flush(): void {
    this.flushScheduled = false;
    if (this.slabAt > this.slabStart) {
      this.regions.push(this.slab.subarray(this.slabStart, this.slabAt));
      this.slabStart = this.slabAt;
    }
    if (this.regions.length === 0) return;
    if (!this.closed || this.socket.writable) {
      if (this.regions.length === 1) this.socket.write(this.regions[0]!);
      else this.socket.write(Buffer.concat(this.regions));
    }
    this.regions.length = 0;
  }

  // --- receiving ---

  /** FrameSink: a frame other than a header block. */
  frame(buf: Buffer, from: number, to: number, type: number, flags: number, id: number): void {
    switch (type) {
      case h2.DATA:
        this.data(buf, from, to, flags, id);
        return;
      case h2.RST_STREAM: {
        if (to - from !== 4) {
          this.protocolError("RST_STREAM of the wrong size");
          return;
        }
        const call = this.streams.get(id);
        if (call === undefined) return;
        const code = buf.readUInt32BE(from);
        this.end(call);
        this.finishWithError(
          call,
          `${call.path}: stream reset by the server (${h2.errorCodeName(code)})`,
        );
        return;
      }
      case h2.SETTINGS: {
        if ((flags & h2.FLAG_ACK) !== 0) return;
        const settings = readServerSettings(buf, from, to);
        if (isSettingsError(settings)) {
          this.connectionError(settings.code, settings.what);
          return;
        }
        if (settings.initialWindow !== undefined) {
          const delta = settings.initialWindow - this.peerInitialWindow;
          this.peerInitialWindow = settings.initialWindow;
          for (const call of this.streams.values()) call.sendWindow += delta;
        }
        if (settings.maxFrame !== undefined) this.maxFrame = settings.maxFrame;
        if (settings.maxConcurrent !== undefined) this.maxConcurrent = settings.maxConcurrent;
        this.slabAt = this.frameHeader(0, h2.SETTINGS, h2.FLAG_ACK, 0);
        this.scheduleFlush();
        this.startWaiting();
        if (this.blocked.length > 0) this.sendBlocked();
        return;
      }
      case h2.PING: {
        if (to - from !== 8) {
          this.protocolError("PING of the wrong size");
          return;
        }
        if ((flags & h2.FLAG_ACK) !== 0) return;
        const at = this.frameHeader(8, h2.PING, h2.FLAG_ACK, 0);
        this.slabAt = at + buf.copy(this.slab, at, from, to);
        this.scheduleFlush();
        return;
      }
      case h2.GOAWAY: {
        if (to - from < 8) {
          this.protocolError("short GOAWAY");
          return;
        }
        const last = buf.readUInt32BE(from) & 0x7fff_ffff;
        const code = buf.readUInt32BE(from + 4);
        this.goaway(last, code, buf.toString("latin1", from + 8, to));
        return;
      }
      case h2.WINDOW_UPDATE: {
        if (to - from !== 4) {
          this.protocolError("WINDOW_UPDATE of the wrong size");
          return;
        }
        const increment = buf.readUInt32BE(from) & 0x7fff_ffff;
        if (id === 0) this.sendWindow += increment;
        else {
          const call = this.streams.get(id);
          if (call === undefined) return;
          call.sendWindow += increment;
        }
        if (this.blocked.length > 0) this.sendBlocked();
        return;
      }
      case h2.PUSH_PROMISE: {
        this.protocolError("PUSH_PROMISE, though push is disabled");
        return;
      }
      default:
        return; // PRIORITY and unknown types are ignored
    }
  }

  private data(buf: Buffer, from: number, to: number, flags: number, id: number): void {
    if (id === 0) {
      this.protocolError("DATA on stream 0");
      return;
    }
    // The whole payload (padding too) counts against the windows.
    this.received += to - from;
    if (this.received >= this.connWindow / 2) {
      this.windowUpdate(0, this.received);
      this.received = 0;
    }
    const call = this.streams.get(id);
    if (call === undefined) return; // a stream we reset or failed
    const endStream = (flags & h2.FLAG_END_STREAM) !== 0;
    if (!endStream) {
      call.received += to - from;
      if (call.received >= this.streamWindow / 2) {
        this.windowUpdate(id, call.received);
        call.received = 0;
      }
    }
    let p = from;
    let end = to;
    if ((flags & h2.FLAG_PADDED) !== 0) {
      end -= buf[p]!;
      p++;
      if (p > end) {
        this.protocolError("DATA padding exceeds the frame");
        return;
      }
    }
    if (!call.headersSeen) {
      this.reset(call, `${call.path}: DATA before the response headers`);
      return;
    }
    while (p < end) {
      const partial = call.partial;
      if (partial !== undefined) {
        const n = Math.min(end - p, partial.length - call.partialAt);
        buf.copy(partial, call.partialAt, p, p + n);
        call.partialAt += n;
        p += n;
        if (call.partialAt === partial.length) {
          call.messages.push(partial);
          call.partial = undefined;
        }
        continue;
      }
      let length: number;
      if (call.prefixGot === 0 && end - p >= 5) {
        call.compressed = buf[p] !== 0;
        length = buf.readUInt32BE(p + 1);
        p += 5;
        if (end - p >= length) {
          call.messages.push(buf.subarray(p, p + length));
          p += length;
          continue;
        }
      } else {
        // A prefix split across frames: a byte at a time.
        const b = buf[p++]!;
        if (call.prefixGot === 0) call.compressed = b !== 0;
        else call.prefixLength = call.prefixLength * 256 + b;
        if (++call.prefixGot < 5) continue;
        length = call.prefixLength;
        call.prefixGot = 0;
        call.prefixLength = 0;
        if (length === 0) {
          call.messages.push(Buffer.alloc(0));
          continue;
        }
      }
      call.partial = Buffer.allocUnsafe(length);
      call.partialAt = 0;
    }
    if (call.compressed) {
      const why = `${call.path}: a compressed response message (none was offered)`;
      if (endStream) {
        this.end(call);
        this.finishWithError(call, why);
      } else this.reset(call, why);
      return;
    }
    if (endStream) {
      this.end(call);
      this.finishWithError(call, `${call.path}: the response ended without trailers`);
    }
  }

  /** FrameSink: a complete header block. */
  headerBlock(id: number, block: Buffer, from: number, to: number, endStream: boolean): void {
    const fields = this.fields;
    fields.length = 0;
    // Every block is decoded, whoever it is for, to keep the HPACK table in step.
    if (this.decoder.decode(block, from, to, fields, MAX_HEADER_LIST) === FAILED) {
      this.connectionError(
        h2.ErrorCode.COMPRESSION_ERROR,
        "a header block that is not valid HPACK",
      );
      return;
    }
    const call = this.streams.get(id);
    if (call === undefined) return;
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const name = fields[i]!;
      if (name === ":status") call.httpStatus = fields[i + 1]!;
      else if (name === "grpc-status") call.grpcStatus = fields[i + 1]!;
      else if (name === "grpc-message") call.grpcMessage = fields[i + 1]!;
    }
    if (!call.headersSeen) {
      call.headersSeen = true;
      if (call.httpStatus !== "200" && call.grpcStatus === "") {
        const why = `${call.path}: HTTP status ${call.httpStatus || "(none)"}`;
        if (endStream) {
          this.end(call);
          this.finishWithError(call, why);
        } else this.reset(call, why);
        return;
      }
      if (!endStream) return;
    } else if (!endStream) {
      this.reset(call, `${call.path}: a second header block before the trailers`);
      return;
    }
    this.end(call);
    if (call.grpcStatus === "0" && call.partial === undefined && call.prefixGot === 0) {
      call.resolve(call.messages);
      return;
    }
    if (call.grpcStatus === "0") {
      this.finishWithError(call, `${call.path}: a response message is cut short`);
      return;
    }
    let message = call.grpcMessage;
    try {
      message = decodeURIComponent(message);
    } catch {
      // Not percent-encoded after all: as it came.
    }
    const code = call.grpcStatus === "" ? undefined : Number(call.grpcStatus);
    call.reject(
      new LeanGrpcError(`${call.path}: grpc-status ${code ?? "(none)"} ${message}`, code),
    );
  }

  private goaway(lastStreamId: number, code: number, debug: string): void {
    this.draining = true;
    const why = `GOAWAY from ${this.endpoint} (${h2.errorCodeName(code)}${debug ? `: ${debug}` : ""})`;
    if (this.failure === "") this.failure = why;
    for (const call of [...this.streams.values()]) {
      if (call.id > lastStreamId) {
        this.streams.delete(call.id);
        this.finishWithError(call, `${call.path}: ${why}`);
      }
    }
    this.rejectWaiting(why);
    if (this.streams.size === 0) this.destroy();
  }

  /** The stream is done on this side: forget it, start a call that waited for its slot. */
  private end(call: Call): void {
    this.streams.delete(call.id);
    if (this.waitingHead < this.waiting.length) this.startWaiting();
    else if (this.draining && this.streams.size === 0) this.destroy();
  }

  private startWaiting(): void {
    while (this.waitingHead < this.waiting.length && this.streams.size < this.maxConcurrent) {
      if (this.draining) {
        this.rejectWaiting(this.failure || "connection closing");
        return;
      }
      const call = this.waiting[this.waitingHead]!;
      this.waiting[this.waitingHead++] = undefined as unknown as Call;
      this.open(call);
    }
    if (this.waitingHead === this.waiting.length && this.waitingHead > 0) {
      this.waiting = [];
      this.waitingHead = 0;
    }
  }

  private rejectWaiting(why: string): void {
    const waiting = this.waiting.slice(this.waitingHead);
    this.waiting = [];
    this.waitingHead = 0;
    for (const call of waiting) this.finishWithError(call, `${call.path}: ${why}`);
  }

  /** Resets the stream (CANCEL) and rejects its call. */
  private reset(call: Call, message: string): void {
    this.rstStream(call.id, h2.ErrorCode.CANCEL);
    this.end(call);
    this.finishWithError(call, message);
  }

  private finishWithError(call: Call, message: string): void {
    const code = call.grpcStatus === "" ? undefined : Number(call.grpcStatus);
    call.reject(new LeanGrpcError(message, code));
  }

  /** Rejects calls the server has not answered within their deadline and a second. */
  private sweep(): void {
    const limit = Date.now() - this.timeoutMs - LOCAL_DEADLINE_SLACK_MS;
    for (const call of this.streams.values()) {
      if (call.startedMs > limit) break; // streams are in the order they started
      this.reset(
        call,
        `${call.path}: no answer within ${this.timeoutMs} ms (+ ${LOCAL_DEADLINE_SLACK_MS})`,
      );
    }
  }

  /** FrameSink, and this client's own checks: a PROTOCOL_ERROR. */
  protocolError(what: string, code: number = h2.ErrorCode.PROTOCOL_ERROR): void {
    this.connectionError(code, what);
  }

  /** A connection error: GOAWAY with `code`, then every call fails. */
  private connectionError(code: number, what: string): void {
    if (this.closed) return;
    const at = this.frameHeader(8, h2.GOAWAY, 0, 0);
    this.slab.writeUInt32BE(0, at);
    this.slab.writeUInt32BE(code, at + 4);
    this.slabAt = at + 8;
    this.flush();
    this.fail(`connection to ${this.endpoint}: ${what}`);
    this.socket.end(() => this.socket.destroy());
  }

  private destroy(): void {
    this.fail(this.failure || `connection to ${this.endpoint} closed`);
    this.socket.end(() => this.socket.destroy());
  }

  /** The connection is done: every call still outstanding rejects with `why`. */
  private fail(why: string): void {
    if (this.closed) return;
    this.closed = true;
    this.reader.stop();
    if (this.failure === "") this.failure = why;
    clearInterval(this.sweeper);
    const calls = [...this.streams.values()];
    this.streams.clear();
    for (const call of calls) this.finishWithError(call, `${call.path}: ${this.failure}`);
    this.rejectWaiting(this.failure);
    this.blocked = [];
  }
}
