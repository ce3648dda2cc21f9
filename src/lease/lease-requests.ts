/**
 * The lease requests every member applies (etcd's LeaseGrant and LeaseRevoke, and our
 * Tick, which advances the lease clock and expires leases), run on a multi-version store
 * and its lease table (lease-table.ts). Each is deterministic in the table and the store:
 * every member computes the same revisions.
 *
 * - Grant(id, ttl): id > 0 (the proposer chose one when the client gave 0), ttl already
 *   raised to the minimum by the proposer; refused LEASE_TTL_TOO_LARGE above
 *   MAX_LEASE_TTL, LEASE_EXISTS for an id granted. expiresAt = T + ttl s. No revision.
 * - Revoke(id): every key whose latest version names the lease deleted in ONE write
 *   transaction (one revision, none when no key), the record removed; LEASE_NOT_FOUND for
 *   an unknown id.
 * - Tick(elapsedMs, renewed, slackMs): each renewed lease that exists and had not expired
 *   before this tick gets expiresAt = T' + ttl + slackMs, where T' = T + elapsedMs (a
 *   follower's renewals carry its Tick interval as slack: the replicated T it is applied
 *   at lags the leader's clock by up to that much); then the leases with
 *   expiresAt <= T' are revoked, each in its own write transaction, in (expiresAt, id)
 *   order, at most MAX_REVOKES_PER_TICK (the rest at the next tick).
 */
import { create } from "@bufbuild/protobuf";
import type { WriteBatch } from "../batch/write-batch.js";
import { EMPTY, header } from "../mvcc/requests/key-value.js";
import { RequestError } from "../mvcc/requests/request-error.js";
import type { Mvcc, MvccWrite } from "../mvcc/types.js";
import {
  type LeaseGrantRequest,
  type LeaseGrantResponse,
  LeaseGrantResponseSchema,
  type LeaseRevokeRequest,
  type LeaseRevokeResponse,
  LeaseRevokeResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { encodeLeaseRecord, encodeLeaseTime, LEASE_TIME_KEY, leaseKey } from "./lease-records.js";
import type { Lease, LeaseTable } from "./lease-table.js";

/** etcd's MaxLeaseTTL: 9,000,000,000 s. */
export const MAX_LEASE_TTL = 9_000_000_000;
/** The most leases one Tick revokes (etcd revokes at most 1000/s; a Tick every 500 ms). */
export const MAX_REVOKES_PER_TICK = 500;

/** Our Tick: the primary's clock advance and the keep-alives since the last one. */
export interface LeaseTick {
  /** Milliseconds to add to T (0 for a follower's renewals). */
  readonly elapsedMs: number;
  /** The leases kept alive, in the order asked. */
  readonly renewed: readonly bigint[];
  /** Added to the renewed expiries (a follower's renewals: its Tick interval). Default 0. */
  readonly slackMs?: number;
}

export type LeaseRequest =
  | { readonly kind: "leaseGrant"; readonly request: LeaseGrantRequest }
  | { readonly kind: "leaseRevoke"; readonly request: LeaseRevokeRequest }
  | { readonly kind: "leaseTick"; readonly request: LeaseTick };

/** A Tick's answer: per renewed id (same order), its granted TTL if it lives on, else 0. */
export interface LeaseTickResult {
  readonly ttls: readonly number[];
  /** None: a Tick is not an etcd request. */
  readonly header?: undefined;
}

export type LeaseResponse = LeaseGrantResponse | LeaseRevokeResponse | LeaseTickResult;

/** What runLeaseRequest resolves with (as runMvccRequest's). */
export interface LeaseRun {
  /** Resolves once every write of the request is visible. */
  readonly ended: Promise<void>;
  readonly response?: LeaseResponse;
  /** A RequestError: the request was refused, nothing but `fill`'s keys changed. */
  readonly error?: unknown;
}

type Fill = (b: WriteBatch) => void;

/**
 * Applies `req` to `mvcc` and `table` as every member applies it, `fill`'s operations (the
 * applied index) in the batch of its last write transaction. Resolves once every write
 * transaction is ended (the next request may begin). Throws (the member must stop) only
 * when the store fails. REQUIRES: no write open on `mvcc`.
 */
export async function runLeaseRequest(
  mvcc: Mvcc,
  table: LeaseTable,
  req: LeaseRequest,
  fill: Fill,
): Promise<LeaseRun> {
  switch (req.kind) {
    case "leaseGrant":
      return grant(mvcc.write(), table, req.request, fill);
    case "leaseRevoke":
      return revoke(mvcc.write(), table, req.request, fill);
    case "leaseTick":
      return tick(mvcc, table, req.request, fill);
  }
}

function grant(w: MvccWrite, table: LeaseTable, req: LeaseGrantRequest, fill: Fill): LeaseRun {
  const id = req.ID;
  let error: RequestError | undefined;
  if (id <= 0n) error = new RequestError("LEASE_NOT_FOUND");
  else if (req.TTL > BigInt(MAX_LEASE_TTL)) error = new RequestError("LEASE_TTL_TOO_LARGE");
  else if (table.get(id) !== undefined) error = new RequestError("LEASE_EXISTS");
  if (error !== undefined) return { ended: w.end(fill), error };
  const ttl = Math.max(0, Number(req.TTL));
  const record = { id, ttl, expiresAt: table.time + ttl * 1000 };
  table.add(record);
  const ended = w.end((b) => {
    b.put(leaseKey(id), encodeLeaseRecord(record));
    fill(b);
  });
  const response = create(LeaseGrantResponseSchema, {
    header: header(w.revision),
    ID: id,
    TTL: BigInt(ttl),
  });
  return { ended, response };
}

/** Deletes in `w` the keys of `lease` whose latest version still names it. */
async function deleteAttached(w: MvccWrite, table: LeaseTable, lease: Lease): Promise<void> {
  for (const key of table.keysOf(lease.id)) {
    const latest = (await w.range(key, EMPTY)).kvs[0];
    if (latest?.lease === lease.id) await w.deleteRange(key, EMPTY);
  }
}

async function revoke(
  w: MvccWrite,
  table: LeaseTable,
  req: LeaseRevokeRequest,
  fill: Fill,
): Promise<LeaseRun> {
  const lease = table.get(req.ID);
  if (lease === undefined)
    return { ended: w.end(fill), error: new RequestError("LEASE_NOT_FOUND") };
  await deleteAttached(w, table, lease);
  table.remove(lease.id);
  const ended = w.end((b) => {
    b.delete(leaseKey(lease.id));
    fill(b);
  });
  return { ended, response: create(LeaseRevokeResponseSchema, { header: header(w.revision) }) };
}

async function tick(mvcc: Mvcc, table: LeaseTable, t: LeaseTick, fill: Fill): Promise<LeaseRun> {
  const before = table.time;
  table.time = before + Math.max(0, Math.floor(t.elapsedMs));
  const renewed = new Set<Lease>();
  for (const id of t.renewed) {
    const l = table.get(id);
    if (l !== undefined && l.expiresAt > before && !renewed.has(l)) {
      l.expiresAt = table.time + l.ttl * 1000 + Math.max(0, Math.floor(t.slackMs ?? 0));
      renewed.add(l);
    }
  }
  const ttls = t.renewed.map((id) => (table.exists(id) ? table.get(id)!.ttl : 0));
  const clock = (b: WriteBatch) => {
    b.put(LEASE_TIME_KEY, encodeLeaseTime(table.time));
    for (const l of renewed) b.put(leaseKey(l.id), encodeLeaseRecord(l));
  };
  const expired = table.expired().slice(0, MAX_REVOKES_PER_TICK);
  if (expired.length === 0) {
    const ended = mvcc.write().end((b) => {
      clock(b);
      fill(b);
    });
    return { ended, response: { ttls } };
  }
  const ends: Promise<void>[] = [];
  for (const [i, lease] of expired.entries()) {
    const w = mvcc.write();
    await deleteAttached(w, table, lease);
    table.remove(lease.id);
    ends.push(
      w.end((b) => {
        if (i === 0) clock(b);
        b.delete(leaseKey(lease.id));
        if (i === expired.length - 1) fill(b);
      }),
    );
  }
  for (const e of ends) e.catch(() => {});
  return { ended: Promise.all(ends).then(() => {}), response: { ttls } };
}
