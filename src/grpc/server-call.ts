/**
 * One gRPC call on the server: what its handler sees (`ServerCall`: metadata, deadline,
 * cancellation, writing responses, trailers) and the call's protocol state on its HTTP/2
 * stream (request messages in, response and status out).
 *
 * Life of a call: the request's headers were accepted (grpc-server.ts); for unary and
 * server-streaming methods the one request message is gathered, then the handler runs;
 * for client- and bidi-streaming methods the handler runs at once and reads `requests`.
 * The call ends exactly once (`finish`): when the handler returns (OK) or throws (its
 * status), when its deadline passes (DEADLINE_EXCEEDED), when the request breaks the
 * protocol, or when the client resets the stream or goes away (nothing is sent then).
 * The signal fires when the call ends before its handler did (cancellation, deadline,
 * disconnect, server shutdown). The HTTP/2 stream's slot is released when the handler has
 * settled, not when the call ended: a reset call keeps counting until its work is done.
 *
 * Back-pressure: `write` returns false once the stream's flow-control window is used up
 * or the socket's buffer is full; `whenWritable()` resolves when writing may go on (or
 * the call ended). A request stream grants the client more window only as the handler
 * reads, so a handler that stops reading stops the client.
 */

import type { RequestHead } from "./http2/request-head.js";
import type { Http2Stream, StreamListener } from "./http2/stream.js";
import { frameMessage, MessageDeframer } from "./message-framing.js";
import { Metadata } from "./metadata.js";
import type { MethodDescriptor } from "./method.js";
import { type CallStatus, GrpcError, Status } from "./status.js";
import { responseHeaders, statusBlock } from "./wire-headers.js";

/** What the call needs from its server. */
export interface CallHost {
  readonly maxReceiveMessageBytes: number;
  /** The status for an error a handler threw. */
  statusOf(err: unknown): CallStatus;
  /** The handler settled (the call's stream slot is free). */
  settled(call: ServerCall<unknown>): void;
}

/** The cancellation signal of a call (the shape of the engine's AbortSignalLike). */
export class CallSignal {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | undefined;

  addEventListener(_type: "abort", listener: () => void): void {
    if (this.aborted) return;
    this.listeners ??= [];
    this.listeners.push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const list = this.listeners;
    if (list === undefined) return;
    const i = list.indexOf(listener);
    if (i >= 0) list.splice(i, 1);
  }

  /** Fires once. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const list = this.listeners;
    this.listeners = undefined;
    if (list !== undefined) for (const l of list) l();
  }
}

enum Phase {
  /** Gathering the one request message (unary, server streaming). */
  Receiving,
  /** The handler runs. */
  Running,
  /** The status was sent, or the stream is gone. */
  Ended,
}

/** Bytes of received request messages a streaming handler may leave unread. */
const REQUEST_BUFFER_BYTES = 64 * 1024;

export class ServerCall<Res> implements StreamListener {
  private phase = Phase.Receiving;
  private readonly deframer: MessageDeframer;
  private request: Buffer | undefined;
  private requestCount = 0;
  private signalObject: CallSignal | undefined;
  private metadataObject: Metadata | undefined;
  private writableWaiters: (() => void)[] | undefined;
  private timer: NodeJS.Timeout | undefined;
  private handlerSettled = false;
  /** For streaming requests. */
  private requests: RequestStream<unknown> | undefined;
  /** Trailing metadata sent with the status (set by the handler). */
  trailers: Metadata | undefined;
  /** The status the call ended with (undefined while it runs). */
  endStatus: number | undefined;
  /** performance.now() when the call was accepted. */
  readonly started = performance.now();

  constructor(
    private readonly host: CallHost,
    private readonly stream: Http2Stream,
    private readonly head: RequestHead,
    readonly method: MethodDescriptor,
    private readonly handler: (...args: never[]) => unknown,
    /** Milliseconds (Date.now() time) when the call's deadline passes. */
    readonly deadline: number | undefined,
  ) {
    this.deframer = new MessageDeframer(host.maxReceiveMessageBytes);
    stream.listener = this;
    if (deadline !== undefined) {
      const ms = Math.max(0, deadline - Date.now());
      this.timer = setTimeout(onDeadline, ms, this);
    }
    if (method.kind === "client_streaming" || method.kind === "bidi_streaming") {
      this.requests = new RequestStream(this, stream);
      this.run(this.requests);
    }
  }

  /** "/package.Service/Method". */
  get path(): string {
    return this.method.path;
  }

  /** The request's metadata. */
  get metadata(): Metadata {
    this.metadataObject ??= Metadata.fromFields(this.head.fields);
    return this.metadataObject;
  }

  /** Fires when the call ends before its handler (see the module comment). */
  get signal(): CallSignal {
    this.signalObject ??= new CallSignal();
    if (this.phase === Phase.Ended && !this.handlerSettled)
      this.signalObject.abort(this.endReason());
    return this.signalObject;
  }

  /** The call has ended (status sent or stream gone): responses are no longer sent. */
  get ended(): boolean {
    return this.phase === Phase.Ended;
  }

  /** "address:port" of the client. */
  get peer(): string {
    const s = this.stream.connection.socket;
    return `${s.remoteAddress ?? "?"}:${s.remotePort ?? "?"}`;
  }

  /** Sends the response headers now, with `metadata` (otherwise they go with the first message). */
  sendHeaders(metadata?: Metadata): void {
    if (this.phase === Phase.Ended || this.stream.headersSent) return;
    this.stream.sendHeaders(responseHeaders(metadata));
  }

  /**
   * Sends a response message (server- and bidi-streaming methods). Returns false when the
   * caller should wait for `whenWritable()` before writing more; messages written anyway
   * are queued. Writes after the call ended are dropped.
   */
  write(message: Res): boolean {
    if (this.phase === Phase.Ended) return false;
    this.sendMessage(message);
    return !this.stream.sendBlocked;
  }

  /** `write` for a message already encoded (the method's encoding of a response). */
  writeEncoded(bytes: Uint8Array): boolean {
    if (this.phase === Phase.Ended) return false;
    this.sendFramed(bytes);
    return !this.stream.sendBlocked;
  }

  /**
   * Response bytes written and not yet sent for want of flow-control window (the HTTP/2
   * stream's queue; bytes handed to the connection's output are not counted).
   */
  get unsentBytes(): number {
    return this.stream.queuedBytes;
  }

  /** Resolves when `write` may go on, or when the call has ended. */
  whenWritable(): Promise<void> {
    if (this.phase === Phase.Ended || !this.stream.sendBlocked) return Promise.resolve();
    return new Promise((resolve) => {
      this.writableWaiters ??= [];
      this.writableWaiters.push(resolve);
    });
  }

  // ---- StreamListener (the HTTP/2 stream's events) ----

  onData(data: Buffer | undefined, endStream: boolean): void {
    if (this.phase === Phase.Ended) {
      if (data !== undefined) this.stream.consumed(data.length);
      return;
    }
    if (data !== undefined) {
      const requests = this.requests;
      if (requests === undefined) this.stream.consumed(data.length);
      const error = this.deframer.push(data, (message) => this.onMessage(message, requests));
      if (error !== undefined) {
        if (error.kind === "too-large") {
          this.finish(
            Status.RESOURCE_EXHAUSTED,
            `Received message larger than max (${error.length} vs. ${this.host.maxReceiveMessageBytes})`,
          );
        } else {
          this.finish(
            Status.INTERNAL,
            "compressed message, but no compression was negotiated (grpc-encoding identity)",
          );
        }
        return;
      }
      if (requests !== undefined && data.length > 0) requests.received(data.length);
    }
    if (!endStream || this.ended) return;
    if (!this.deframer.atBoundary) {
      this.finish(Status.INTERNAL, "the request ended inside a message");
      return;
    }
    if (this.requests !== undefined) {
      this.requests.end();
      return;
    }
    if (this.request === undefined) {
      this.finish(Status.INTERNAL, `${this.method.path} expects one request message, got none`);
      return;
    }
    this.run(this.request);
  }

  onReset(): void {
    this.end(undefined);
  }

  onWritable(): void {
    const waiters = this.writableWaiters;
    if (waiters === undefined) return;
    this.writableWaiters = undefined;
    for (const w of waiters) w();
  }

  // ---- internals ----

  private onMessage(message: Buffer, requests: RequestStream<unknown> | undefined): void {
    if (this.phase === Phase.Ended) return;
    if (requests !== undefined) {
      let decoded: unknown;
      try {
        decoded = this.method.decode(message);
      } catch (err) {
        this.finish(Status.INTERNAL, `cannot decode the request: ${(err as Error).message}`);
        return;
      }
      requests.push(decoded, message.length + 5);
      return;
    }
    if (++this.requestCount > 1) {
      this.finish(Status.INTERNAL, `${this.method.path} expects one request message, got more`);
      return;
    }
    this.request = message;
  }

  /** Starts the handler with the decoded request (or the request stream). */
  private run(input: Buffer | RequestStream<unknown>): void {
    this.phase = Phase.Running;
    let request: unknown = input;
    if (Buffer.isBuffer(input)) {
      try {
        request = this.method.decode(input);
      } catch (err) {
        this.finish(Status.INTERNAL, `cannot decode the request: ${(err as Error).message}`);
        this.onHandlerSettled();
        return;
      }
    }
    let result: unknown;
    try {
      result = (this.handler as (req: unknown, call: ServerCall<Res>) => unknown)(request, this);
    } catch (err) {
      this.fail(err);
      this.onHandlerSettled();
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (value) => {
          this.succeed(value);
          this.onHandlerSettled();
        },
        (err) => {
          this.fail(err);
          this.onHandlerSettled();
        },
      );
    } else {
      this.succeed(result);
      this.onHandlerSettled();
    }
  }

  private succeed(value: unknown): void {
    if (this.phase === Phase.Ended) return;
    const kind = this.method.kind;
    if (kind === "unary" || kind === "client_streaming") {
      let bytes: Uint8Array;
      try {
        bytes = this.method.encode(value);
      } catch (err) {
        this.finish(Status.INTERNAL, `cannot encode the response: ${(err as Error).message}`);
        return;
      }
      this.sendFramed(bytes);
    }
    this.finish(Status.OK, "");
  }

  private fail(err: unknown): void {
    if (this.phase === Phase.Ended) return;
    const s =
      err instanceof GrpcError
        ? {
            code: err.code,
            message: err.message,
            ...(err.trailers ? { trailers: err.trailers } : {}),
          }
        : this.host.statusOf(err);
    if (s.trailers !== undefined) this.trailers = s.trailers;
    this.finish(s.code === Status.OK ? Status.UNKNOWN : s.code, s.message);
  }

  private sendMessage(message: Res): void {
    this.sendFramed(this.method.encode(message));
  }

  private sendFramed(bytes: Uint8Array): void {
    const stream = this.stream;
    if (!stream.headersSent) stream.sendHeaders(responseHeaders(undefined));
    for (const piece of frameMessage(bytes)) stream.sendData(piece);
  }

  /**
   * Ends the call with a status sent to the client (trailers, or a trailers-only response
   * when nothing was sent yet). For an OK end of a unary call this is the hot path.
   */
  finish(code: number, message: string): void {
    if (this.phase === Phase.Ended) return;
    const stream = this.stream;
    const block = statusBlock(code, message, this.trailers, !stream.headersSent);
    if (stream.headersSent) stream.sendTrailers(block);
    else stream.sendHeaders(block, true);
    this.end(code);
  }

  /** Ends the call without sending anything more when `code` is undefined (the stream is gone). */
  private end(code: number | undefined): void {
    if (this.phase === Phase.Ended) return;
    const started = this.phase === Phase.Running;
    this.phase = Phase.Ended;
    this.endStatus = code ?? Status.CANCELLED;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (code !== Status.OK && !this.handlerSettled) this.signalObject?.abort(this.endReason());
    this.requests?.end();
    this.onWritable();
    // No handler ran (the request was refused or abandoned while it arrived): nothing to wait for.
    if (!started) this.onHandlerSettled();
  }

  private endReason(): Error {
    const code = this.endStatus ?? Status.CANCELLED;
    return new GrpcError(
      code,
      code === Status.DEADLINE_EXCEEDED ? "deadline exceeded" : "the call was cancelled",
    );
  }

  private onHandlerSettled(): void {
    if (this.handlerSettled) return;
    this.handlerSettled = true;
    if (this.phase !== Phase.Ended) this.finish(Status.OK, "");
    this.stream.connection.settled();
    this.host.settled(this as ServerCall<unknown>);
  }

  /** For the server: ends the call (deadline, shutdown) as if by `finish`, or resets its stream. */
  cancel(code: number, message: string, reset: boolean): void {
    if (this.phase === Phase.Ended) return;
    if (reset) {
      this.stream.reset(8 /* CANCEL */);
      this.end(code);
    } else {
      this.finish(code, message);
    }
  }
}

function onDeadline(call: ServerCall<unknown>): void {
  call.cancel(Status.DEADLINE_EXCEEDED, "Deadline exceeded", false);
}

/**
 * The request messages of a client- or bidi-streaming call, in order, as an async
 * iterable. Iteration ends when the client ends its side, and throws a GrpcError when the
 * call ends first (cancelled, deadline). The client is granted window for more only as
 * messages are taken.
 */
export class RequestStream<Req> implements AsyncIterable<Req> {
  private readonly queue: { message: Req; bytes: number }[] = [];
  private queuedBytes = 0;
  /** Bytes received but not yet returned to the client as window. */
  private held = 0;
  private done = false;
  private waiter: (() => void) | undefined;

  constructor(
    private readonly call: ServerCall<unknown>,
    private readonly stream: Http2Stream,
  ) {}

  /** For the call: bytes of body received (returned as window when read). */
  received(bytes: number): void {
    this.held += bytes;
    this.release();
  }

  push(message: Req, bytes: number): void {
    this.queue.push({ message, bytes });
    this.queuedBytes += bytes;
    this.wake();
  }

  end(): void {
    this.done = true;
    this.wake();
  }

  /** The next message, or undefined at the end of the client's stream. */
  async next(): Promise<Req | undefined> {
    for (;;) {
      const head = this.queue.shift();
      if (head !== undefined) {
        this.queuedBytes -= head.bytes;
        this.release();
        return head.message;
      }
      if (this.done) {
        if (this.call.ended && this.call.endStatus !== Status.OK) {
          throw new GrpcError(this.call.endStatus ?? Status.CANCELLED, "the call ended");
        }
        return undefined;
      }
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Req> {
    for (;;) {
      const m = await this.next();
      if (m === undefined) return;
      yield m;
    }
  }

  /** Returns window for what was received, while the unread messages are few. */
  private release(): void {
    if (this.queuedBytes >= REQUEST_BUFFER_BYTES || this.held === 0) return;
    this.stream.consumed(this.held);
    this.held = 0;
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
