/**
 * kv.v1.KvService, health and reflection on the lean gRPC path (src/grpc: KV Engine's own
 * HTTP/2 layer), the default transport of KvServer. The KV methods are the transport-
 * neutral operations of kv-service.ts and serveScan; this file only binds them.
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
import {
  CompareAndSwapRequestSchema,
  CompareAndSwapResponseSchema,
  DeleteRequestSchema,
  DeleteResponseSchema,
  file_kv_v1_kv,
  GetRequestSchema,
  GetResponseSchema,
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
import { bearerRefusal, isOpenPath, tokenDigest } from "./bearer-token.js";
import { answerBeforeDeadline } from "./call-deadline.js";
import type { KvServerOptions, ServerTransport } from "./kv-server.js";
import { type CallObserver, type KvMethod, kvOperations } from "./kv-service.js";
import type { ServerLimits } from "./limits.js";
import { statusOf } from "./rpc-status.js";
import { type ScanCounters, type ScanOutput, serveScan } from "./scan-stream.js";

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
    Scan: async (request, call) => {
      await serveScan(store, leanScanOutput(request, call), limits, counters, margin);
    },
  });
  options.registerServices?.(server);
  const names = ["", S, ...(options.healthServices ?? [])];
  const initial = options.serving === false ? ServingStatus.NOT_SERVING : ServingStatus.SERVING;
  const health = new HealthService(Object.fromEntries(names.map((n) => [n, initial])));
  server.addService(healthService, health.implementation);
  const reflection = new ReflectionService(server);
  server.addService(reflectionServiceV1, { ServerReflectionInfo: reflection.handler("v1") });
  server.addService(reflectionServiceV1alpha, {
    ServerReflectionInfo: reflection.handler("v1alpha"),
  });
  const bound = await server.listen();
  return {
    port: bound,
    callsInFlight: () => server.stats().callsInFlight,
    setServing(serving) {
      const s = serving ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
      for (const n of names) health.setStatus(n, s);
    },
    async shutdown(graceMs) {
      for (const n of names) health.setStatus(n, ServingStatus.NOT_SERVING);
      health.close();
      await server.shutdown(graceMs);
    },
  };
}
