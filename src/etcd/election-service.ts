/**
 * etcd's Election service (v3electionpb.Election: Campaign, Proclaim, Leader, Observe,
 * Resign) on the lean gRPC path, over the recipes of src/etcd/recipes (election.ts).
 * Each call is run by recipeCall (the `hasleader` metadata; failures answered UNKNOWN with
 * etcd's text, as etcd's server answers them); Observe ends when the client cancels it.
 */
import { create } from "@bufbuild/protobuf";
import type { GrpcServer } from "../grpc/grpc-server.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import {
  CampaignRequestSchema,
  CampaignResponseSchema,
  Election,
  file_etcd_api_v3electionpb_v3election,
  type LeaderKey,
  LeaderKeySchema,
  LeaderRequestSchema,
  LeaderResponseSchema,
  ProclaimRequestSchema,
  ProclaimResponseSchema,
  ResignRequestSchema,
  ResignResponseSchema,
} from "../proto/gen/etcd/api/v3electionpb/v3election_pb.js";
import { EtcdError } from "./etcd-errors.js";
import { DEFAULT_MAX_REQUEST_BYTES } from "./kv-service.js";
import { recipeCall } from "./recipe-call.js";
import { campaign, leader, observe, proclaim, resign } from "./recipes/election.js";
import { type RecipeBackend, RecipeError } from "./recipes/recipe-backend.js";

/** "v3electionpb.Election". */
export const ETCD_ELECTION_SERVICE_NAME = Election.typeName;

export interface EtcdElectionServiceOptions {
  /** etcd's --max-request-bytes: a longer value fails "request is too large" (default 1.5 MiB). */
  maxRequestBytes?: number;
}

const m = ETCD_ELECTION_SERVICE_NAME;

/** v3electionpb.Election for the lean path. */
export const etcdElectionService = {
  name: m,
  file: file_etcd_api_v3electionpb_v3election,
  methods: {
    Campaign: protobufMethod(m, "Campaign", "unary", CampaignRequestSchema, CampaignResponseSchema),
    Proclaim: protobufMethod(m, "Proclaim", "unary", ProclaimRequestSchema, ProclaimResponseSchema),
    Leader: protobufMethod(m, "Leader", "unary", LeaderRequestSchema, LeaderResponseSchema),
    Observe: protobufMethod(
      m,
      "Observe",
      "server_streaming",
      LeaderRequestSchema,
      LeaderResponseSchema,
    ),
    Resign: protobufMethod(m, "Resign", "unary", ResignRequestSchema, ResignResponseSchema),
  },
} satisfies ServiceDescriptor;

/** `leader`, or '"leader" field must be provided'. */
function required(leader: LeaderKey | undefined): LeaderKey {
  if (leader === undefined) throw new RecipeError("MISSING_LEADER_KEY");
  return leader;
}

/** Registers v3electionpb.Election over `backend` on `server` (behind its token and TLS). */
export function registerEtcdElection(
  server: Pick<GrpcServer, "addService">,
  backend: RecipeBackend,
  options: EtcdElectionServiceOptions = {},
): void {
  const maxValue = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const checkValue = (value: Uint8Array) => {
    if (value.length > maxValue) throw new EtcdError("REQUEST_TOO_LARGE");
  };
  server.addService(etcdElectionService, {
    Campaign: (req, call) =>
      recipeCall(backend, call, async (o) => {
        checkValue(req.value);
        const r = await campaign(backend, req.name, req.lease, req.value, o);
        return create(CampaignResponseSchema, {
          header: r.header,
          leader: create(LeaderKeySchema, r.leader),
        });
      }),
    Proclaim: (req, call) =>
      recipeCall(backend, call, async (o) => {
        const l = required(req.leader);
        checkValue(req.value);
        return create(ProclaimResponseSchema, { header: await proclaim(backend, l, req.value, o) });
      }),
    Leader: (req, call) =>
      recipeCall(backend, call, async (o) =>
        create(LeaderResponseSchema, await leader(backend, req.name, o)),
      ),
    Observe: (req, call) =>
      recipeCall(backend, call, (o) =>
        observe(
          backend,
          req.name,
          async (header, kv) => {
            if (!call.write(create(LeaderResponseSchema, { header, kv })))
              await call.whenWritable();
          },
          o,
        ),
      ),
    Resign: (req, call) =>
      recipeCall(backend, call, async (o) =>
        create(ResignResponseSchema, { header: await resign(backend, required(req.leader), o) }),
      ),
  });
}
