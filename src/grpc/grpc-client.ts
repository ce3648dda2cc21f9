/**
 * GrpcClient: gRPC calls to one endpoint over our own HTTP/2 client connection
 * (http2/client-connection.ts), plaintext or TLS (node:tls, ALPN h2; mutual when a
 * certificate is given): unary, server-streaming and bidirectional calls, a deadline per call
 * (sent as grpc-timeout, and kept here), cancellation (RST_STREAM CANCEL), response
 * headers and trailers as Metadata.
 *
 * Connections: one at a time, dialled at the first call and again at the first call after
 * it ended (refused, reset, GOAWAY); calls wait for it to be ready (the server's SETTINGS
 * came), so a call that fails before it is ready was never sent.
 *
 * Every failure rejects with a GrpcCallError: `code` and `details` as the server sent them
 * (with its trailers in `metadata`), or, for a failure found on this side, `transport`
 * says what happened (TransportFailure), in words the layer above maps to its own.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import {
  type ClientConnectionOptions,
  type ClientStream,
  type ClientStreamHandler,
  Http2ClientConnection,
  type StreamEnd,
} from "./http2/client-connection.js";
import * as h2 from "./http2/frames.js";
import { encodeHeaderBlock } from "./http2/hpack-encoder.js";
import { MessageDeframer } from "./message-framing.js";
import { Metadata } from "./metadata.js";
import { percentDecode, responseStatus } from "./response-status.js";
import { Status } from "./status.js";

/** PEM contents. */
export interface GrpcClientTls {
  /** CA certificates to trust (default: the system's roots). */
  readonly ca?: Uint8Array | string | undefined;
  /** Client certificate and key, for servers that require mutual TLS. */
  readonly cert?: Uint8Array | string | undefined;
  readonly key?: Uint8Array | string | undefined;
  /** The name checked in the server's certificate (default: the host dialled, unless an IP). */
  readonly serverName?: string | undefined;
}

export interface GrpcClientOptions {
  /** TLS (default: plaintext). */
  readonly tls?: GrpcClientTls | undefined;
  /** Request headers sent with every call (lowercase names), e.g. authorization. */
  readonly headers?: readonly (readonly [string, string])[];
  /** The largest response message accepted (bytes). Default 4 MiB. */
  readonly maxReceiveMessageBytes?: number;
  /** HTTP/2 settings of the connections. */
  readonly connection?: ClientConnectionOptions;
}

export interface GrpcCallOptions {
  /** The call's deadline in milliseconds from now (undefined: none), sent as grpc-timeout. */
  readonly timeoutMs?: number | undefined;
  /** Cancels the call (RST_STREAM CANCEL; it fails "cancelled") when it fires. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * A failure found on this side of a call:
 * - "no-connection": never sent: no connection could be made (`why`: the socket's error);
 * - "not-http2": never sent: the port does not speak HTTP/2 (`why` says what it did);
 * - "closed-early": never sent: the connection closed before HTTP/2 started;
 * - "not-taken": the server said (GOAWAY, REFUSED_STREAM) it did not process the call;
 * - "lost": sent, and the connection or stream was lost before the status;
 * - "deadline": the deadline passed (`sent`: whether the call had left this process);
 * - "cancelled": cancelled on this side (the client closed);
 * - "too-large": a response message over maxReceiveMessageBytes (`size`, `limit`);
 * - "http-status": the server answered HTTP status `httpStatus`, not gRPC;
 * - "bad-answer": the response broke gRPC's rules (no status, a compressed message).
 */
export interface TransportFailure {
  readonly kind:
    | "no-connection"
    | "not-http2"
    | "closed-early"
    | "not-taken"
    | "lost"
    | "deadline"
    | "cancelled"
    | "too-large"
    | "http-status"
    | "bad-answer";
  readonly why: string;
  readonly sent?: boolean;
  readonly size?: number;
  readonly limit?: number;
  readonly httpStatus?: number;
}

const TRANSPORT_CODE: Record<TransportFailure["kind"], number> = {
  "no-connection": Status.UNAVAILABLE,
  "not-http2": Status.UNAVAILABLE,
  "closed-early": Status.UNAVAILABLE,
  "not-taken": Status.UNAVAILABLE,
  lost: Status.UNAVAILABLE,
  deadline: Status.DEADLINE_EXCEEDED,
  cancelled: Status.CANCELLED,
  "too-large": Status.RESOURCE_EXHAUSTED,
  "http-status": Status.UNKNOWN,
  "bad-answer": Status.INTERNAL,
};

/** A call that did not end with status OK. */
export class GrpcCallError extends Error {
  override readonly name = "GrpcCallError";
  constructor(
    /** The gRPC status code. */
    readonly code: number,
    /** The server's grpc-message (percent-decoded), or the failure's `why`. */
    readonly details: string,
    /** The server's trailers (empty for a failure on this side). */
    readonly metadata: Metadata,
    /** Set iff the failure was found on this side. */
    readonly transport: TransportFailure | undefined,
  ) {
    super(`${code}: ${details}`);
  }

  static of(t: TransportFailure): GrpcCallError {
    return new GrpcCallError(TRANSPORT_CODE[t.kind], t.why, new Metadata(), t);
  }
}

const DEFAULT_MAX_RECEIVE = 4 * 1024 * 1024;

export class GrpcClient {
  private conn: Http2ClientConnection | undefined;
  private readonly blocks = new Map<string, Buffer>();
  private readonly host: string;
  private readonly port: number;
  private readonly maxReceive: number;
  private closed = false;
  /** Connections dialled so far (for tests and stats). */
  connections = 0;

  /** `address` is "host:port" (an IPv6 host in brackets). No connection is made until a call. */
  constructor(
    readonly address: string,
    private readonly options: GrpcClientOptions = {},
  ) {
    const colon = address.lastIndexOf(":");
    if (colon < 0) throw new TypeError(`address ${address}: not host:port`);
    this.host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
    this.port = Number(address.slice(colon + 1));
    this.maxReceive = options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE;
  }

  /** A unary call: resolves with the response message; rejects with a GrpcCallError. */
  unary(path: string, request: Uint8Array, options: GrpcCallOptions = {}): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const signal = options.signal;
      if (signal === undefined) {
        new WholeCall(resolve, reject, this.maxReceive, single).start(
          this,
          path,
          request,
          options.timeoutMs,
        );
        return;
      }
      const onAbort = () => call.cancel("cancelled by its signal");
      const off = () => signal.removeEventListener("abort", onAbort);
      const call = new WholeCall<Buffer>(
        (v) => {
          off();
          resolve(v);
        },
        (e) => {
          off();
          reject(e);
        },
        this.maxReceive,
        single,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      call.start(this, path, request, options.timeoutMs);
      if (signal.aborted) onAbort();
    });
  }

  /**
   * A call with one request message: resolves with every response message (one for a
   * unary method, any number for a server-streaming one, each a view of the bytes
   * received) once the status is OK; rejects with a GrpcCallError.
   */
  collect(path: string, request: Uint8Array, options: GrpcCallOptions = {}): Promise<Buffer[]> {
    return new Promise((resolve, reject) => {
      const call = new WholeCall(resolve, reject, this.maxReceive, all);
      call.start(this, path, request, options.timeoutMs);
    });
  }

  /**
   * A server-streaming call: its response messages, pulled one at a time (the server is
   * held back by flow control while none is pulled). `cancel()` ends it early.
   */
  serverStream(path: string, request: Uint8Array, options: GrpcCallOptions = {}): ServerStream {
    const call = new ServerStream(this.maxReceive);
    call.start(this, path, request, options.timeoutMs);
    return call;
  }

  /**
   * A bidirectional call: `write` sends request messages (they wait, in order, until the
   * stream is open and the windows allow), `closeSend` half-closes this side; response messages
   * are pulled with `next()` as for a server stream. `cancel()` ends it early.
   */
  bidiStream(path: string, options: GrpcCallOptions = {}): BidiStream {
    const call = new BidiStream(this.maxReceive);
    call.start(this, path, undefined, options.timeoutMs);
    return call;
  }

  /**
   * Resolves once a connection is ready, or has failed (a call then fails at once, saying
   * why); rejects with a "no-connection" GrpcCallError when it is still connecting at `by`
   * (a Date.now() time).
   */
  whenReady(by: number): Promise<void> {
    if (this.closed) return Promise.resolve();
    const c = this.connection();
    if (c.ready || c.ended) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => {
          off();
          reject(
            GrpcCallError.of({ kind: "no-connection", why: "no connection within the time given" }),
          );
        },
        Math.max(0, by - Date.now()),
      );
      const done = () => {
        off();
        resolve();
      };
      const off = () => {
        clearTimeout(timer);
        const i = this.readyWaiters.indexOf(done);
        if (i >= 0) this.readyWaiters.splice(i, 1);
      };
      this.readyWaiters.push(done);
    });
  }

  /** Whether a connection is open that takes new calls (for tests). */
  get connected(): boolean {
    return this.conn?.usable === true && this.conn.ready;
  }

  /** Closes the connection: calls in flight fail (cancelled); later calls fail at once. */
  close(): void {
    this.closed = true;
    this.conn?.close();
    this.conn = undefined;
  }

  private readonly readyWaiters: (() => void)[] = [];

  /**
   * For the calls: opens a stream of `path` with a timeout (dialling when needed);
   * undefined once the client is closed.
   */
  open(
    path: string,
    timeoutMs: number | undefined,
    handler: ClientStreamHandler,
    manualWindow: boolean,
  ): ClientStream | undefined {
    if (this.closed) return undefined;
    let block = this.blocks.get(path);
    if (block === undefined) {
      block = encodeHeaderBlock([
        [":method", "POST"],
        [":scheme", this.options.tls === undefined ? "http" : "https"],
        [":path", path],
        [":authority", this.address],
        ["content-type", "application/grpc"],
        ["te", "trailers"],
        ...(this.options.headers ?? []),
      ]);
      this.blocks.set(path, block);
    }
    const extra = timeoutMs === undefined ? undefined : timeoutField(timeoutMs);
    return this.connection().request(block, extra, handler, manualWindow);
  }

  /** The connection calls go on: the current one, or a new one. */
  private connection(): Http2ClientConnection {
    const c = this.conn;
    if (c?.usable) return c;
    const fresh = new Http2ClientConnection(this.dial(), this.address, this.options.connection, {
      ready: () => this.wakeReady(),
      closed: () => this.wakeReady(),
    });
    this.conn = fresh;
    this.connections++;
    return fresh;
  }

  private wakeReady(): void {
    for (const w of this.readyWaiters.splice(0)) w();
  }

  private dial(): net.Socket {
    const t = this.options.tls;
    if (t === undefined) return net.connect({ host: this.host, port: this.port, noDelay: true });
    const socket = tls.connect({
      host: this.host,
      port: this.port,
      ...(t.ca === undefined ? {} : { ca: pem(t.ca) }),
      ...(t.cert === undefined ? {} : { cert: pem(t.cert) }),
      ...(t.key === undefined ? {} : { key: pem(t.key) }),
      ALPNProtocols: ["h2"],
      servername: t.serverName ?? (net.isIP(this.host) === 0 ? this.host : ""),
    });
    socket.setNoDelay(true);
    return socket;
  }
}

function pem(v: Uint8Array | string): Buffer {
  return typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v);
}

/** "grpc-timeout" as a literal field without indexing (a new name), `ms` rounded up. */
const TIMEOUT_NAME = Buffer.from("\x00\x0cgrpc-timeout", "latin1");
function timeoutField(ms: number): Buffer {
  // Eight digits at most (the protocol's limit): seconds past that.
  const whole = Math.max(1, Math.ceil(ms));
  const value = whole < 1e8 ? `${whole}m` : `${Math.min(99_999_999, Math.ceil(whole / 1000))}S`;
  const out = Buffer.allocUnsafe(TIMEOUT_NAME.length + 1 + value.length);
  TIMEOUT_NAME.copy(out, 0);
  out[TIMEOUT_NAME.length] = value.length;
  out.write(value, TIMEOUT_NAME.length + 1, "latin1");
  return out;
}

/**
 * What a call shares, unary or streaming: the stream, the deadline, the response's
 * headers, messages and status, and the failure of each way it can end.
 */
abstract class Call implements ClientStreamHandler {
  protected stream: ClientStream | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly deframer: MessageDeframer;
  private headersSeen = false;
  protected ended = false;
  /** Response headers and trailers (metadata fields only). */
  readonly metadata = new Metadata();

  constructor(private readonly maxReceive: number) {
    this.deframer = new MessageDeframer(maxReceive);
  }

  /** Opens the call; `request` (undefined for a bidirectional call) is its one message. */
  start(
    client: GrpcClient,
    path: string,
    request: Uint8Array | undefined,
    timeoutMs: number | undefined,
  ): void {
    if (timeoutMs !== undefined) {
      if (timeoutMs <= 0) {
        this.end(GrpcCallError.of({ kind: "deadline", why: "the deadline passed", sent: false }));
        return;
      }
      this.timer = setTimeout(() => this.deadlinePassed(), timeoutMs);
    }
    const stream = client.open(path, timeoutMs, this, this.manualWindow);
    if (stream === undefined) {
      this.end(GrpcCallError.of({ kind: "cancelled", why: "the client is closed" }));
      return;
    }
    if (this.ended) return; // refused at once
    this.stream = stream;
    if (request !== undefined) stream.writeMessage(request, true);
  }

  /** Whether the receive window is given back only as messages are taken. */
  protected abstract get manualWindow(): boolean;
  /** A response message. */
  protected abstract message(m: Buffer): void;
  /** The call ended: OK (undefined) or with `err`. Called once. */
  protected abstract finished(err: GrpcCallError | undefined): void;

  /** Ends the call on this side: RST_STREAM CANCEL, and a CANCELLED failure. */
  cancel(why = "cancelled on this side"): void {
    if (this.ended) return;
    this.end(GrpcCallError.of({ kind: "cancelled", why }));
  }

  onHeaders(fields: string[], endStream: boolean): void {
    const { http, grpcStatus, grpcMessage } = responseStatus(fields, this.metadata);
    const first = !this.headersSeen;
    this.headersSeen = true;
    if (first && grpcStatus === undefined && http !== "200") {
      this.end(
        GrpcCallError.of({
          kind: "http-status",
          why: `HTTP status ${http || "(none)"}`,
          httpStatus: Number(http),
        }),
      );
      return;
    }
    if (!endStream) {
      if (!first) this.end(GrpcCallError.of({ kind: "bad-answer", why: "headers after the body" }));
      return;
    }
    if (grpcStatus === undefined) {
      this.end(
        GrpcCallError.of({ kind: "bad-answer", why: "the response ended without a status" }),
      );
      return;
    }
    const code = Number(grpcStatus);
    if (code === Status.OK) {
      if (!this.deframer.atBoundary) {
        this.end(GrpcCallError.of({ kind: "bad-answer", why: "a response message is cut short" }));
        return;
      }
      this.end(undefined);
      return;
    }
    this.end(new GrpcCallError(code, percentDecode(grpcMessage), this.metadata, undefined));
  }

  onData(buf: Buffer, from: number, to: number, endStream: boolean): void {
    if (this.ended) return;
    if (from < to) {
      const err = this.deframer.push(buf.subarray(from, to), (m) => this.message(m));
      if (err !== undefined) {
        this.end(
          err.kind === "too-large"
            ? GrpcCallError.of({
                kind: "too-large",
                why: `a response message of ${err.length} bytes, over the limit of ${this.maxReceive}`,
                size: err.length,
                limit: this.maxReceive,
              })
            : GrpcCallError.of({ kind: "bad-answer", why: "a compressed response message" }),
        );
        return;
      }
    }
    if (endStream && !this.ended) {
      this.end(GrpcCallError.of({ kind: "lost", why: "the response ended without trailers" }));
    }
  }

  onClose(end: StreamEnd): void {
    if (this.ended) return;
    this.end(GrpcCallError.of(streamFailure(end, this.stream)));
  }

  private deadlinePassed(): void {
    if (this.ended) return;
    const sent = this.stream?.sent === true;
    this.end(GrpcCallError.of({ kind: "deadline", why: "the deadline passed", sent }));
  }

  /** Ends the call once: resets the stream if it is still open, then tells the subclass. */
  protected end(err: GrpcCallError | undefined): void {
    if (this.ended) return;
    this.ended = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const s = this.stream;
    if (s !== undefined && !s.done) s.cancel(err?.details ?? "ended", h2.ErrorCode.CANCEL);
    this.finished(err);
  }
}

/** How a stream's end (client-connection.ts) is told to the layer above. */
function streamFailure(end: StreamEnd, stream: ClientStream | undefined): TransportFailure {
  if (end.kind === "reset") {
    if (end.code === h2.ErrorCode.REFUSED_STREAM) return { kind: "not-taken", why: end.why };
    return { kind: "lost", why: end.why };
  }
  if (end.kind === "cancelled") return { kind: "cancelled", why: end.why };
  if (end.kind === "lost" && stream?.sent === true) return { kind: "lost", why: end.why };
  // Never sent: why the connection failed.
  if (end.source === "goaway") return { kind: "not-taken", why: end.why };
  if (end.source === "protocol") return { kind: "not-http2", why: end.why };
  if (end.source === "tls-port") return { kind: "closed-early", why: end.why };
  if (end.source === "socket-closed") return { kind: "closed-early", why: end.why };
  if (end.source === "client") return { kind: "cancelled", why: end.why };
  return { kind: "no-connection", why: end.why };
}

/**
 * A call answered whole: its response messages kept until the status, then `result(messages)`
 * resolves it (undefined from `result`: an answer of the wrong shape).
 */
class WholeCall<T> extends Call {
  private readonly messages: Buffer[] = [];

  constructor(
    private readonly resolve: (v: T) => void,
    private readonly reject: (e: GrpcCallError) => void,
    maxReceive: number,
    private readonly result: (messages: Buffer[]) => T | undefined,
  ) {
    super(maxReceive);
  }

  protected get manualWindow(): boolean {
    return false;
  }

  protected message(m: Buffer): void {
    this.messages.push(m);
  }

  protected finished(err: GrpcCallError | undefined): void {
    if (err !== undefined) {
      this.reject(err);
      return;
    }
    const v = this.result(this.messages);
    if (v !== undefined) this.resolve(v);
    else {
      const why = `an answer of ${this.messages.length} messages to a unary call`;
      this.reject(GrpcCallError.of({ kind: "bad-answer", why }));
    }
  }
}

/** The one message of a unary answer (undefined: not one). */
function single(messages: Buffer[]): Buffer | undefined {
  return messages.length === 1 ? messages[0] : undefined;
}

function all(messages: Buffer[]): Buffer[] {
  return messages;
}

/** A server-streaming call: `next()` pulls its messages; async-iterable. */
export class ServerStream extends Call implements AsyncIterable<Buffer> {
  private readonly queue: Buffer[] = [];
  private failure: GrpcCallError | undefined;
  private done = false;
  private waiter:
    | { resolve: (m: Buffer | undefined) => void; reject: (e: unknown) => void }
    | undefined;

  protected get manualWindow(): boolean {
    return true;
  }

  /** The next message; undefined at the end (status OK); rejects with the call's failure. */
  next(): Promise<Buffer | undefined> {
    const m = this.queue.shift();
    if (m !== undefined) {
      this.stream?.consumed(m.length + 5);
      return Promise.resolve(m);
    }
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.done) return Promise.resolve(undefined);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const m = await this.next();
        if (m === undefined) return;
        yield m;
      }
    } finally {
      this.cancel();
    }
  }

  protected message(m: Buffer): void {
    // A view of the socket's chunk: copied when it waits to be pulled.
    const w = this.waiter;
    if (w !== undefined) {
      this.waiter = undefined;
      this.stream?.consumed(m.length + 5);
      w.resolve(m);
      return;
    }
    this.queue.push(Buffer.from(m));
  }

  protected finished(err: GrpcCallError | undefined): void {
    if (err !== undefined && !(err.transport?.kind === "cancelled" && this.done)) {
      this.failure = err;
    }
    this.done = true;
    const w = this.waiter;
    this.waiter = undefined;
    if (w === undefined) return;
    if (this.failure !== undefined) w.reject(this.failure);
    else w.resolve(undefined);
  }
}

/**
 * A bidirectional call: a ServerStream whose request messages are written one by one.
 * Writes after the call ended (or after `closeSend`) are dropped; a write's bytes wait in the
 * connection's queue when the windows are used up (the callers send small messages:
 * watch and keep-alive requests).
 */
export class BidiStream extends ServerStream {
  private halfClosed = false;

  /** Sends one request message; false iff the call is over or half-closed (nothing sent). */
  write(message: Uint8Array): boolean {
    const s = this.stream;
    if (s === undefined || this.ended || this.halfClosed) return false;
    s.writeMessage(message, false);
    return true;
  }

  /** Half-closes this side (END_STREAM); responses go on until the server's status. */
  closeSend(): void {
    const s = this.stream;
    if (s === undefined || this.ended || this.halfClosed) return;
    this.halfClosed = true;
    s.write(new Uint8Array(0), true);
  }
}
