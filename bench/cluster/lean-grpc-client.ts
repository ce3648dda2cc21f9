/**
 * A lean gRPC client for the load processes of the cluster benchmarks: the product's own
 * HTTP/2 client path (src/grpc/grpc-client.ts over src/grpc/http2/client-connection.ts,
 * which KvClient uses too), over one node:net socket (cleartext, prior knowledge), sending
 * calls at once without waiting for the server's SETTINGS. It drives kv-engine and etcd
 * alike (each with its own messages), and
 * costs the 2-core machine far less CPU per call than node:http2's client did (against one
 * server, 64 gets in flight: ~3-4 µs against ~48 for kv-engine, ~9-11 against ~66-82 for
 * etcd; ~130-140 µs in the cluster runs), so that the cluster figures say more about the
 * servers:
 *
 * - the request header block of a path is encoded once (literals without indexing: the
 *   same bytes every time, no encoder state) and copied into each HEADERS frame;
 * - every frame produced in one event-loop turn (the HEADERS and DATA of each call, the
 *   WINDOW_UPDATEs, ACKs) goes out in ONE socket.write (src/grpc/http2/output-queue.ts);
 * - a response message that fits in one DATA frame is a view of the socket's chunk (no
 *   copy); one that spans frames is copied once.
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
 * `grpc-timeout`; a call the server never answers rejects at its deadline. No retries, no
 * compression, no TLS.
 */
import { GrpcCallError, GrpcClient, type TransportFailure } from "../../src/grpc/grpc-client.js";

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

/** The decoded header list and response messages this client accepts. */
const MAX_RECEIVE = 1 << 30;

export class LeanGrpcClient {
  private readonly client: GrpcClient;

  constructor(
    readonly endpoint: string,
    private readonly timeoutMs: number,
    options: LeanGrpcClientOptions = {},
  ) {
    if (endpoint.lastIndexOf(":") < 0) throw new Error(`endpoint ${endpoint}: not host:port`);
    this.client = new GrpcClient(endpoint, {
      maxReceiveMessageBytes: MAX_RECEIVE,
      connection: {
        eager: true,
        streamWindow: options.streamWindow ?? 16 * 1024 * 1024,
        connectionWindow: options.connectionWindow ?? 1 << 30,
        maxHeaderListSize: 1 << 20,
      },
    });
  }

  /**
   * Calls `path` with one request message; resolves to the response's messages (one for a
   * unary call, any number for server streaming) once grpc-status is 0; rejects otherwise.
   */
  call(path: string, request: Uint8Array): Promise<Buffer[]> {
    return this.client
      .collect(path, request, { timeoutMs: Math.max(1, Math.ceil(this.timeoutMs)) })
      .catch((err: unknown) => {
        throw leanError(path, this.endpoint, this.timeoutMs, err);
      });
  }

  /** Connections opened so far (for tests). */
  get connections(): number {
    return this.client.connections;
  }

  /** Whether a connection is open that takes new calls (for tests). */
  get connected(): boolean {
    return this.client.connected;
  }

  /** Closes the connection; calls still outstanding reject. */
  close(): void {
    this.client.close();
  }
}

/** A GrpcCallError as the load clients count and print it. */
function leanError(path: string, endpoint: string, timeoutMs: number, err: unknown): Error {
  if (!(err instanceof GrpcCallError)) return err instanceof Error ? err : new Error(String(err));
  const t: TransportFailure | undefined = err.transport;
  if (t === undefined) {
    return new LeanGrpcError(`${path}: grpc-status ${err.code} ${err.details}`, err.code);
  }
  switch (t.kind) {
    case "no-connection":
    case "not-http2":
    case "closed-early":
    case "lost":
      return new LeanGrpcError(`${path}: connection to ${endpoint}: ${t.why}`, undefined);
    case "deadline":
      return new LeanGrpcError(`${path}: no answer within ${timeoutMs} ms`, undefined);
    default:
      return new LeanGrpcError(`${path}: ${t.why}`, undefined);
  }
}
