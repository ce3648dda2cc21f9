/**
 * etcd's Watch service (etcdserverpb.Watch, one bidirectional stream per call carrying
 * many watchers) on the lean gRPC path, over a member's WatchHub (watch-hub.ts); the
 * stream's requests and responses are watch-stream.ts's. As in etcd's server:
 *
 * - a call with the `hasleader` metadata (clientv3.WithRequireLeader) fails at once with
 *   "etcdserver: no leader" when the member knows no leader, and a running one ends with
 *   that error once the member has known none for NO_LEADER_CHECKS checks in a row;
 * - the client closing its side of the stream does not end it (responses go on until the
 *   client cancels the call);
 * - the client is read no further while the stream's flow-control window is used up.
 */
import type { GrpcServer } from "../grpc/grpc-server.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import type { CallSignal, RequestStream, ServerCall } from "../grpc/server-call.js";
import {
  file_etcd_api_etcdserverpb_rpc,
  Watch,
  type WatchRequest,
  WatchRequestSchema,
  type WatchResponse,
  WatchResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdHeaderIds } from "./etcd-backend.js";
import { EtcdError, toEtcdGrpcError } from "./etcd-errors.js";
import { DEFAULT_MAX_REQUEST_BYTES, GRPC_OVERHEAD_BYTES } from "./kv-service.js";
import type { WatchHub } from "./watch-hub.js";
import { DEFAULT_WATCH_SEND_BUFFER_BYTES, WatchStream } from "./watch-stream.js";

/** "etcdserverpb.Watch". */
export const ETCD_WATCH_SERVICE_NAME = Watch.typeName;

/** etcd's default progress notification interval: 10 minutes. */
export const DEFAULT_PROGRESS_INTERVAL_MS = 10 * 60 * 1000;
/** Consecutive checks without a leader that end a `hasleader` stream (etcd's maxNoLeaderCnt). */
export const NO_LEADER_CHECKS = 3;

/** What the Watch service needs of a member. */
export interface EtcdWatchBackend {
  /** The member's watchers and the loop that feeds them. */
  readonly hub: WatchHub;
  /** False when this member knows of no leader. */
  hasLeader(): boolean;
  /** The ids every response header carries. */
  ids(): EtcdHeaderIds;
}

export interface EtcdWatchServiceOptions {
  /** Between progress notifications to idle watchers that asked (default 10 minutes). */
  progressIntervalMs?: number;
  /**
   * etcd's --max-request-bytes: a watcher that asked for fragments gets responses at
   * least this plus GRPC_OVERHEAD_BYTES split (default DEFAULT_MAX_REQUEST_BYTES).
   */
  maxRequestBytes?: number;
  /**
   * Response bytes a Watch stream may hold beyond the client's flow-control window before
   * its watchers fall behind (default DEFAULT_WATCH_SEND_BUFFER_BYTES; see WatchStreamOptions).
   */
  sendBufferBytes?: number;
  /** Between checks for a leader of streams with `hasleader` (default 1000 ms: etcd's election timeout). */
  leaderCheckMs?: number;
}

/** etcdserverpb.Watch for the lean path. */
export const etcdWatchService = {
  name: ETCD_WATCH_SERVICE_NAME,
  file: file_etcd_api_etcdserverpb_rpc,
  methods: {
    Watch: protobufMethod(
      ETCD_WATCH_SERVICE_NAME,
      "Watch",
      "bidi_streaming",
      WatchRequestSchema,
      WatchResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

/** Resolves when `signal` fires. */
function aborted(signal: CallSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve());
  });
}

/** Registers etcdserverpb.Watch over `backend` on `server` (behind its token and TLS). */
export function registerEtcdWatch(
  server: Pick<GrpcServer, "addService">,
  backend: EtcdWatchBackend,
  options: EtcdWatchServiceOptions = {},
): void {
  const progressIntervalMs = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  const fragmentBytes =
    (options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES) + GRPC_OVERHEAD_BYTES;
  const leaderCheckMs = options.leaderCheckMs ?? 1000;

  async function watch(
    requests: RequestStream<WatchRequest>,
    call: ServerCall<WatchResponse>,
  ): Promise<void> {
    const requireLeader = call.metadata.get("hasleader")[0] === "true";
    if (requireLeader && !backend.hasLeader()) throw toEtcdGrpcError(new EtcdError("NO_LEADER"));
    const stream = new WatchStream(call, backend.hub, () => backend.ids(), {
      progressIntervalMs,
      fragmentBytes,
      sendBufferBytes: options.sendBufferBytes ?? DEFAULT_WATCH_SEND_BUFFER_BYTES,
    });
    let monitor: NodeJS.Timeout | undefined;
    const noLeader = new Promise<void>((_, reject) => {
      if (!requireLeader) return;
      let misses = 0;
      monitor = setInterval(() => {
        misses = backend.hasLeader() ? 0 : misses + 1;
        if (misses >= NO_LEADER_CHECKS) reject(new EtcdError("NO_LEADER"));
      }, leaderCheckMs);
      monitor.unref();
    });
    const reading = (async () => {
      for await (const req of requests) {
        stream.handle(req);
        if (stream.blocked) await call.whenWritable();
      }
      await aborted(call.signal);
    })();
    reading.catch(() => {});
    noLeader.catch(() => {});
    try {
      await Promise.race([reading, noLeader]);
    } catch (err) {
      throw toEtcdGrpcError(err);
    } finally {
      if (monitor !== undefined) clearInterval(monitor);
      stream.close();
    }
  }

  server.addService(etcdWatchService, { Watch: watch });
}
