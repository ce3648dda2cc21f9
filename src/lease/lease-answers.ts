/**
 * The answers both etcd lease backends (the single node's, the cluster member's) build the
 * same way: a grant made ready to propose, and TimeToLive, Leases and KeepAlive responses
 * from the lease table and the lessor.
 */
import { create } from "@bufbuild/protobuf";
import { header } from "../mvcc/requests/key-value.js";
import { RequestError } from "../mvcc/requests/request-error.js";
import {
  type LeaseGrantRequest,
  LeaseGrantRequestSchema,
  type LeaseKeepAliveResponse,
  LeaseKeepAliveResponseSchema,
  type LeaseLeasesResponse,
  LeaseLeasesResponseSchema,
  type LeaseTimeToLiveRequest,
  type LeaseTimeToLiveResponse,
  LeaseTimeToLiveResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { LeaseIdGenerator } from "./lease-ids.js";
import type { LeaseTable } from "./lease-table.js";
import { type Lessor, ttlSeconds } from "./lessor.js";

/**
 * The grant to propose for the client's `req`: its ID, or one from `ids` when 0; its TTL
 * raised to `minTtl` (etcd's minimum). Throws RequestError LEASE_NOT_FOUND for a negative
 * ID (ours: etcd would grant it; our records take positive IDs only).
 */
export function grantToPropose(
  req: LeaseGrantRequest,
  ids: LeaseIdGenerator,
  minTtl: number,
): LeaseGrantRequest {
  if (req.ID < 0n) throw new RequestError("LEASE_NOT_FOUND");
  const min = BigInt(minTtl);
  return create(LeaseGrantRequestSchema, {
    ID: req.ID === 0n ? ids.next() : req.ID,
    TTL: req.TTL < min ? min : req.TTL,
  });
}

/**
 * etcd's LeaseTimeToLive: TTL -1 for an unknown lease (as etcd 3.4); else the remaining
 * whole seconds (lessor.remainingMs: local clock at the primary, the replicated table
 * elsewhere), the granted TTL and, with `keys`, the attached keys whose latest version
 * names the lease (`latestLease`) in key order.
 */
export async function timeToLiveResponse(
  table: LeaseTable,
  lessor: Lessor,
  req: LeaseTimeToLiveRequest,
  revision: number,
  latestLease: (key: Uint8Array) => Promise<bigint | undefined>,
): Promise<LeaseTimeToLiveResponse> {
  const lease = table.get(req.ID);
  const remaining = lessor.remainingMs(req.ID);
  if (lease === undefined || remaining === undefined) {
    return create(LeaseTimeToLiveResponseSchema, {
      header: header(revision),
      ID: req.ID,
      TTL: -1n,
    });
  }
  const keys: Uint8Array[] = [];
  if (req.keys) {
    for (const k of table.keysOf(lease.id)) if ((await latestLease(k)) === lease.id) keys.push(k);
  }
  return create(LeaseTimeToLiveResponseSchema, {
    header: header(revision),
    ID: lease.id,
    TTL: BigInt(ttlSeconds(remaining)),
    grantedTTL: BigInt(lease.ttl),
    keys,
  });
}

/** etcd's LeaseLeases: every lease granted and not yet revoked, in ID order. */
export function leasesResponse(table: LeaseTable, revision: number): LeaseLeasesResponse {
  return create(LeaseLeasesResponseSchema, {
    header: header(revision),
    leases: table.all().map((l) => ({ ID: l.id })),
  });
}

/** A keep-alive's answer: the TTL the lease lives on with (0: not found or expired). */
export function keepAliveResponse(
  id: bigint,
  ttl: number,
  revision: number,
): LeaseKeepAliveResponse {
  return create(LeaseKeepAliveResponseSchema, {
    header: header(revision),
    ID: id,
    TTL: BigInt(ttl),
  });
}
