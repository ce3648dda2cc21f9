/**
 * The methods of etcd's v3 API the etcd client calls (etcd 3.4's rpc.proto, v3lock.proto,
 * v3election.proto; generated into src/proto/gen/etcd/), each with protobuf-es codecs.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import * as rpc from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import * as election from "../../proto/gen/etcd/api/v3electionpb/v3election_pb.js";
import * as lock from "../../proto/gen/etcd/api/v3lockpb/v3lock_pb.js";
import { grpcJsMethod } from "../../proto/kv-service-definition.js";
import type { UnaryMethod } from "../transport.js";

function m<I extends DescMessage, O extends DescMessage>(
  service: string,
  name: string,
  input: I,
  output: O,
): UnaryMethod<MessageShape<I>, MessageShape<O>> {
  return grpcJsMethod(service, name, input, output, false);
}

const KV = "etcdserverpb.KV";
const LEASE = "etcdserverpb.Lease";
const LOCK = "v3lockpb.Lock";
const ELECTION = "v3electionpb.Election";

export const etcdMethods = {
  Range: m(KV, "Range", rpc.RangeRequestSchema, rpc.RangeResponseSchema),
  Put: m(KV, "Put", rpc.PutRequestSchema, rpc.PutResponseSchema),
  DeleteRange: m(KV, "DeleteRange", rpc.DeleteRangeRequestSchema, rpc.DeleteRangeResponseSchema),
  Txn: m(KV, "Txn", rpc.TxnRequestSchema, rpc.TxnResponseSchema),
  Compact: m(KV, "Compact", rpc.CompactionRequestSchema, rpc.CompactionResponseSchema),
  Watch: m("etcdserverpb.Watch", "Watch", rpc.WatchRequestSchema, rpc.WatchResponseSchema),
  LeaseGrant: m(LEASE, "LeaseGrant", rpc.LeaseGrantRequestSchema, rpc.LeaseGrantResponseSchema),
  LeaseRevoke: m(LEASE, "LeaseRevoke", rpc.LeaseRevokeRequestSchema, rpc.LeaseRevokeResponseSchema),
  LeaseKeepAlive: m(
    LEASE,
    "LeaseKeepAlive",
    rpc.LeaseKeepAliveRequestSchema,
    rpc.LeaseKeepAliveResponseSchema,
  ),
  LeaseTimeToLive: m(
    LEASE,
    "LeaseTimeToLive",
    rpc.LeaseTimeToLiveRequestSchema,
    rpc.LeaseTimeToLiveResponseSchema,
  ),
  LeaseLeases: m(LEASE, "LeaseLeases", rpc.LeaseLeasesRequestSchema, rpc.LeaseLeasesResponseSchema),
  Lock: m(LOCK, "Lock", lock.LockRequestSchema, lock.LockResponseSchema),
  Unlock: m(LOCK, "Unlock", lock.UnlockRequestSchema, lock.UnlockResponseSchema),
  Campaign: m(
    ELECTION,
    "Campaign",
    election.CampaignRequestSchema,
    election.CampaignResponseSchema,
  ),
  Proclaim: m(
    ELECTION,
    "Proclaim",
    election.ProclaimRequestSchema,
    election.ProclaimResponseSchema,
  ),
  Leader: m(ELECTION, "Leader", election.LeaderRequestSchema, election.LeaderResponseSchema),
  Observe: m(ELECTION, "Observe", election.LeaderRequestSchema, election.LeaderResponseSchema),
  Resign: m(ELECTION, "Resign", election.ResignRequestSchema, election.ResignResponseSchema),
} as const;
