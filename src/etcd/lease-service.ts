/**
 * etcd's Lease service (etcdserverpb.Lease: LeaseGrant, LeaseRevoke, LeaseKeepAlive,
 * LeaseTimeToLive, LeaseLeases) on the lean gRPC path, over an EtcdLeaseBackend. As in
 * etcd's server: the `hasleader` metadata fails a call (or opening a keep-alive stream)
 * with "etcdserver: no leader" when the backend knows none; a keep-alive for a lease that
 * does not exist (or expired) is answered with TTL 0, not an error; the keep-alive stream
 * ends when the client closes its side; any other failure ends it with etcd's status.
 * Failures are answered with etcd's status and text (etcd-errors.ts).
 */
import type { GrpcServer } from "../grpc/grpc-server.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import type { RequestStream, ServerCall } from "../grpc/server-call.js";
import {
  file_etcd_api_etcdserverpb_rpc,
  Lease,
  type LeaseGrantRequest,
  LeaseGrantRequestSchema,
  type LeaseGrantResponse,
  LeaseGrantResponseSchema,
  type LeaseKeepAliveRequest,
  LeaseKeepAliveRequestSchema,
  type LeaseKeepAliveResponse,
  LeaseKeepAliveResponseSchema,
  LeaseLeasesRequestSchema,
  type LeaseLeasesResponse,
  LeaseLeasesResponseSchema,
  type LeaseRevokeRequest,
  LeaseRevokeRequestSchema,
  type LeaseRevokeResponse,
  LeaseRevokeResponseSchema,
  type LeaseTimeToLiveRequest,
  LeaseTimeToLiveRequestSchema,
  type LeaseTimeToLiveResponse,
  LeaseTimeToLiveResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdCallOptions } from "./etcd-backend.js";
import { EtcdError, toEtcdGrpcError } from "./etcd-errors.js";

/** "etcdserverpb.Lease". */
export const ETCD_LEASE_SERVICE_NAME = Lease.typeName;

/**
 * What the Lease service needs of a member (local-backend.ts, src/cluster/etcd-backend.ts).
 * Responses come with their header complete. Failures are thrown as EtcdError,
 * RequestError (LEASE_NOT_FOUND, LEASE_EXISTS, LEASE_TTL_TOO_LARGE) or KvError.
 */
export interface EtcdLeaseBackend {
  /** False when this member knows of no leader. */
  hasLeader(): boolean;
  /** Grants a lease: the client's ID or a new one when 0, the TTL raised to the minimum. */
  leaseGrant(req: LeaseGrantRequest, options?: EtcdCallOptions): Promise<LeaseGrantResponse>;
  /** Revokes a lease, deleting its keys in one revision. */
  leaseRevoke(req: LeaseRevokeRequest, options?: EtcdCallOptions): Promise<LeaseRevokeResponse>;
  /** Renews lease `id`: TTL its granted TTL, or 0 when it does not exist (or expired). */
  leaseKeepAlive(id: bigint, options?: EtcdCallOptions): Promise<LeaseKeepAliveResponse>;
  leaseTimeToLive(
    req: LeaseTimeToLiveRequest,
    options?: EtcdCallOptions,
  ): Promise<LeaseTimeToLiveResponse>;
  leaseLeases(options?: EtcdCallOptions): Promise<LeaseLeasesResponse>;
}

const method = protobufMethod;
const NAME = ETCD_LEASE_SERVICE_NAME;

/** etcdserverpb.Lease for the lean path. */
export const etcdLeaseService = {
  name: NAME,
  file: file_etcd_api_etcdserverpb_rpc,
  methods: {
    LeaseGrant: method(
      NAME,
      "LeaseGrant",
      "unary",
      LeaseGrantRequestSchema,
      LeaseGrantResponseSchema,
    ),
    LeaseRevoke: method(
      NAME,
      "LeaseRevoke",
      "unary",
      LeaseRevokeRequestSchema,
      LeaseRevokeResponseSchema,
    ),
    LeaseKeepAlive: method(
      NAME,
      "LeaseKeepAlive",
      "bidi_streaming",
      LeaseKeepAliveRequestSchema,
      LeaseKeepAliveResponseSchema,
    ),
    LeaseTimeToLive: method(
      NAME,
      "LeaseTimeToLive",
      "unary",
      LeaseTimeToLiveRequestSchema,
      LeaseTimeToLiveResponseSchema,
    ),
    LeaseLeases: method(
      NAME,
      "LeaseLeases",
      "unary",
      LeaseLeasesRequestSchema,
      LeaseLeasesResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

/** Registers etcdserverpb.Lease over `backend` on `server` (behind its token and TLS). */
export function registerEtcdLease(
  server: Pick<GrpcServer, "addService">,
  backend: EtcdLeaseBackend,
): void {
  const checkLeader = (call: ServerCall<never> | ServerCall<LeaseKeepAliveResponse>) => {
    if (call.metadata.get("hasleader")[0] === "true" && !backend.hasLeader())
      throw new EtcdError("NO_LEADER");
  };

  function unary<Req, Res>(
    serve: (req: Req, options: EtcdCallOptions) => Promise<Res>,
  ): (req: Req, call: ServerCall<never>) => Promise<Res> {
    return async (req, call) => {
      try {
        checkLeader(call);
        return await serve(req, { signal: call.signal });
      } catch (err) {
        throw toEtcdGrpcError(err);
      }
    };
  }

  /** Answers each keep-alive as soon as it is known (a follower's wait for the log). */
  async function keepAlive(
    requests: RequestStream<LeaseKeepAliveRequest>,
    call: ServerCall<LeaseKeepAliveResponse>,
  ): Promise<void> {
    let failure: { err: unknown } | undefined;
    const inFlight = new Set<Promise<void>>();
    try {
      checkLeader(call);
      for await (const req of requests) {
        if (failure !== undefined) break;
        const p = backend
          .leaseKeepAlive(req.ID, { signal: call.signal })
          .then(async (resp) => {
            if (!call.write(resp) && !call.ended) await call.whenWritable();
          })
          .catch((err: unknown) => {
            failure ??= { err };
          })
          .finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      await Promise.all(inFlight);
    } catch (err) {
      throw toEtcdGrpcError(err);
    }
    if (failure !== undefined) throw toEtcdGrpcError(failure.err);
  }

  server.addService(etcdLeaseService, {
    LeaseGrant: unary((r: LeaseGrantRequest, o) => backend.leaseGrant(r, o)),
    LeaseRevoke: unary((r: LeaseRevokeRequest, o) => backend.leaseRevoke(r, o)),
    LeaseKeepAlive: keepAlive,
    LeaseTimeToLive: unary((r: LeaseTimeToLiveRequest, o) => backend.leaseTimeToLive(r, o)),
    LeaseLeases: unary((_r: unknown, o) => backend.leaseLeases(o)),
  });
}
