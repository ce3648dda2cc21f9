/**
 * kv.v1.KvService, kv.v1.AdminService (when `admin` is given), health and reflection on
 * grpc-js's server: the transport before the
 * lean path, kept behind `transport: "grpc-js"` (`--transport grpc-js`) for one release so
 * that users can compare.
 */

import { toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import {
  type ChannelOptions,
  type handleServerStreamingCall,
  type handleUnaryCall,
  Server,
  ServerCredentials,
} from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation } from "grpc-health-check";
import type { KvBackend } from "../db/kv-backend.js";
import { ADMIN_SERVICE_NAME, adminServiceDefinition } from "../proto/admin-service-definition.js";
import { file_grpc_health_v1_health } from "../proto/gen/grpc/health/v1/health_pb.js";
import {
  type CompactRangeProgress,
  type CompactRangeRequest,
  file_kv_v1_admin,
} from "../proto/gen/kv/v1/admin_pb.js";
import {
  KV_SERVICE_NAME,
  kvFileDescriptor,
  kvServiceDefinition,
} from "../proto/kv-service-definition.js";
import { adminOperations } from "./admin-service.js";
import { bearerTokenInterceptor } from "./bearer-token.js";
import {
  hostPort,
  type KvServerOptions,
  type ServerTransport,
  type TlsOptions,
} from "./kv-server.js";
import { kvServiceHandlers } from "./kv-service.js";
import type { ServerLimits } from "./limits.js";
import { toServiceError } from "./rpc-status.js";
import type { ScanCounters } from "./scan-stream.js";
import { watchWriteHealth } from "./write-health.js";

export async function startGrpcJsTransport(
  store: KvBackend,
  options: KvServerOptions,
  limits: ServerLimits,
  counters: ScanCounters,
  host: string,
  port: number,
): Promise<ServerTransport> {
  const serverOptions: ChannelOptions = {
    "grpc.max_receive_message_length": limits.maxReceiveMessageBytes,
    "grpc.max_concurrent_streams": limits.maxConcurrentStreams,
  };
  const server = new Server({
    ...serverOptions,
    interceptors:
      options.authToken === undefined ? [] : [bearerTokenInterceptor(options.authToken)],
  });
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(work: Promise<T>): Promise<T> => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work)).catch(() => {});
    return work;
  };
  server.addService(kvServiceDefinition, {
    ...kvServiceHandlers(
      store,
      limits,
      counters,
      track,
      options.onCall,
      options.deadlineMarginMs ?? 0,
    ),
  });
  if (options.admin !== undefined) {
    const admin = adminOperations(options.admin, { backupDir: options.backupDir }, limits);
    const unary =
      <Req, Res>(op: (request: Req) => Res | Promise<Res>): handleUnaryCall<Req, Res> =>
      (call, callback) => {
        void track(
          (async () => {
            try {
              callback(null, await op(call.request));
            } catch (err) {
              callback(toServiceError(err));
            }
          })(),
        );
      };
    const compactRange: handleServerStreamingCall<CompactRangeRequest, CompactRangeProgress> = (
      call,
    ) => {
      void track(
        (async () => {
          try {
            await admin.CompactRange(call.request, (message) => {
              if (!call.cancelled) call.write(message);
            });
            call.end();
          } catch (err) {
            call.emit("error", toServiceError(err));
          }
        })(),
      );
    };
    server.addService(adminServiceDefinition, {
      Checkpoint: unary(admin.Checkpoint),
      CompactRange: compactRange,
      Flush: unary(admin.Flush),
      Stats: unary(admin.Stats),
    });
  }
  // kv.v1.KvService is SERVING iff the server is serving (setServing) and the store accepts
  // writes; the other names follow setServing alone.
  const names = ["", KV_SERVICE_NAME, ...(options.healthServices ?? [])];
  let serving = options.serving !== false;
  let writesAccepted = true;
  const healthStatus = (ok: boolean) => (ok ? "SERVING" : "NOT_SERVING");
  const health = new HealthImplementation(
    Object.fromEntries(names.map((n) => [n, healthStatus(serving)])),
  );
  const publish = () => {
    for (const n of names) {
      health.setStatus(n, healthStatus(serving && (n !== KV_SERVICE_NAME || writesAccepted)));
    }
  };
  health.addToServer(server);
  const writes = watchWriteHealth(store, (accepts) => {
    writesAccepted = accepts;
    publish();
  });
  reflectionFor(options.admin !== undefined).addToServer(server);
  let bound: number;
  try {
    bound = await new Promise<number>((resolve, reject) => {
      server.bindAsync(hostPort(host, port), credentials(options.tls), (err, p) =>
        err === null ? resolve(p) : reject(err),
      );
    });
  } catch (err) {
    writes.stop();
    server.forceShutdown();
    throw err;
  }
  return {
    port: bound,
    callsInFlight: () => inFlight.size,
    setServing(on) {
      serving = on;
      publish();
    },
    async shutdown(graceMs) {
      writes.stop();
      serving = false;
      publish();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      // Cancelled calls settle promptly (scans close their iterators on cancellation);
      // writes already handed to the store finish there.
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
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
 * Server reflection from the file descriptors embedded in the generated code (so grpcurl
 * and similar tools work without the .proto files): kv.v1.KvService, the health service and,
 * when served, kv.v1.AdminService.
 */
function reflectionFor(admin: boolean): ReflectionService {
  const definition: ConstructorParameters<typeof ReflectionService>[0] = {
    [KV_SERVICE_NAME]: {
      format: "Protocol Buffer 3 DescriptorProto",
      type: {},
      fileDescriptorProtos: [Buffer.from(kvFileDescriptor())],
    },
    "grpc.health.v1.Health": {
      format: "Protocol Buffer 3 DescriptorProto",
      type: {},
      fileDescriptorProtos: [
        Buffer.from(toBinary(FileDescriptorProtoSchema, file_grpc_health_v1_health.proto)),
      ],
    },
  };
  if (admin) {
    definition[ADMIN_SERVICE_NAME] = {
      format: "Protocol Buffer 3 DescriptorProto",
      type: {},
      fileDescriptorProtos: [
        Buffer.from(toBinary(FileDescriptorProtoSchema, file_kv_v1_admin.proto)),
      ],
    };
  }
  return new ReflectionService(definition);
}
