/**
 * What etcd's concurrency recipes (mutex.ts, election.ts, wait-deletes.ts) need of a
 * member, and their shared pieces: the keys under a name, the reads by create revision,
 * and the recipes' own errors (etcd's texts).
 */
import { create } from "@bufbuild/protobuf";
import {
  type Compare,
  Compare_CompareResult,
  Compare_CompareTarget,
  CompareSchema,
  type LeaseGrantRequest,
  LeaseGrantRequestSchema,
  type LeaseGrantResponse,
  type RangeRequest,
  RangeRequest_SortOrder,
  RangeRequest_SortTarget,
  RangeRequestSchema,
  type RangeResponse,
  type ResponseOp,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue } from "../../proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { EtcdCallOptions, EtcdKvBackend } from "../etcd-backend.js";
import type { EtcdWatchBackend } from "../watch-service.js";

/** etcd's session TTL (concurrency.defaultSessionTTL), for a Lock or Campaign without a lease. */
export const DEFAULT_SESSION_TTL_SECONDS = 60;

export interface RecipeBackend {
  /** The store, through etcd's KV semantics (writes replicated on a cluster). */
  readonly kv: EtcdKvBackend;
  /** The member's watchers (the waits watch through its hub) and header ids. */
  readonly watch: Pick<EtcdWatchBackend, "hub" | "ids">;
  /**
   * Grants a lease of `ttlSeconds` and answers its ID: what a Lock or Campaign with lease 0
   * gets (etcd grants it a session lease of 60 s, never kept alive). Absent (no lease
   * service): such a call fails "etcdserver: requested lease not found".
   */
  readonly grantLease?: (ttlSeconds: number, options?: EtcdCallOptions) => Promise<bigint>;
}

/** What granting a session lease needs of a Lease backend (EtcdLeaseBackend's leaseGrant). */
export interface LeaseGranting {
  leaseGrant(req: LeaseGrantRequest, options?: EtcdCallOptions): Promise<LeaseGrantResponse>;
}

/**
 * `RecipeBackend.grantLease` through `lease` (a member's Lease backend), or nothing when
 * the member serves no leases: spread into a RecipeBackend.
 */
export function grantingFrom(lease: LeaseGranting | undefined): Pick<RecipeBackend, "grantLease"> {
  if (lease === undefined) return {};
  return {
    grantLease: async (ttlSeconds, options) =>
      (
        await lease.leaseGrant(
          create(LeaseGrantRequestSchema, { TTL: BigInt(ttlSeconds) }),
          options,
        )
      ).ID,
  };
}

/** The recipes' own failures, with etcd's texts (sent as gRPC UNKNOWN, as etcd sends them). */
export const RECIPE_ERRORS = {
  NOT_LEADER: "election: not leader",
  NO_LEADER: "election: no leader",
  MISSING_LEADER_KEY: '"leader" field must be provided',
  SESSION_EXPIRED: "mutex: session is expired",
} as const;

export class RecipeError extends Error {
  override readonly name = "RecipeError";
  constructor(readonly reason: keyof typeof RECIPE_ERRORS) {
    super(RECIPE_ERRORS[reason]);
  }
}

const encoder = new TextEncoder();

/** `name` + "/" (etcd's key prefix of a lock or election). */
export function prefixOf(name: Uint8Array): Uint8Array {
  const p = new Uint8Array(name.length + 1);
  p.set(name);
  p[name.length] = 0x2f;
  return p;
}

/** `prefix` + the lease ID in lowercase hex (Go's "%s%x"): a contender's key. */
export function contenderKey(prefix: Uint8Array, lease: bigint): Uint8Array {
  const hex = encoder.encode(BigInt.asUintN(64, lease).toString(16));
  const key = new Uint8Array(prefix.length + hex.length);
  key.set(prefix);
  key.set(hex, prefix.length);
  return key;
}

/**
 * The range end of every key starting with `prefix` (etcd's GetPrefixRangeEnd): the
 * prefix with its last byte below 0xff incremented and what follows dropped; [0] (every
 * key from the prefix on) when every byte is 0xff.
 */
export function prefixRangeEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const b = prefix[i] as number;
    if (b < 0xff) {
      const end = new Uint8Array(prefix.subarray(0, i + 1)); // a copy (Buffer's slice is a view)
      end[i] = b + 1;
      return end;
    }
  }
  return new Uint8Array([0]);
}

/**
 * The key under `prefix` with the lowest create revision (clientv3's WithFirstCreate), or
 * with `last` the highest (WithLastCreate), only among keys created at or below
 * `maxCreateRevision` when given.
 */
export function byCreateRange(
  prefix: Uint8Array,
  last: boolean,
  maxCreateRevision = 0n,
): RangeRequest {
  return create(RangeRequestSchema, {
    key: prefix,
    rangeEnd: prefixRangeEnd(prefix),
    limit: 1n,
    sortTarget: RangeRequest_SortTarget.CREATE,
    sortOrder: last ? RangeRequest_SortOrder.DESCEND : RangeRequest_SortOrder.ASCEND,
    maxCreateRevision,
  });
}

/** The compare create_revision(key) == rev. */
export function createRevisionIs(key: Uint8Array, rev: bigint): Compare {
  return create(CompareSchema, {
    key,
    target: Compare_CompareTarget.CREATE,
    result: Compare_CompareResult.EQUAL,
    targetUnion: { case: "createRevision", value: rev },
  });
}

/** Reads `key` alone. */
export function get(
  kv: EtcdKvBackend,
  key: Uint8Array,
  options: EtcdCallOptions,
): Promise<RangeResponse> {
  return kv.range(create(RangeRequestSchema, { key }), options);
}

/** The kvs of a txn op's response when it is a range's (else none). */
export function rangeKvs(op: ResponseOp | undefined): KeyValue[] {
  return op?.response.case === "responseRange" ? op.response.value.kvs : [];
}
