/**
 * kv.v1.KvService, health and reflection on the lean gRPC path (src/grpc: KV Engine's own
 * HTTP/2 layer), the default transport of KvServer. The KV methods are the transport-
 * neutral operations of kv-service.ts and serveScan; this file only binds them.
 */
import type { KvBackend } from "../db/kv-backend.js";
import { GrpcServer } from "../grpc/grpc-server.js";
import { HealthService, healthService, ServingStatus } from "../grpc/health-service.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import {
  ReflectionService,
  reflectionServiceV1,
  reflectionServiceV1alpha,
} from "../grpc/reflection-service.js";
import type { ServerCall } from "../grpc/server-call.js";
import { Status } from "../grpc/status.js";
import {
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
  },
} satisfies ServiceDescriptor;

const KV_PREFIX = `/${S}/`;

/** A lean server call as serveScan's output. */
function leanScanOutput(request: ScanRequest, call: ServerCall<ScanResponse>): ScanOutput {
  return {
    request,
    write: (msg) => call.write(msg),
    drained: () => call.whenWritable(),
    end: () => {},
    fail(err) {
      const { code, details } = statusOf(err);
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
      const { code, details } = statusOf(err);
      return { code, message: details };
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
  server.addService(kvService, {
    Put: (request, call) => ops.Put(request, call.signal),
    Get: (request) => ops.Get(request),
    Delete: (request, call) => ops.Delete(request, call.signal),
    Write: (request, call) => ops.Write(request, call.signal),
    Scan: async (request, call) => {
      await serveScan(store, leanScanOutput(request, call), limits, counters);
    },
  });
  const health = new HealthService({ "": ServingStatus.SERVING, [S]: ServingStatus.SERVING });
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
    connections: () => server.stats().connections,
    async shutdown(graceMs) {
      health.setStatus("", ServingStatus.NOT_SERVING);
      health.setStatus(S, ServingStatus.NOT_SERVING);
      health.close();
      await server.shutdown(graceMs);
    },
  };
}
