/**
 * CallRunner: what every client of this package (KvClient, EtcdClient) does with a call
 * before the wire: the endpoints, the one calls go to (the one that last answered), the
 * transport, the default deadline, and a unary call's attempts, retried as its kind
 * allows (retry-policy.ts, call-attempts.ts).
 *
 * Failures are KvClientErrors in the client's words (call-failure.ts), passed through
 * `refine` (a client's own reading of its server's answers: EtcdClient's etcd codes)
 * before the retry policy sees them.
 */
import { type Attempt, CallAttempts } from "./call-attempts.js";
import { type CallContext, toClientError } from "./call-failure.js";
import { parseEndpointList } from "./endpoints.js";
import { GrpcJsTransport } from "./grpc-js-transport.js";
import type { KvClientError } from "./kv-client-error.js";
import { LeanTransport } from "./lean-transport.js";
import type { CallKind } from "./retry-policy.js";
import {
  type CallTransport,
  type ClientTlsOptions,
  type TransportName,
  type TransportSettings,
  transportName,
  transportSettings,
  type UnaryMethod,
} from "./transport.js";

/** The options every client takes (KvClientOptions, EtcdClientOptions). */
export interface ClientOptions {
  /** Connect with TLS (default: plaintext). */
  tls?: ClientTlsOptions;
  /** Sent as `authorization: Bearer <token>` on every call. */
  authToken?: string;
  /** Default deadline of each call, in milliseconds from its start (default: none). */
  timeoutMs?: number;
  /** Largest response message accepted (bytes). Default 64 MiB (DEFAULT_MAX_RECEIVE_BYTES). */
  maxReceiveMessageBytes?: number;
  /**
   * Attempts per call, the first included, always within the call's deadline. Default: 1
   * with one endpoint, else ten times the number of endpoints.
   */
  maxAttempts?: number;
  /**
   * Milliseconds to wait before an endpoint is tried again within one call (after every
   * endpoint failed once), doubling each time up to 1 s. Default 50.
   */
  retryDelayMs?: number;
  /**
   * The transport: "lean", our own HTTP/2 client path (the default), or "grpc-js" (kept
   * for one release, then removed). Both take the same options and fail alike.
   */
  transport?: TransportName;
}

export interface CallOptions {
  /** Deadline of this call in milliseconds from now (overrides the client's default). */
  timeoutMs?: number;
}

/** Options of a call that can be cancelled. */
export interface SignalOptions extends CallOptions {
  /** Cancels the call when it fires (it then fails CANCELLED; the etcd client: ABORTED). */
  signal?: AbortSignal;
}

/**
 * KV_CLIENT_TRANSPORT ("lean" or "grpc-js"), the default transport of clients whose
 * options name none (the CLI's, and test suites run under each transport).
 */
function transportFromEnvironment(): TransportName | undefined {
  const v = process.env.KV_CLIENT_TRANSPORT;
  return v === undefined || v === "" ? undefined : transportName(v);
}

/** The transport `options` ask for, set up for `settings`. */
export function makeTransport(
  settings: TransportSettings,
  options: { transport?: TransportName },
): CallTransport {
  return transportName(options.transport ?? transportFromEnvironment()) === "grpc-js"
    ? new GrpcJsTransport(settings)
    : new LeanTransport(settings);
}

export class CallRunner {
  /** The endpoints given, in order. */
  readonly endpoints: readonly string[];
  readonly transport: CallTransport;
  /** The default deadline of a call (undefined: none). */
  readonly timeoutMs: number | undefined;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  /** The endpoint calls go to (the one that last answered). */
  current: string;

  /**
   * Throws a TypeError naming the expected form for a malformed address, a RangeError for
   * a bad maxAttempts. No connection is made until the first call.
   */
  constructor(
    address: string | readonly string[],
    options: ClientOptions,
    private readonly refine: (e: KvClientError) => KvClientError = (e) => e,
  ) {
    const endpoints = parseEndpointList(address);
    this.endpoints = endpoints.map((e) => e.address);
    this.current = this.endpoints[0]!;
    this.transport = makeTransport(transportSettings(endpoints, options), options);
    this.timeoutMs = options.timeoutMs;
    const n = this.endpoints.length;
    const attempts = options.maxAttempts ?? (n === 1 ? 1 : 10 * n);
    if (!Number.isSafeInteger(attempts) || attempts < 1) {
      throw new RangeError(`maxAttempts must be a positive integer, got ${attempts}`);
    }
    this.maxAttempts = attempts;
    this.retryDelayMs = options.retryDelayMs ?? 50;
  }

  /** The attempts of one call (call-attempts.ts). */
  attempts(kind: CallKind, options: CallOptions | undefined): CallAttempts {
    return new CallAttempts(kind, {
      endpoints: this.endpoints,
      first: this.current,
      maxAttempts: this.maxAttempts,
      retryDelayMs: this.retryDelayMs,
      timeoutMs: options?.timeoutMs ?? this.timeoutMs,
    });
  }

  /** `err` as a KvClientError of this client (refined). */
  error(err: unknown, context?: CallContext): KvClientError {
    return this.refine(toClientError(err, context));
  }

  /**
   * A unary call, retried as its kind allows; resolves with the answer and makes its
   * endpoint the current one.
   */
  async unary<Req, Res>(
    kind: CallKind,
    method: UnaryMethod<Req, Res>,
    request: Req,
    options: SignalOptions | undefined,
  ): Promise<Res> {
    const attempts = this.attempts(kind, options);
    for (;;) {
      const attempt = attempts.next();
      try {
        const res = await this.once(attempt, kind, method, request, options?.signal);
        this.current = attempt.endpoint;
        return res;
      } catch (err) {
        await attempts.failed(attempt, this.error(err));
      }
    }
  }

  /** One call to `endpoint`, not retried. */
  unaryAt<Req, Res>(
    endpoint: string,
    kind: CallKind,
    method: UnaryMethod<Req, Res>,
    request: Req,
    options: CallOptions | undefined,
  ): Promise<Res> {
    const ms = options?.timeoutMs ?? this.timeoutMs;
    const deadline = ms === undefined ? undefined : Date.now() + ms;
    const attempt = { endpoint, deadline, timeoutMs: ms, partial: false, connectBy: undefined };
    return this.once(attempt, kind, method, request).catch((err: unknown) => {
      throw this.error(err);
    });
  }

  /** One attempt; rejects with a KvClientError in the client's words (call-failure.ts). */
  async once<Req, Res>(
    attempt: Attempt,
    kind: CallKind,
    method: UnaryMethod<Req, Res>,
    request: Req,
    signal?: AbortSignal,
  ): Promise<Res> {
    const context = contextOf(attempt, method.path, kind);
    if (attempt.connectBy !== undefined) {
      await this.transport.connected(attempt.endpoint, attempt.connectBy);
    }
    return this.transport.unary(
      attempt.endpoint,
      method,
      request,
      attempt.deadline,
      context,
      signal,
    );
  }

  /** The endpoint after `endpoint` in the list (wrapping). */
  nextEndpoint(endpoint: string): string {
    const i = this.endpoints.indexOf(endpoint);
    return this.endpoints[(i + 1) % this.endpoints.length]!;
  }

  /** Closes the connections. Calls started later fail; calls in flight are not waited for. */
  close(): void {
    this.transport.close();
  }
}

export function contextOf(attempt: Attempt, path: string, kind: CallKind): CallContext {
  return { endpoint: attempt.endpoint, path, kind, timeoutMs: attempt.timeoutMs };
}
