/**
 * GrpcServer: gRPC over HTTP/2 on KV Engine's own HTTP/2 layer (./http2), over plaintext
 * TCP or TLS (ALPN h2; mutual TLS when a client CA is given). Services are registered
 * before `listen` as descriptors and implementations (method.ts); every call is
 * dispatched by its :path.
 *
 * What a request must be (gRPC over HTTP/2), and what it gets otherwise:
 * - :method POST, else HTTP 405; content-type application/grpc (or application/grpc+proto,
 *   application/grpc;...), else HTTP 415. `te: trailers` is not required (as in grpc-go
 *   and grpc-js); any other te value is malformed HTTP/2 (RST_STREAM PROTOCOL_ERROR).
 * - a known :path, else UNIMPLEMENTED; no grpc-encoding other than identity, else
 *   UNIMPLEMENTED (with grpc-accept-encoding: identity); a message with the compressed
 *   flag set is INTERNAL (no compression is negotiated).
 * - grpc-timeout, when present, well-formed (else INTERNAL); the call then ends with
 *   DEADLINE_EXCEEDED when it passes, and its handler's signal fires. The deadline counts
 *   from when the request's HEADERS arrived: a request that waited for a slot (below)
 *   past its deadline is DEADLINE_EXCEEDED without its handler running.
 * - header fields within maxHeaderListSize (else RESOURCE_EXHAUSTED); messages within
 *   maxReceiveMessageBytes (else RESOURCE_EXHAUSTED, before the message is buffered).
 * - `authorize(path, metadata)`, when set, may refuse it (its status, usually UNAUTHENTICATED).
 * Every such refusal is a trailers-only response; the handler never runs.
 *
 * How many calls run at once: at most `maxConcurrentStreams` per connection, and at most
 * `maxConcurrentCalls` over all connections, except that each connection may always run
 * `reservedCallsPerConnection` (http2/admission.ts); a request past these waits, unstarted,
 * for a slot, and the connections with requests waiting take turns. So a flood of calls on
 * some connections (thousands of scans) does not delay another connection's first
 * `reservedCallsPerConnection` calls at all, and its further ones by at most its turn.
 *
 * Shutdown contract: `shutdown(graceMs)` stops accepting connections, sends GOAWAY on
 * every connection (calls in flight go on; new ones are refused), waits up to `graceMs`
 * for the calls to finish, then ends the rest (RST_STREAM CANCEL: their handlers' signals
 * fire) and closes the connections, and resolves once every handler has settled.
 */
import * as net from "node:net";
import * as tls from "node:tls";
import { Admission } from "./http2/admission.js";
import { Http2ServerConnection } from "./http2/connection.js";
import {
  DEFAULT_HTTP2_OPTIONS,
  type Http2ConnectionOptions,
  type Http2Handler,
} from "./http2/connection-options.js";
import type { RequestHead } from "./http2/request-head.js";
import type { Http2Stream } from "./http2/stream.js";
import { Metadata } from "./metadata.js";
import type { MethodDescriptor, ServiceDescriptor, ServiceImplementation } from "./method.js";
import { type CallHost, ServerCall } from "./server-call.js";
import { type CallStatus, Status, statusName } from "./status.js";
import { parseGrpcTimeout } from "./timeout.js";
import { httpErrorBlock, statusBlock, unsupportedEncodingBlock } from "./wire-headers.js";

/** PEM contents of the server's identity and, for mutual TLS, the CA of client certificates. */
export interface GrpcTlsOptions {
  cert: string | Uint8Array;
  key: string | Uint8Array;
  clientCa?: string | Uint8Array;
}

export interface GrpcServerOptions extends Partial<Http2ConnectionOptions> {
  host: string;
  port: number;
  tls?: GrpcTlsOptions;
  /** Largest request message, in bytes. Default 4 MiB. */
  maxReceiveMessageBytes?: number;
  /** Calls running at once over all connections (but see the reserve). Default 256. */
  maxConcurrentCalls?: number;
  /** Calls each connection may run even past maxConcurrentCalls. Default 4. */
  reservedCallsPerConnection?: number;
  /** Refuses a call before its handler runs, by returning a status. */
  authorize?: (path: string, metadata: Metadata) => CallStatus | undefined;
  /** The status of an error a handler threw that is not a GrpcError (default: UNKNOWN). */
  errorStatus?: (err: unknown) => CallStatus;
  /** Told of every call that ended: its method path, status and milliseconds taken. */
  onCallEnd?: (path: string, code: number, durationMs: number) => void;
}

export const DEFAULT_MAX_CONCURRENT_CALLS = 256;
export const DEFAULT_RESERVED_CALLS_PER_CONNECTION = 4;

interface Route {
  method: MethodDescriptor;
  handler: (...args: never[]) => unknown;
}

export interface GrpcServerStats {
  connections: number;
  /** Calls whose handler has not settled. */
  callsInFlight: number;
  /** Connections with requests waiting for a slot (maxConcurrentCalls). */
  connectionsWaiting: number;
  /** Connections closed by the server for breaking the protocol or its limits. */
  connectionsRefused: number;
}

export class GrpcServer implements CallHost {
  private readonly routes = new Map<string, Route>();
  private readonly services: ServiceDescriptor[] = [];
  private readonly http2: Http2ConnectionOptions;
  private readonly admission: Admission;
  readonly maxReceiveMessageBytes: number;
  private listener: net.Server | undefined;
  private readonly connections = new Set<Http2ServerConnection>();
  private readonly calls = new Set<ServerCall<unknown>>();
  private idleWaiters: (() => void)[] = [];
  private stopping: Promise<void> | undefined;
  private refused = 0;
  /** The port listened on (after `listen`). */
  port = 0;

  constructor(private readonly options: GrpcServerOptions) {
    const http2: Http2ConnectionOptions = { ...DEFAULT_HTTP2_OPTIONS };
    for (const key of Object.keys(DEFAULT_HTTP2_OPTIONS) as (keyof Http2ConnectionOptions)[]) {
      const v = options[key];
      if (v !== undefined) http2[key] = v;
    }
    this.http2 = http2;
    this.maxReceiveMessageBytes = options.maxReceiveMessageBytes ?? 4 * 1024 * 1024;
    this.admission = new Admission(
      options.maxConcurrentCalls ?? DEFAULT_MAX_CONCURRENT_CALLS,
      options.reservedCallsPerConnection ?? DEFAULT_RESERVED_CALLS_PER_CONNECTION,
    );
  }

  /** Registers a service (before `listen`). Throws if a path is already taken. */
  addService<S extends ServiceDescriptor>(
    service: S,
    implementation: ServiceImplementation<S>,
  ): void {
    for (const [key, method] of Object.entries(service.methods)) {
      if (this.routes.has(method.path)) throw new Error(`${method.path} is registered twice`);
      const handler = (implementation as Record<string, Route["handler"]>)[key];
      if (typeof handler !== "function") throw new Error(`no handler for ${method.path}`);
      this.routes.set(method.path, { method, handler });
    }
    this.services.push(service);
  }

  /** The services registered, in order (for reflection). */
  get registeredServices(): readonly ServiceDescriptor[] {
    return this.services;
  }

  /** Starts listening; resolves with the port once connections are accepted. */
  async listen(): Promise<number> {
    const { host, port } = this.options;
    const server =
      this.options.tls === undefined ? net.createServer() : this.tlsServer(this.options.tls);
    const event = this.options.tls === undefined ? "connection" : "secureConnection";
    server.on(event, (socket: net.Socket) => this.accept(socket));
    server.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host.replace(/^\[|\]$/g, ""), () => {
        server.off("error", reject);
        resolve();
      });
    });
    this.listener = server;
    const address = server.address();
    this.port = typeof address === "object" && address !== null ? address.port : port;
    return this.port;
  }

  stats(): GrpcServerStats {
    return {
      connections: this.connections.size,
      callsInFlight: this.calls.size,
      connectionsWaiting: this.admission.waitingConnections,
      connectionsRefused: this.refused,
    };
  }

  /** See the shutdown contract above. Calling it again returns the same promise. */
  shutdown(graceMs: number): Promise<void> {
    this.stopping ??= this.doShutdown(graceMs);
    return this.stopping;
  }

  private async doShutdown(graceMs: number): Promise<void> {
    const listener = this.listener;
    const closed = new Promise<void>((resolve) => {
      if (listener === undefined) resolve();
      else listener.close(() => resolve());
    });
    for (const c of this.connections) c.shutdown();
    const idle = this.whenIdle();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([idle, graceOver]);
    clearTimeout(timer);
    for (const call of this.calls)
      call.cancel(Status.UNAVAILABLE, "the server is shutting down", true);
    for (const c of this.connections) c.destroy("server shutdown");
    await idle;
    await closed;
  }

  /** Resolves once no handler is running. */
  private whenIdle(): Promise<void> {
    if (this.calls.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private tlsServer(options: GrpcTlsOptions): tls.Server {
    const mutual = options.clientCa !== undefined;
    return tls.createServer({
      cert: pem(options.cert),
      key: pem(options.key),
      ...(mutual
        ? { ca: pem(options.clientCa!), requestCert: true, rejectUnauthorized: true }
        : {}),
      ALPNProtocols: ["h2"],
      handshakeTimeout: this.http2.handshakeTimeoutMs,
    });
  }

  private accept(socket: net.Socket): void {
    if (this.stopping !== undefined) {
      socket.destroy();
      return;
    }
    if (
      socket instanceof tls.TLSSocket &&
      socket.alpnProtocol !== "h2" &&
      socket.alpnProtocol !== false
    ) {
      socket.destroy();
      return;
    }
    const handler = new ConnectionHandler(this);
    const connection = new Http2ServerConnection(socket, this.http2, handler, this.admission);
    handler.connection = connection;
    this.connections.add(connection);
  }

  // ---- for ConnectionHandler and ServerCall ----

  /** A connection closed. */
  connectionClosed(connection: Http2ServerConnection): void {
    this.connections.delete(connection);
    if (connection.closeReason !== undefined && /^[A-Z_]+: /.test(connection.closeReason))
      this.refused++;
  }

  statusOf(err: unknown): CallStatus {
    if (this.options.errorStatus !== undefined) return this.options.errorStatus(err);
    return { code: Status.UNKNOWN, message: err instanceof Error ? err.message : String(err) };
  }

  settled(call: ServerCall<unknown>): void {
    this.calls.delete(call);
    this.options.onCallEnd?.(
      call.path,
      call.endStatus ?? Status.UNKNOWN,
      performance.now() - call.started,
    );
    if (this.calls.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** A new request on `stream` (see Http2Handler.onStream). */
  dispatch(
    stream: Http2Stream,
    head: RequestHead | undefined,
    arrivedAt: number,
  ): ServerCall<unknown> | undefined {
    if (head === undefined) {
      refuse(
        stream,
        Status.RESOURCE_EXHAUSTED,
        `request header fields exceed ${this.http2.maxHeaderListSize} bytes`,
      );
      return undefined;
    }
    if (head.method !== "POST") {
      stream.sendHeaders(
        httpErrorBlock(405, Status.UNIMPLEMENTED, `gRPC calls are POST, not ${head.method}`),
        true,
      );
      return undefined;
    }
    let contentType: string | undefined;
    let timeout: string | undefined;
    let encoding: string | undefined;
    const fields = head.fields;
    for (let i = 0; i < fields.length; i += 2) {
      const name = fields[i]!;
      if (name === "content-type") contentType = fields[i + 1];
      else if (name === "grpc-timeout") timeout = fields[i + 1];
      else if (name === "grpc-encoding") encoding = fields[i + 1];
    }
    if (contentType === undefined || !isGrpcContentType(contentType)) {
      stream.sendHeaders(
        httpErrorBlock(
          415,
          Status.INTERNAL,
          `content-type ${contentType ?? "(none)"} is not application/grpc`,
        ),
        true,
      );
      return undefined;
    }
    const route = this.routes.get(head.path);
    if (route === undefined) {
      refuse(stream, Status.UNIMPLEMENTED, `unknown method ${head.path}`);
      return undefined;
    }
    if (encoding !== undefined && encoding !== "identity") {
      stream.sendHeaders(
        unsupportedEncodingBlock(`grpc-encoding ${encoding} is not supported`),
        true,
      );
      return undefined;
    }
    let deadline: number | undefined;
    if (timeout !== undefined) {
      const ms = parseGrpcTimeout(timeout);
      if (ms === undefined) {
        refuse(stream, Status.INTERNAL, `malformed grpc-timeout ${JSON.stringify(timeout)}`);
        return undefined;
      }
      deadline = arrivedAt + ms;
      if (deadline <= Date.now()) {
        refuse(stream, Status.DEADLINE_EXCEEDED, "Deadline exceeded before the call started");
        return undefined;
      }
    }
    const authorize = this.options.authorize;
    if (authorize !== undefined) {
      const refusal = authorize(head.path, Metadata.fromFields(fields));
      if (refusal !== undefined) {
        refuse(stream, refusal.code, refusal.message);
        return undefined;
      }
    }
    const call = new ServerCall<unknown>(this, stream, head, route.method, route.handler, deadline);
    this.calls.add(call);
    return call;
  }
}

/** The gRPC side of one HTTP/2 connection. */
class ConnectionHandler implements Http2Handler {
  connection!: Http2ServerConnection;

  constructor(private readonly server: GrpcServer) {}

  onStream(
    stream: Http2Stream,
    head: RequestHead | undefined,
    endStream: boolean,
    arrivedAt: number,
  ): void {
    const call = this.server.dispatch(stream, head, arrivedAt);
    if (call === undefined) {
      this.connection.settled();
      return;
    }
    if (endStream) call.onData(undefined, true);
  }

  onClose(): void {
    this.server.connectionClosed(this.connection);
  }
}

function refuse(stream: Http2Stream, code: number, message: string): void {
  stream.sendHeaders(statusBlock(code, message, undefined, true), true);
}

function isGrpcContentType(value: string): boolean {
  if (!value.startsWith("application/grpc")) return false;
  const rest = value.slice("application/grpc".length);
  return rest === "" || rest === "+proto" || rest.startsWith(";") || rest.startsWith("+proto;");
}

function pem(v: string | Uint8Array): Buffer {
  return typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v);
}

export { statusName };
