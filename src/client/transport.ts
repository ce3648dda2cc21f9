/**
 * The seam between the clients (KvClient, AdminClient) and the wire: one call attempt to
 * one endpoint, unary, server-streaming or bidirectional, failing with a KvClientError in the client's
 * words (call-failure.ts). Two implementations: "lean", our own HTTP/2 client path
 * (lean-transport.ts, the default), and "grpc-js" (grpc-js-transport.ts, kept behind
 * KvClientOptions.transport for one release).
 */
import { status } from "@grpc/grpc-js";
import type { CallContext } from "./call-failure.js";
import { type Endpoint, schemeTls } from "./endpoints.js";
import { KvClientError } from "./kv-client-error.js";

/** PEM contents (not paths). */
export interface ClientTlsOptions {
  /** CA certificates to trust (default: the system's roots). */
  ca?: string | Uint8Array;
  /** Client certificate and key, for servers that require mutual TLS. */
  cert?: string | Uint8Array;
  key?: string | Uint8Array;
  /** Name to check the server's certificate against, when not the address's host. */
  serverName?: string;
}

/** The transports: "lean" (our own HTTP/2 client, the default) or "grpc-js". */
export type TransportName = "lean" | "grpc-js";

/** A unary method: its path and how its messages are encoded. */
export interface UnaryMethod<Req, Res> {
  path: string;
  requestSerialize: (r: Req) => Buffer;
  responseDeserialize: (b: Buffer) => Res;
}

/** What the transports are set up with (transportSettings). */
export interface TransportSettings {
  /** TLS (undefined: plaintext). */
  readonly tls: ClientTlsOptions | undefined;
  /** Sent as `authorization: Bearer <token>` on every call. */
  readonly authToken: string | undefined;
  readonly maxReceiveMessageBytes: number;
}

/** A server-streaming call: its messages (iterating throws a KvClientError); `cancel` ends it. */
export interface TransportStream<Res> extends AsyncIterable<Res> {
  cancel(): void;
}

/**
 * A bidirectional call: its response messages (iterating throws a KvClientError);
 * `write` sends a request message (false once the call is over: nothing sent), `end`
 * half-closes this side, `cancel` ends it.
 */
export interface TransportBidi<Req, Res> extends TransportStream<Res> {
  write(request: Req): boolean;
  end(): void;
}

export interface CallTransport {
  /**
   * One unary call to `endpoint` (deadline: a Date.now() time); rejects with a
   * KvClientError. `signal` cancels it (it then fails CANCELLED).
   */
  unary<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadline: number | undefined,
    context: CallContext,
    signal?: AbortSignal,
  ): Promise<Res>;
  /** One server-streaming call to `endpoint`. */
  serverStream<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    request: Req,
    deadline: number | undefined,
    context: CallContext,
  ): TransportStream<Res>;
  /** One bidirectional call to `endpoint` (no deadline: it lasts until ended or cancelled). */
  bidiStream<Req, Res>(
    endpoint: string,
    method: UnaryMethod<Req, Res>,
    context: CallContext,
  ): TransportBidi<Req, Res>;
  /**
   * Resolves once a connection to `endpoint` is up, or has failed to come up (a call then
   * fails at once, saying why); rejects with a "no-connection" KvClientError when it is
   * still coming up at `by` (a Date.now() time: a paused member, a host that does not answer).
   */
  connected(endpoint: string, by: number): Promise<void>;
  /** Closes every connection: calls in flight fail, later ones fail at once. */
  close(): void;
}

/** The default of KvClientOptions.maxReceiveMessageBytes. */
export const DEFAULT_MAX_RECEIVE_BYTES = 64 * 1024 * 1024;

/**
 * The settings of `options` for `endpoints`: TLS when options.tls is given or the
 * addresses are https://. Throws a TypeError for http:// addresses with TLS options.
 */
export function transportSettings(
  endpoints: readonly Endpoint[],
  options: { tls?: ClientTlsOptions; authToken?: string; maxReceiveMessageBytes?: number },
): TransportSettings {
  const scheme = schemeTls(endpoints);
  if (scheme === false && options.tls !== undefined) {
    throw new TypeError("http:// addresses with TLS options: use https://, or no scheme");
  }
  return {
    tls: options.tls ?? (scheme === true ? {} : undefined),
    authToken: options.authToken,
    maxReceiveMessageBytes: options.maxReceiveMessageBytes ?? DEFAULT_MAX_RECEIVE_BYTES,
  };
}

/**
 * One connection (channel, client) per endpoint, made at its first use; after `close()`
 * none is made, and asking for one throws a CANCELLED KvClientError.
 */
export class PerEndpoint<C extends { close(): void }> {
  private readonly map = new Map<string, C>();
  private closed = false;

  constructor(private readonly make: (endpoint: string) => C) {}

  get(endpoint: string): C {
    if (this.closed) throw new KvClientError(status.CANCELLED, "the client is closed");
    let c = this.map.get(endpoint);
    if (c === undefined) {
      c = this.make(endpoint);
      this.map.set(endpoint, c);
    }
    return c;
  }

  close(): void {
    this.closed = true;
    for (const c of this.map.values()) c.close();
    this.map.clear();
  }
}

/** Checks `name` (from options, the CLI or code without types). */
export function transportName(name: unknown): TransportName {
  if (name === undefined || name === "lean") return "lean";
  if (name === "grpc-js") return "grpc-js";
  throw new TypeError(`transport must be "lean" or "grpc-js", got ${String(name)}`);
}
