/**
 * kv.v1.ClusterService (proto/kv/v1/cluster.proto) over a ReplicatedStore, on the lean
 * path beside the KV service (registered through KvServerOptions.registerServices, so
 * it is behind the bearer token like the rest). Errors are the store's KvErrors, mapped
 * by src/server/rpc-status.ts (UNAVAILABLE "not proposed" with the leader's address in
 * trailer kv-leader, FAILED_PRECONDITION for a change that cannot be made...).
 */
import type { AbortSignalLike } from "../db/kv-backend.js";
import { KvError } from "../errors.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import { CLUSTER_SERVICE_NAME } from "../proto/cluster-service-definition.js";
import {
  file_kv_v1_cluster,
  type Member,
  type MemberAddRequest,
  MemberAddRequestSchema,
  type MemberAddResponse,
  MemberAddResponseSchema,
  MemberListRequestSchema,
  type MemberListResponse,
  MemberListResponseSchema,
  type MemberRemoveRequest,
  MemberRemoveRequestSchema,
  type MemberRemoveResponse,
  MemberRemoveResponseSchema,
  StatusRequestSchema,
  type StatusResponse,
  StatusResponseSchema,
  type TransferLeadershipRequest,
  TransferLeadershipRequestSchema,
  type TransferLeadershipResponse,
  TransferLeadershipResponseSchema,
} from "../proto/gen/kv/v1/cluster_pb.js";
import type { MemberId, MemberInfo } from "../replication/members.js";
import type { ReplicatedStore } from "../replication/replicated-store.js";
import { answerBeforeDeadline } from "../server/call-deadline.js";

const S = CLUSTER_SERVICE_NAME;

export const clusterService = {
  name: S,
  file: file_kv_v1_cluster,
  methods: {
    MemberList: protobufMethod(
      S,
      "MemberList",
      "unary",
      MemberListRequestSchema,
      MemberListResponseSchema,
    ),
    MemberAdd: protobufMethod(
      S,
      "MemberAdd",
      "unary",
      MemberAddRequestSchema,
      MemberAddResponseSchema,
    ),
    MemberRemove: protobufMethod(
      S,
      "MemberRemove",
      "unary",
      MemberRemoveRequestSchema,
      MemberRemoveResponseSchema,
    ),
    TransferLeadership: protobufMethod(
      S,
      "TransferLeadership",
      "unary",
      TransferLeadershipRequestSchema,
      TransferLeadershipResponseSchema,
    ),
    Status: protobufMethod(S, "Status", "unary", StatusRequestSchema, StatusResponseSchema),
  },
} satisfies ServiceDescriptor;

/** What the service reads of the peer transport besides the store: round-trip times. */
export interface PeerRtt {
  /** Smoothed round-trip time to each peer, in ms. */
  rttMs(id: MemberId): number | undefined;
}

function member(m: MemberInfo): Member {
  return {
    $typeName: "kv.v1.Member",
    id: BigInt(m.id),
    name: m.name,
    peerAddress: m.peerAddress,
    clientAddress: m.clientAddress,
    learner: m.learner,
  };
}

/** Milliseconds a membership call waits (the call's deadline, less a margin, when sooner). */
const MARGIN_MS = 100;

interface Call {
  readonly signal: AbortSignalLike;
  readonly deadline: number | undefined;
}

async function withDeadline<T>(
  call: Call,
  run: (signal: AbortSignalLike) => Promise<T>,
): Promise<T> {
  const d = answerBeforeDeadline(call.signal, call.deadline, MARGIN_MS);
  try {
    return await run(d.signal);
  } finally {
    d.done();
  }
}

function memberId(v: bigint, what: string): MemberId {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new KvError("INVALID_ARGUMENT", `${what} must be a member ID (a positive integer)`);
  }
  return n;
}

/** The handlers of kv.v1.ClusterService over `store`. */
export function clusterServiceHandlers(store: ReplicatedStore, peers: PeerRtt) {
  return {
    MemberList: (): MemberListResponse => ({
      $typeName: "kv.v1.MemberListResponse",
      clusterId: BigInt(store.clusterId),
      memberId: BigInt(store.memberId),
      leaderId: BigInt(store.leader()?.id ?? 0),
      members: store.members().map(member),
    }),
    MemberAdd: (request: MemberAddRequest, call: Call): Promise<MemberAddResponse> =>
      withDeadline(call, async (signal) => {
        const added = await store.addMember(
          {
            name: request.name,
            peerAddress: request.peerAddress,
            ...(request.clientAddress === "" ? {} : { clientAddress: request.clientAddress }),
          },
          { signal },
        );
        return {
          $typeName: "kv.v1.MemberAddResponse",
          clusterId: BigInt(store.clusterId),
          member: member(added),
          members: store.members().map(member),
        };
      }),
    MemberRemove: (request: MemberRemoveRequest, call: Call): Promise<MemberRemoveResponse> =>
      withDeadline(call, async (signal) => {
        await store.removeMember(memberId(request.id, "id"), { signal });
        return { $typeName: "kv.v1.MemberRemoveResponse", members: store.members().map(member) };
      }),
    TransferLeadership: async (
      request: TransferLeadershipRequest,
      call: Call,
    ): Promise<TransferLeadershipResponse> => {
      const to = request.to === 0n ? undefined : memberId(request.to, "to");
      const left = call.deadline === undefined ? undefined : call.deadline - Date.now() - MARGIN_MS;
      await store.transferLeadership(to, left === undefined ? undefined : Math.max(1, left));
      return {
        $typeName: "kv.v1.TransferLeadershipResponse",
        leaderId: BigInt(store.leader()?.id ?? 0),
      };
    },
    Status: (): StatusResponse => {
      const s = store.status();
      return {
        $typeName: "kv.v1.StatusResponse",
        clusterId: BigInt(s.clusterId),
        memberId: BigInt(s.memberId),
        name: s.name,
        role: s.role,
        term: BigInt(s.term),
        leaderId: BigInt(s.leader),
        leaderClientAddress: s.leaderClientAddress ?? "",
        commitIndex: BigInt(s.commit),
        appliedIndex: BigInt(s.applied),
        firstIndex: BigInt(s.firstIndex),
        lastIndex: BigInt(s.lastIndex),
        snapshotIndex: BigInt(s.snapshotIndex),
        removed: s.removed,
        failure: s.failure ?? "",
        peers: store
          .members()
          .filter((m) => m.id !== s.memberId)
          .map((m) => {
            const rtt = peers.rttMs(m.id);
            return {
              $typeName: "kv.v1.PeerStatus" as const,
              id: BigInt(m.id),
              lastContactMs: BigInt(
                m.lastContactMs === undefined ? -1 : Math.round(m.lastContactMs),
              ),
              progress: m.progress?.state ?? "",
              matchIndex: BigInt(m.progress?.match ?? 0),
              rttMicros: BigInt(rtt === undefined ? 0 : Math.round(rtt * 1000)),
            };
          }),
      };
    },
  };
}
