/**
 * The standard health service, grpc.health.v1.Health: `Check` answers the serving status
 * of a service name ("" for the whole server), NOT_FOUND for a name never set; `Watch`
 * streams the status now and at every change (SERVICE_UNKNOWN for a name never set) until
 * the client cancels or `close()` ends every watch (at shutdown, after the final statuses).
 */
import {
  file_grpc_health_v1_health,
  type HealthCheckRequest,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../proto/gen/grpc/health/v1/health_pb.js";
import { protobufMethod, type ServiceDescriptor, type ServiceImplementation } from "./method.js";
import type { ServerCall } from "./server-call.js";
import { GrpcError, Status } from "./status.js";

export { ServingStatus };

export const HEALTH_SERVICE_NAME = "grpc.health.v1.Health";

export const healthService = {
  name: HEALTH_SERVICE_NAME,
  file: file_grpc_health_v1_health,
  methods: {
    Check: protobufMethod(
      HEALTH_SERVICE_NAME,
      "Check",
      "unary",
      HealthCheckRequestSchema,
      HealthCheckResponseSchema,
    ),
    Watch: protobufMethod(
      HEALTH_SERVICE_NAME,
      "Watch",
      "server_streaming",
      HealthCheckRequestSchema,
      HealthCheckResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

const response = (status: ServingStatus): HealthCheckResponse => ({
  $typeName: "grpc.health.v1.HealthCheckResponse",
  status,
});

export class HealthService {
  private readonly statuses = new Map<string, ServingStatus>();
  private readonly watchers = new Set<{
    service: string;
    send: (s: ServingStatus) => void;
    end: () => void;
  }>();
  private closed = false;

  constructor(initial: Readonly<Record<string, ServingStatus>> = {}) {
    for (const [name, status] of Object.entries(initial)) this.statuses.set(name, status);
  }

  /** Sets the status of `service` and tells its watchers. */
  setStatus(service: string, status: ServingStatus): void {
    if (this.statuses.get(service) === status) return;
    this.statuses.set(service, status);
    for (const w of this.watchers) if (w.service === service) w.send(status);
  }

  status(service: string): ServingStatus | undefined {
    return this.statuses.get(service);
  }

  /** Ends every watch (OK); later watches end at once. */
  close(): void {
    this.closed = true;
    for (const w of [...this.watchers]) w.end();
  }

  readonly implementation: ServiceImplementation<typeof healthService> = {
    Check: (request: HealthCheckRequest) => {
      const status = this.statuses.get(request.service);
      if (status === undefined)
        throw new GrpcError(Status.NOT_FOUND, `unknown service ${request.service}`);
      return response(status);
    },
    Watch: (request: HealthCheckRequest, call: ServerCall<HealthCheckResponse>) =>
      new Promise<void>((resolve) => {
        const service = request.service;
        call.write(response(this.statuses.get(service) ?? ServingStatus.SERVICE_UNKNOWN));
        if (this.closed) {
          resolve();
          return;
        }
        const watcher = {
          service,
          send: (s: ServingStatus) => {
            call.write(response(s));
          },
          end: () => {
            this.watchers.delete(watcher);
            call.signal.removeEventListener("abort", watcher.end);
            resolve();
          },
        };
        this.watchers.add(watcher);
        call.signal.addEventListener("abort", watcher.end);
      }),
  };
}
