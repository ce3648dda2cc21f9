/**
 * The methods of etcd's Cluster and Maintenance services the CLI calls (EtcdClient does
 * not cover them): MemberList, MemberAdd, MemberPromote, Status, HashKV, Alarm, Snapshot.
 * Called through an EtcdClient's CallRunner, so they take its endpoints, TLS, token,
 * deadlines and error texts.
 */
import * as rpc from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { grpcJsMethod } from "../proto/kv-service-definition.js";

const CLUSTER = "etcdserverpb.Cluster";
const MAINTENANCE = "etcdserverpb.Maintenance";

export const etcdAdminMethods = {
  MemberList: grpcJsMethod(
    CLUSTER,
    "MemberList",
    rpc.MemberListRequestSchema,
    rpc.MemberListResponseSchema,
    false,
  ),
  MemberAdd: grpcJsMethod(
    CLUSTER,
    "MemberAdd",
    rpc.MemberAddRequestSchema,
    rpc.MemberAddResponseSchema,
    false,
  ),
  MemberPromote: grpcJsMethod(
    CLUSTER,
    "MemberPromote",
    rpc.MemberPromoteRequestSchema,
    rpc.MemberPromoteResponseSchema,
    false,
  ),
  Status: grpcJsMethod(
    MAINTENANCE,
    "Status",
    rpc.StatusRequestSchema,
    rpc.StatusResponseSchema,
    false,
  ),
  HashKV: grpcJsMethod(
    MAINTENANCE,
    "HashKV",
    rpc.HashKVRequestSchema,
    rpc.HashKVResponseSchema,
    false,
  ),
  Alarm: grpcJsMethod(MAINTENANCE, "Alarm", rpc.AlarmRequestSchema, rpc.AlarmResponseSchema, false),
  Snapshot: grpcJsMethod(
    MAINTENANCE,
    "Snapshot",
    rpc.SnapshotRequestSchema,
    rpc.SnapshotResponseSchema,
    true,
  ),
} as const;
