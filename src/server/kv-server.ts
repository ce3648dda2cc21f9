/**
 * KvServer: kv.v1.KvService over one open store (a KvBackend: the local KvStore, or any
 * store offering the same calls), kv.v1.AdminService when given an AdminBackend
 * (admin-service.ts), plus the standard health service and
 * server reflection (v1 and v1alpha, listing every service), on one address, carried by
 * the lean gRPC path (default) or by grpc-js (`transport`). The server does not own the store: whoever opened it
 * closes it after `shutdown()` (the CLI does).
 *
 * Shutdown contract: stop accepting connections and calls, let calls in flight finish for
 * up to `graceMs`, then cancel the rest (scans release their iterators), and resolve once
 * every handler has settled, so the store can then be closed cleanly.
 */
import type { AdminBackend } from "../db/admin-backend.js";
import type { KvBackend } from "../db/kv-backend.js";
import type { GrpcServer } from "../grpc/grpc-server.js";
import { startGrpcJsTransport } from "./grpc-js-transport.js";
import type { CallObserver } from "./kv-service.js";
import { startLeanTransport } from "./lean-transport.js";
import { resolveLimits, type ServerLimits } from "./limits.js";
import type { ScanCounters } from "./scan-stream.js";

/** PEM contents (not paths) of the server's TLS identity and, for mutual TLS, the client CA. */
export interface TlsOptions {
  cert: string | Uint8Array;
  key: string | Uint8Array;
  /** When set, clients must present a certificate signed by this CA (mutual TLS). */
  clientCa?: string | Uint8Array;
}

/**
 * Which gRPC server carries the calls: "lean" (default), KV Engine's own gRPC over HTTP/2
 * (src/grpc), or "grpc-js", the @grpc/grpc-js server (kept for one release to compare).
 */
export type ServerTransportName = "lean" | "grpc-js";

export const TRANSPORTS: readonly ServerTransportName[] = ["lean", "grpc-js"];

export interface KvServerOptions {
  /** Default "lean". */
  transport?: ServerTransportName;
  /** Interface to listen on. Default "127.0.0.1" (loopback only). */
  host?: string;
  /** TCP port; 0 picks a free one (read it from `port`). Default 50051. */
  port?: number;
  /** Serve TLS (default: plaintext). */
  tls?: TlsOptions;
  /** Require `authorization: Bearer <token>` on every call except health checks. */
  authToken?: string;
  limits?: Partial<ServerLimits>;
  /** Told of every finished KvService call (method, status, duration), e.g. for metrics. */
  onCall?: CallObserver;
  /**
   * Answer before the call's deadline (see call-deadline.ts): at most this many
   * milliseconds before it, the store is told to stop waiting, so that its own error
   * reaches the client. Default 0 (the store waits until the deadline); cluster members
   * use 100.
   */
  deadlineMarginMs?: number;
  /**
   * Registers more services on the lean path's server before it listens (the cluster
   * service); they are behind the token like the KV service. Lean transport only.
   */
  registerServices?: (server: Pick<GrpcServer, "addService">) => void;
  /** Health names set to SERVING or NOT_SERVING with the server's own (besides "" and kv.v1.KvService). */
  healthServices?: readonly string[];
  /** The health status at start. Default true (SERVING); see `KvServer.setServing`. */
  serving?: boolean;
  /**
   * Serve kv.v1.AdminService (checkpoint, compactRange, flush, stats; admin-service.ts)
   * over this backend, usually the store being served; behind `authToken` like the rest.
   * Default: not served.
   */
  admin?: AdminBackend;
  /** The directory the admin service's checkpoints go under (default: Checkpoint refused). */
  backupDir?: string;
}

export interface ServerStats {
  scans: ScanCounters;
  /** Calls whose handler has not settled yet. */
  callsInFlight: number;
  /** Client connections the server holds open, preface not yet received included (lean transport only). */
  connections?: number;
}

/** What KvServer needs of a transport (lean-transport.ts, grpc-js-transport.ts). */
export interface ServerTransport {
  /** The port listened on. */
  readonly port: number;
  callsInFlight(): number;
  /** Sets the health status of "" and every service served. */
  setServing(serving: boolean): void;
  /** Client connections open, when the transport knows. */
  connections?(): number;
  /** Health NOT_SERVING, then the shutdown contract of KvServer. */
  shutdown(graceMs: number): Promise<void>;
}

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 50051;
export const DEFAULT_SHUTDOWN_GRACE_MS = 5000;

export class KvServer {
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly transport: ServerTransport,
    private readonly counters: ScanCounters,
    /** The interface listened on. */
    readonly host: string,
    readonly limits: Readonly<ServerLimits>,
    /** Which gRPC server carries the calls. */
    readonly transportName: ServerTransportName,
  ) {}

  /** Starts serving `store`; resolves once the server accepts calls. */
  static async start(store: KvBackend, options: KvServerOptions = {}): Promise<KvServer> {
    const limits = resolveLimits(options.limits);
    const host = options.host ?? DEFAULT_HOST;
    const port = options.port ?? DEFAULT_PORT;
    const name = options.transport ?? "lean";
    if (!TRANSPORTS.includes(name)) {
      throw new RangeError(
        `transport must be one of ${TRANSPORTS.join(", ")}, got ${String(name)}`,
      );
    }
    const counters: ScanCounters = { active: 0, rowsSent: 0, bytesSent: 0 };
    if (name !== "lean" && options.registerServices !== undefined) {
      throw new RangeError("registerServices needs the lean transport");
    }
    const start = name === "lean" ? startLeanTransport : startGrpcJsTransport;
    let transport: ServerTransport;
    try {
      transport = await start(store, options, limits, counters, host, port);
    } catch (err) {
      throw new Error(`cannot listen on ${hostPort(host, port)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return new KvServer(transport, counters, host, limits, name);
  }

  /** The port listened on (the chosen one when 0 was asked for). */
  get port(): number {
    return this.transport.port;
  }

  /** "host:port" (IPv6 hosts in brackets), as clients dial it. */
  get address(): string {
    return hostPort(this.host, this.port);
  }

  stats(): ServerStats {
    const stats: ServerStats = {
      scans: { ...this.counters },
      callsInFlight: this.transport.callsInFlight(),
    };
    const connections = this.transport.connections?.();
    if (connections !== undefined) stats.connections = connections;
    return stats;
  }

  /**
   * Sets what the health service answers for the server ("") and each service: SERVING
   * or NOT_SERVING (a cluster member without a known leader). Calls are served either way.
   */
  setServing(serving: boolean): void {
    if (this.stopping === undefined) this.transport.setServing(serving);
  }

  /** See the shutdown contract above. Calling it again returns the same promise. */
  shutdown(graceMs = DEFAULT_SHUTDOWN_GRACE_MS): Promise<void> {
    this.stopping ??= this.transport.shutdown(graceMs);
    return this.stopping;
  }
}

/** "host:port", with IPv6 literals bracketed. */
export function hostPort(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}
