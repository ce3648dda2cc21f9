/**
 * kv.v1.KvService, kv.v1.AdminService (when `admin` is given), health and reflection on the
 * lean gRPC path (src/grpc: KV Engine's own HTTP/2 layer), the default transport of
 * KvServer. The KV methods are the transport-neutral operations of kv-service.ts and
 * serveScan, the admin ones those of admin-service.ts; this file only binds them.
 */
import type { AbortSignalLike, KvBackend } from "../db/kv-backend.js";
import { GrpcServer } from "../grpc/grpc-server.js";
import { HealthService, healthService, ServingStatus } from "../grpc/health-service.js";
import { Metadata } from "../grpc/metadata.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import {
  ReflectionService,
  reflectionServiceV1,
  reflectionServiceV1alpha,
} from "../grpc/reflection-service.js";
import type { ServerCall } from "../grpc/server-call.js";
import { Status } from "../grpc/status.js";
import { ADMIN_SERVICE_NAME } from "../proto/admin-service-definition.js";
import {
  CheckpointRequestSchema,
  CheckpointResponseSchema,
  CompactRangeProgressSchema,
  CompactRangeRequestSchema,
  FlushRequestSchema,
  FlushResponseSchema,
  file_kv_v1_admin,
  StatsRequestSchema,
  StatsResponseSchema,
} from "../proto/gen/kv/v1/admin_pb.js";
import {
  CompareAndSwapRequestSchema,
  CompareAndSwapResponseSchema,
  DeleteRequestSchema,
  DeleteResponseSchema,
  file_kv_v1_kv,
  GetRequestSchema,
  GetResponseSchema,
  OpenSessionRequestSchema,
  OpenSessionResponseSchema,
  PutRequestSchema,
  PutResponseSchema,
  type ScanRequest,
  ScanRequestSchema,
  type ScanResponse,
  ScanResponseSchema,
  WriteRequestSchema,
  WriteResponseSchema,
} from "../proto/gen/kv/v1/kv_pb.js";
import { KV_SERVICE_NAME } from "../proto/kv-service-definition.js";
import { encodeScanResponse } from "../proto/scan-codec.js";
import { adminOperations } from "./admin-service.js";
import { bearerRefusal, isOpenPath, tokenDigest } from "./bearer-token.js";
import { answerBeforeDeadline } from "./call-deadline.js";
import type { KvServerOptions, ServerTransport } from "./kv-server.js";
import { type CallObserver, type KvMethod, kvOperations } from "./kv-service.js";
import type { ServerLimits } from "./limits.js";
import { statusOf } from "./rpc-status.js";
import { type ScanCounters, type ScanOutput, serveScan } from "./scan-stream.js";
import { watchWriteHealth } from "./write-health.js";

const S = KV_SERVICE_NAME;

/** kv.v1.KvService for the lean path (Scan responses through the hand-written codec). */
export const kvService = {
  name: S,
  file: file_kv_v1_kv,
  methods: {
    Put: protobufMethod(S, "Put", "unary", PutRequestSchema, PutResponseSchema),
    Get: protobufMethod(S, "Get", "unary", GetRequestSchema, GetResponseSchema),
    Delete: protobufMethod(S, "Delete", "unary", DeleteRequestSchema, DeleteResponseSchema),
    Scan: {
      ...protobufMethod(S, "Scan", "server_streaming", ScanRequestSchema, ScanResponseSchema),
      encode: encodeScanResponse,
    },
    Write: protobufMethod(S, "Write", "unary", WriteRequestSchema, WriteResponseSchema),
    CompareAndSwap: protobufMethod(
      S,
      "CompareAndSwap",
      "unary",
      CompareAndSwapRequestSchema,
      CompareAndSwapResponseSchema,
    ),
    OpenSession: protobufMethod(
      S,
      "OpenSession",
      "unary",
      OpenSessionRequestSchema,
      OpenSessionResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

const A = ADMIN_SERVICE_NAME;

/** kv.v1.AdminService for the lean path (admin-service.ts). */
export const adminService = {
  name: A,
  file: file_kv_v1_admin,
  methods: {
    Checkpoint: protobufMethod(
      A,
      "Checkpoint",
      "unary",
      CheckpointRequestSchema,
      CheckpointResponseSchema,
    ),
    CompactRange: protobufMethod(
      A,
      "CompactRange",
      "server_streaming",
      CompactRangeRequestSchema,
      CompactRangeProgressSchema,
    ),
    Flush: protobufMethod(A, "Flush", "unary", FlushRequestSchema, FlushResponseSchema),
    Stats: protobufMethod(A, "Stats", "unary", StatsRequestSchema, StatsResponseSchema),
  },
} satisfies ServiceDescriptor;

const KV_PREFIX = `/${S}/`;

/** A lean server call as serveScan's output. */
function leanScanOutput(request: ScanRequest, call: ServerCall<ScanResponse>): ScanOutput {
  return {
    request,
    deadline: call.deadline,
    write: (msg) => call.write(msg),
    drained: () => call.whenWritable(),
    end: () => {},
    fail(err) {
      const { code, details, trailers } = statusOf(err);
      if (trailers.length > 0) call.trailers = trailerMetadata(trailers);
      call.finish(code, details);
      return code;
    },
    onGone(gone) {
      const signal = call.signal;
      if (signal.aborted) {
        gone();
        return () => {};
      }
      signal.addEventListener("abort", gone);
      return () => signal.removeEventListener("abort", gone);
    },
  };
}

function trailerMetadata(trailers: readonly (readonly [string, string])[]): Metadata {
  const m = new Metadata();
  for (const [k, v] of trailers) m.set(k, v);
  return m;
}

/** A lean call's handler with the store's signal of call-deadline.ts. */
function early<Req, Res>(
  margin: number,
  serve: (request: Req, signal: AbortSignalLike) => Promise<Res>,
): (request: Req, call: ServerCall<never>) => Promise<Res> {
  if (margin <= 0) return (request, call) => serve(request, call.signal);
  return async (request, call) => {
    const d = answerBeforeDeadline(call.signal, call.deadline, margin);
    try {
      return await serve(request, d.signal);
    } finally {
      d.done();
    }
  };
}

export async function startLeanTransport(
  store: KvBackend,
  options: KvServerOptions,
  limits: ServerLimits,
  counters: ScanCounters,
  host: string,
  port: number,
): Promise<ServerTransport> {
  const observe: CallObserver | undefined = options.onCall;
  const token = options.authToken === undefined ? undefined : tokenDigest(options.authToken);
  const server = new GrpcServer({
    host,
    port,
    ...(options.tls === undefined ? {} : { tls: options.tls }),
    maxReceiveMessageBytes: limits.maxReceiveMessageBytes,
    maxConcurrentStreams: limits.maxConcurrentStreams,
    errorStatus: (err) => {
      const { code, details, trailers } = statusOf(err);
      return trailers.length === 0
        ? { code, message: details }
        : { code, message: details, trailers: trailerMetadata(trailers) };
    },
    ...(token === undefined
      ? {}
      : {
          authorize: (path, metadata) => {
            if (isOpenPath(path)) return undefined;
            const why = bearerRefusal(metadata.get("authorization")[0], token);
            return why === undefined ? undefined : { code: Status.UNAUTHENTICATED, message: why };
          },
        }),
    ...(observe === undefined
      ? {}
      : {
          onCallEnd: (path, code, ms) => {
            if (path.startsWith(KV_PREFIX))
              observe(path.slice(KV_PREFIX.length) as KvMethod, code, ms);
          },
        }),
  });
  const ops = kvOperations(store, limits);
  const margin = options.deadlineMarginMs ?? 0;
  server.addService(kvService, {
    Put: early(margin, ops.Put),
    Get: early(margin, ops.Get),
    Delete: early(margin, ops.Delete),
    Write: early(margin, ops.Write),
    CompareAndSwap: early(margin, ops.CompareAndSwap),
    OpenSession: early(margin, ops.OpenSession),
    Scan: async (request, call) => {
      await serveScan(store, leanScanOutput(request, call), limits, counters, margin);
    },
  });
  options.registerServices?.(server);
  if (options.admin !== undefined) {
    const admin = adminOperations(options.admin, { backupDir: options.backupDir }, limits);
    server.addService(adminService, {
      Checkpoint: (request) => admin.Checkpoint(request),
      CompactRange: (request, call) =>
        admin.CompactRange(request, (message) => {
          if (!call.signal.aborted) call.write(message);
        }),
      Flush: () => admin.Flush(),
      Stats: () => admin.Stats(),
    });
  }
  // kv.v1.KvService is SERVING iff the server is serving (setServing) and the store accepts
  // writes; the other names follow setServing alone.
  const names = ["", S, ...(options.healthServices ?? [])];
  let serving = options.serving !== false;
  let writesAccepted = true;
  const healthStatus = (ok: boolean) => (ok ? ServingStatus.SERVING : ServingStatus.NOT_SERVING);
  const health = new HealthService(
    Object.fromEntries(names.map((n) => [n, healthStatus(serving)])),
  );
  const publish = () => {
    for (const n of names)
      health.setStatus(n, healthStatus(serving && (n !== S || writesAccepted)));
  };
  const writes = watchWriteHealth(store, (accepts) => {
    writesAccepted = accepts;
    publish();
  });
  server.addService(healthService, {
    ...health.implementation,
    Check: (request, call) => {
      writes.refresh();
      return health.implementation.Check(request, call);
    },
  });
  const reflection = new ReflectionService(server);
  server.addService(reflectionServiceV1, { ServerReflectionInfo: reflection.handler("v1") });
  server.addService(reflectionServiceV1alpha, {
    ServerReflectionInfo: reflection.handler("v1alpha"),
  });
  let bound: number;
  try {
    bound = await server.listen();
  } catch (err) {
    writes.stop();
    throw err;
  }
  return {
    port: bound,
    callsInFlight: () => server.stats().callsInFlight,
    setServing(on) {
      serving = on;
      publish();
    },
    connections: () => server.stats().connections,
    async shutdown(graceMs) {
      writes.stop();
      serving = false;
      publish();
      health.close();
      await server.shutdown(graceMs);
    },
  };
}
