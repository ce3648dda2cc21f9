/**
 * The grpc-js definition of kv.v1.ClusterService (proto/kv/v1/cluster.proto), for the
 * client; the server serves it on the lean path (src/cluster/cluster-service.ts).
 */
import {
  ClusterService,
  MemberAddRequestSchema,
  MemberAddResponseSchema,
  MemberListRequestSchema,
  MemberListResponseSchema,
  MemberRemoveRequestSchema,
  MemberRemoveResponseSchema,
  StatusRequestSchema,
  StatusResponseSchema,
  TransferLeadershipRequestSchema,
  TransferLeadershipResponseSchema,
} from "./gen/kv/v1/cluster_pb.js";
import { grpcJsMethod } from "./kv-service-definition.js";

/** "kv.v1.ClusterService". */
export const CLUSTER_SERVICE_NAME = ClusterService.typeName;

const S = CLUSTER_SERVICE_NAME;

export const clusterServiceDefinition = {
  MemberList: grpcJsMethod(
    S,
    "MemberList",
    MemberListRequestSchema,
    MemberListResponseSchema,
    false,
  ),
  MemberAdd: grpcJsMethod(S, "MemberAdd", MemberAddRequestSchema, MemberAddResponseSchema, false),
  MemberRemove: grpcJsMethod(
    S,
    "MemberRemove",
    MemberRemoveRequestSchema,
    MemberRemoveResponseSchema,
    false,
  ),
  TransferLeadership: grpcJsMethod(
    S,
    "TransferLeadership",
    TransferLeadershipRequestSchema,
    TransferLeadershipResponseSchema,
    false,
  ),
  Status: grpcJsMethod(S, "Status", StatusRequestSchema, StatusResponseSchema, false),
} as const;
