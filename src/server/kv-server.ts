/**
 * KvServer: kv.v1.KvService over one open store (a KvBackend: the local KvStore, or any
 * store offering the same calls), plus the standard health service and server reflection,
 * on one address. The server does not own the store: whoever opened it closes it after
 * `shutdown()` (the CLI does).
 *
 * Shutdown contract: stop accepting connections and calls, let calls in flight finish for
 * up to `graceMs`, then cancel the rest (scans release their iterators), and resolve once
 * every handler has settled, so the store can then be closed cleanly.
 */
import { type ChannelOptions, Server, ServerCredentials } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation } from "grpc-health-check";
import type { KvBackend } from "../db/kv-backend.js";
import {
  KV_SERVICE_NAME,
  kvFileDescriptor,
  kvServiceDefinition,
} from "../proto/kv-service-definition.js";
import { bearerTokenInterceptor } from "./bearer-token.js";
import { type CallObserver, kvServiceHandlers } from "./kv-service.js";
import { resolveLimits, type ServerLimits } from "./limits.js";
import type { ScanCounters } from "./scan-stream.js";

/** PEM contents (not paths) of the server's TLS identity and, for mutual TLS, the client CA. */
export interface TlsOptions {
  cert: string | Uint8Array;
  key: string | Uint8Array;
  /** When set, clients must present a certificate signed by this CA (mutual TLS). */
  clientCa?: string | Uint8Array;
}

export interface KvServerOptions {
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
}

export interface ServerStats {
  scans: ScanCounters;
  /** Calls whose handler has not settled yet. */
  callsInFlight: number;
}

export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_PORT = 50051;
export const DEFAULT_SHUTDOWN_GRACE_MS = 5000;

export class KvServer {
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    private readonly health: HealthImplementation,
    private readonly inFlight: Set<Promise<unknown>>,
    private readonly counters: ScanCounters,
    /** The interface listened on. */
    readonly host: string,
    /** The port listened on (the chosen one when 0 was asked for). */
    readonly port: number,
    readonly limits: Readonly<ServerLimits>,
  ) {}

  /** Starts serving `store`; resolves once the server accepts calls. */
  static async start(store: KvBackend, options: KvServerOptions = {}): Promise<KvServer> {
    const limits = resolveLimits(options.limits);
    const host = options.host ?? DEFAULT_HOST;
    const port = options.port ?? DEFAULT_PORT;
    const serverOptions: ChannelOptions = {
      "grpc.max_receive_message_length": limits.maxReceiveMessageBytes,
      "grpc.max_concurrent_streams": limits.maxConcurrentStreams,
    };
    const server = new Server({
      ...serverOptions,
      interceptors:
        options.authToken === undefined ? [] : [bearerTokenInterceptor(options.authToken)],
    });
    const counters: ScanCounters = { active: 0, rowsSent: 0, bytesSent: 0 };
    const inFlight = new Set<Promise<unknown>>();
    const track = <T>(work: Promise<T>): Promise<T> => {
      inFlight.add(work);
      void work.finally(() => inFlight.delete(work)).catch(() => {});
      return work;
    };
    server.addService(kvServiceDefinition, {
      ...kvServiceHandlers(store, limits, counters, track, options.onCall),
    });
    const health = new HealthImplementation({ "": "SERVING", [KV_SERVICE_NAME]: "SERVING" });
    health.addToServer(server);
    reflectionFor(KV_SERVICE_NAME, kvFileDescriptor()).addToServer(server);
    let bound: number;
    try {
      bound = await new Promise<number>((resolve, reject) => {
        server.bindAsync(hostPort(host, port), credentials(options.tls), (err, p) =>
          err === null ? resolve(p) : reject(err),
        );
      });
    } catch (err) {
      server.forceShutdown();
      throw new Error(`cannot listen on ${hostPort(host, port)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    return new KvServer(server, health, inFlight, counters, host, bound, limits);
  }

  /** "host:port" (IPv6 hosts in brackets), as clients dial it. */
  get address(): string {
    return hostPort(this.host, this.port);
  }

  stats(): ServerStats {
    return { scans: { ...this.counters }, callsInFlight: this.inFlight.size };
  }

  /** See the shutdown contract above. Calling it again returns the same promise. */
  shutdown(graceMs = DEFAULT_SHUTDOWN_GRACE_MS): Promise<void> {
    this.stopping ??= this.doShutdown(graceMs);
    return this.stopping;
  }

  private async doShutdown(graceMs: number): Promise<void> {
    this.health.setStatus("", "NOT_SERVING");
    this.health.setStatus(KV_SERVICE_NAME, "NOT_SERVING");
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    // Cancelled calls settle promptly (scans close their iterators on cancellation);
    // writes already handed to the store finish there.
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }
}

/** "host:port", with IPv6 literals bracketed. */
export function hostPort(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

function pem(v: string | Uint8Array): Buffer {
  return typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v);
}

function credentials(tls: TlsOptions | undefined): ServerCredentials {
  if (tls === undefined) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(
    tls.clientCa === undefined ? null : pem(tls.clientCa),
    [{ private_key: pem(tls.key), cert_chain: pem(tls.cert) }],
    tls.clientCa !== undefined,
  );
}

/**
 * Server reflection for one service, from the file descriptor embedded in the generated
 * code (so grpcurl and similar tools work without the .proto file).
 */
function reflectionFor(service: string, fileDescriptor: Uint8Array): ReflectionService {
  const definition: ConstructorParameters<typeof ReflectionService>[0] = {
    [service]: {
      format: "Protocol Buffer 3 DescriptorProto",
      type: {},
      fileDescriptorProtos: [Buffer.from(fileDescriptor)],
    },
  };
  return new ReflectionService(definition);
}
