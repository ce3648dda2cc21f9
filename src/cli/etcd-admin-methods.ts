/**
 * The methods of etcd's Cluster and Maintenance services the CLI calls (EtcdClient does
 * not cover them): MemberList, MemberAdd, MemberPromote, Status, HashKV, Alarm, Snapshot.
 * Called through an EtcdClient's CallRunner, so they take its endpoints, TLS, token,
 * deadlines and error texts.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { UnaryMethod } from "../client/transport.js";
import * as rpc from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { grpcJsMethod } from "../proto/kv-service-definition.js";

function m<I extends DescMessage, O extends DescMessage>(
  service: string,
  name: string,
  input: I,
  output: O,
): UnaryMethod<MessageShape<I>, MessageShape<O>> {
  return grpcJsMethod(service, name, input, output, false);
}

const CLUSTER = "etcdserverpb.Cluster";
const MAINTENANCE = "etcdserverpb.Maintenance";

export const etcdAdminMethods = {
  MemberList: m(CLUSTER, "MemberList", rpc.MemberListRequestSchema, rpc.MemberListResponseSchema),
  MemberAdd: m(CLUSTER, "MemberAdd", rpc.MemberAddRequestSchema, rpc.MemberAddResponseSchema),
  MemberPromote: m(
    CLUSTER,
    "MemberPromote",
    rpc.MemberPromoteRequestSchema,
    rpc.MemberPromoteResponseSchema,
  ),
  Status: m(MAINTENANCE, "Status", rpc.StatusRequestSchema, rpc.StatusResponseSchema),
  HashKV: m(MAINTENANCE, "HashKV", rpc.HashKVRequestSchema, rpc.HashKVResponseSchema),
  Alarm: m(MAINTENANCE, "Alarm", rpc.AlarmRequestSchema, rpc.AlarmResponseSchema),
  Snapshot: m(MAINTENANCE, "Snapshot", rpc.SnapshotRequestSchema, rpc.SnapshotResponseSchema),
} as const;
