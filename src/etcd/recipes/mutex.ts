/**
 * etcd's lock (v3lock.Lock over clientv3/concurrency's Mutex, with etcd 3.5's re-check):
 * the contenders of lock `name` are the keys `name/<lease in hex>`, served in the order of
 * their create revisions. The holder's key, and its create revision, are the fencing
 * token: a write guarded by a Txn comparing them is refused once the lock was lost.
 */
import { create } from "@bufbuild/protobuf";
import {
  DeleteRangeRequestSchema,
  type DeleteRangeResponse,
  RangeRequestSchema,
  type ResponseHeader,
  TxnRequestSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdCallOptions } from "../etcd-backend.js";
import { EtcdError } from "../etcd-errors.js";
import {
  byCreateRange,
  contenderKey,
  createRevisionIs,
  DEFAULT_SESSION_TTL_SECONDS,
  get,
  prefixOf,
  type RecipeBackend,
  RecipeError,
  rangeKvs,
} from "./recipe-backend.js";
import { waitDeletes } from "./wait-deletes.js";

export interface Acquired {
  /** The contender's key (`prefix` + lease in hex): it exists while held. */
  readonly key: Uint8Array;
  /** Its create revision: its place in the queue, and the fencing token with the key. */
  readonly createRevision: bigint;
  /** The header of the last read or write of the acquisition. */
  readonly header: ResponseHeader | undefined;
  /** The lease the key is attached to (granted when none was given). */
  readonly lease: bigint;
}

/** The lease to attach: `lease`, or a session lease granted now when it is 0. */
export async function sessionLease(
  b: RecipeBackend,
  lease: bigint,
  options: EtcdCallOptions,
): Promise<bigint> {
  if (lease !== 0n) return lease;
  if (b.grantLease === undefined) throw new EtcdError("LEASE_NOT_FOUND");
  return b.grantLease(DEFAULT_SESSION_TTL_SECONDS, options);
}

/**
 * Waits until the key under `prefix` created at `createRevision` is the oldest (every
 * contender created before it is gone), then checks it still exists with that create
 * revision (its lease may have expired meanwhile: etcd 11456). Resolves with the header of
 * that check; throws `lost()` when the key is gone or was created again. When the wait or
 * the check fails (cancelled: KvError ABORTED, or a read failed), runs `onWaitFailure`
 * (the cleanup) before throwing that failure.
 */
export async function waitTurn(
  b: RecipeBackend,
  prefix: Uint8Array,
  key: Uint8Array,
  createRevision: bigint,
  options: EtcdCallOptions,
  lost: () => Error,
  onWaitFailure: (err: unknown) => Promise<void>,
): Promise<ResponseHeader | undefined> {
  let check: Awaited<ReturnType<typeof get>>;
  try {
    await waitDeletes(b, prefix, createRevision - 1n, options);
    check = await get(b.kv, key, options);
  } catch (err) {
    await onWaitFailure(err);
    throw err;
  }
  const kv = check.kvs[0];
  if (kv === undefined || kv.createRevision !== createRevision) throw lost();
  return check.header;
}

/**
 * Acquires lock `name` for `lease` (0: a session lease of 60 s is granted): puts
 * `name/<lease hex>` (or finds it: the same lease locking again is the same acquisition)
 * and waits for every older contender's key to go. A cancelled or failed wait deletes the
 * key. Throws "mutex: session is expired" when the key was gone after the wait, etcd's
 * errors from the store ("requested lease not found" for a lease that does not exist),
 * KvError ABORTED when cancelled.
 */
export async function lock(
  b: RecipeBackend,
  name: Uint8Array,
  lease: bigint,
  options: EtcdCallOptions,
): Promise<Acquired> {
  const id = await sessionLease(b, lease, options);
  const prefix = prefixOf(name);
  const key = contenderKey(prefix, id);
  const owner = { case: "requestRange" as const, value: byCreateRange(prefix, false) };
  const r = await b.kv.txn(
    create(TxnRequestSchema, {
      compare: [createRevisionIs(key, 0n)],
      success: [{ request: { case: "requestPut", value: { key, lease: id } } }, { request: owner }],
      failure: [
        { request: { case: "requestRange", value: create(RangeRequestSchema, { key }) } },
        { request: owner },
      ],
    }),
    options,
  );
  let myRev = r.header?.revision ?? 0n;
  if (!r.succeeded) {
    const mine = rangeKvs(r.responses[0])[0];
    if (mine === undefined) throw new RecipeError("SESSION_EXPIRED");
    myRev = mine.createRevision;
  }
  const first = rangeKvs(r.responses[1])[0];
  if (first === undefined || first.createRevision === myRev)
    return { key, createRevision: myRev, header: r.header, lease: id };
  const header = await waitTurn(
    b,
    prefix,
    key,
    myRev,
    options,
    () => new RecipeError("SESSION_EXPIRED"),
    () => deleteQuietly(b, key),
  );
  return { key, createRevision: myRev, header, lease: id };
}

/** Releases a lock: deletes `key` (answers the delete, whether or not it existed). */
export function unlock(
  b: RecipeBackend,
  key: Uint8Array,
  options: EtcdCallOptions,
): Promise<DeleteRangeResponse> {
  return b.kv.deleteRange(create(DeleteRangeRequestSchema, { key }), options);
}

/** Deletes `key`, not cancellable, failures ignored (the cleanup of a failed wait). */
async function deleteQuietly(b: RecipeBackend, key: Uint8Array): Promise<void> {
  try {
    await unlock(b, key, {});
  } catch {
    // The key stays until its lease ends, as in etcd.
  }
}
