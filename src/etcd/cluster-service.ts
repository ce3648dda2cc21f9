/**
 * etcd's Cluster service (etcdserverpb.Cluster: MemberList, MemberAdd, MemberRemove,
 * MemberUpdate, MemberPromote) on the lean gRPC path, over an EtcdClusterBackend (a
 * cluster member's: src/cluster/etcd-maintenance-backend.ts; a single node's:
 * local-maintenance.ts). Members are shown as etcd shows them: IDs, names, and
 * `http(s)://host:port` peer and client URLs (the scheme is the backend's: https with
 * TLS). Requests name URLs the same way; a request whose URLs do not parse, or that names
 * more than one peer URL (a member has one peer address here), fails etcd's "given member
 * URLs are invalid". Failures are etcd's statuses (etcd-errors.ts).
 */
import { create } from "@bufbuild/protobuf";
import type { GrpcServer } from "../grpc/grpc-server.js";
import { protobufMethod, type ServiceDescriptor } from "../grpc/method.js";
import type { ServerCall } from "../grpc/server-call.js";
import {
  Cluster,
  file_etcd_api_etcdserverpb_rpc,
  type Member,
  MemberAddRequestSchema,
  MemberAddResponseSchema,
  MemberListRequestSchema,
  MemberListResponseSchema,
  MemberPromoteRequestSchema,
  MemberPromoteResponseSchema,
  MemberRemoveRequestSchema,
  MemberRemoveResponseSchema,
  MemberSchema,
  MemberUpdateRequestSchema,
  MemberUpdateResponseSchema,
  type ResponseHeader,
  ResponseHeaderSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdCallOptions, EtcdHeaderIds } from "./etcd-backend.js";
import { EtcdError, toEtcdGrpcError } from "./etcd-errors.js";

/** "etcdserverpb.Cluster". */
export const ETCD_CLUSTER_SERVICE_NAME = Cluster.typeName;

/** A member as the Cluster service shows it (addresses `host:port`). */
export interface EtcdMemberRecord {
  readonly id: bigint;
  /** "" until the member started and published its name (etcd's too). */
  readonly name: string;
  /** "" for none (a single node has no peer port). */
  readonly peerAddress: string;
  /** "" until the member published it. */
  readonly clientAddress: string;
  readonly learner: boolean;
}

/**
 * What the Cluster service needs of a member. Changes resolve once applied on this
 * member; they throw EtcdError (MEMBER_NOT_FOUND, PEER_URL_EXIST, MEMBER_NOT_LEARNER,
 * LEARNER_NOT_READY, TOO_MANY_LEARNERS...) or as a write does (KvError).
 */
export interface EtcdClusterBackend {
  /** The ids every response header carries (its revision is 0 here, as etcd's). */
  ids(): EtcdHeaderIds;
  /** "http" or "https": how peers and clients reach the members. */
  readonly peerScheme: string;
  readonly clientScheme: string;
  /** The members as applied on this member, sorted by ID. */
  members(): EtcdMemberRecord[];
  /** Adds a member: a learner that waits for `promote` iff `learner`, else one promoted once caught up. */
  add(peerAddress: string, learner: boolean, options: EtcdCallOptions): Promise<EtcdMemberRecord>;
  remove(id: bigint, options: EtcdCallOptions): Promise<void>;
  update(id: bigint, peerAddress: string, options: EtcdCallOptions): Promise<void>;
  promote(id: bigint, options: EtcdCallOptions): Promise<void>;
}

/** etcdserverpb.Cluster for the lean path. */
export const etcdClusterService = {
  name: ETCD_CLUSTER_SERVICE_NAME,
  file: file_etcd_api_etcdserverpb_rpc,
  methods: {
    MemberAdd: protobufMethod(
      ETCD_CLUSTER_SERVICE_NAME,
      "MemberAdd",
      "unary",
      MemberAddRequestSchema,
      MemberAddResponseSchema,
    ),
    MemberRemove: protobufMethod(
      ETCD_CLUSTER_SERVICE_NAME,
      "MemberRemove",
      "unary",
      MemberRemoveRequestSchema,
      MemberRemoveResponseSchema,
    ),
    MemberUpdate: protobufMethod(
      ETCD_CLUSTER_SERVICE_NAME,
      "MemberUpdate",
      "unary",
      MemberUpdateRequestSchema,
      MemberUpdateResponseSchema,
    ),
    MemberList: protobufMethod(
      ETCD_CLUSTER_SERVICE_NAME,
      "MemberList",
      "unary",
      MemberListRequestSchema,
      MemberListResponseSchema,
    ),
    MemberPromote: protobufMethod(
      ETCD_CLUSTER_SERVICE_NAME,
      "MemberPromote",
      "unary",
      MemberPromoteRequestSchema,
      MemberPromoteResponseSchema,
    ),
  },
} satisfies ServiceDescriptor;

/**
 * The `host:port` of the one URL in `urls` (`http://host:port` or `https://host:port`, no
 * path); throws EtcdError MEMBER_BAD_URLS otherwise.
 */
export function peerAddressOfUrls(urls: readonly string[]): string {
  if (urls.length !== 1) throw new EtcdError("MEMBER_BAD_URLS");
  let u: URL;
  try {
    u = new URL(urls[0] ?? "");
  } catch {
    throw new EtcdError("MEMBER_BAD_URLS");
  }
  if (
    (u.protocol !== "http:" && u.protocol !== "https:") ||
    u.port === "" ||
    (u.pathname !== "" && u.pathname !== "/") ||
    u.search !== "" ||
    u.username !== ""
  ) {
    throw new EtcdError("MEMBER_BAD_URLS");
  }
  return u.host;
}

/** `scheme://address`, or no URL for "". */
export function urlsOf(scheme: string, address: string): string[] {
  return address === "" ? [] : [`${scheme}://${address}`];
}

/** A unary handler running `serve` with the call's signal; failures get etcd's statuses. */
export function etcdUnary<Req, Res>(
  serve: (req: Req, options: EtcdCallOptions) => Promise<Res> | Res,
): (req: Req, call: ServerCall<never>) => Promise<Res> {
  return async (req, call) => {
    try {
      return await serve(req, { signal: call.signal });
    } catch (err) {
      throw toEtcdGrpcError(err);
    }
  };
}

/** A header with the backend's ids (revision 0, as etcd's cluster calls). */
export function headerOf(ids: EtcdHeaderIds, revision = 0n): ResponseHeader {
  return create(ResponseHeaderSchema, { ...ids, revision });
}

/** Registers etcdserverpb.Cluster over `backend` on `server` (behind its token and TLS). */
export function registerEtcdCluster(
  server: Pick<GrpcServer, "addService">,
  backend: EtcdClusterBackend,
): void {
  const member = (m: EtcdMemberRecord): Member =>
    create(MemberSchema, {
      ID: m.id,
      name: m.name,
      peerURLs: urlsOf(backend.peerScheme, m.peerAddress),
      clientURLs: urlsOf(backend.clientScheme, m.clientAddress),
      isLearner: m.learner,
    });
  const members = () => backend.members().map(member);
  const header = () => headerOf(backend.ids());

  server.addService(etcdClusterService, {
    MemberList: etcdUnary(() =>
      create(MemberListResponseSchema, { header: header(), members: members() }),
    ),
    MemberAdd: etcdUnary(async (req, o) => {
      const added = await backend.add(peerAddressOfUrls(req.peerURLs), req.isLearner, o);
      return create(MemberAddResponseSchema, {
        header: header(),
        member: member(added),
        members: members(),
      });
    }),
    MemberRemove: etcdUnary(async (req, o) => {
      await backend.remove(req.ID, o);
      return create(MemberRemoveResponseSchema, { header: header(), members: members() });
    }),
    MemberUpdate: etcdUnary(async (req, o) => {
      await backend.update(req.ID, peerAddressOfUrls(req.peerURLs), o);
      return create(MemberUpdateResponseSchema, { header: header(), members: members() });
    }),
    MemberPromote: etcdUnary(async (req, o) => {
      await backend.promote(req.ID, o);
      return create(MemberPromoteResponseSchema, { header: header(), members: members() });
    }),
  });
}
