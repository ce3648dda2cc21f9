/**
 * The errors etcd's KV requests fail with (besides KvError COMPACTED and FUTURE_REVISION,
 * which the store throws): each a KvError INVALID_ARGUMENT whose `reason` names etcd's
 * error. The etcd service (src/etcd/etcd-errors.ts) turns a reason into etcd's gRPC status
 * and exact message text; the messages here are for logs and other callers.
 */
import { KvError } from "../../errors.js";

export type RequestErrorReason =
  /** A request (or a compare, or a txn op) without a key. */
  | "EMPTY_KEY"
  /** Put with ignore_value or ignore_lease on an absent key; an empty txn op. */
  | "KEY_NOT_FOUND"
  /** Put with ignore_value and a value. */
  | "VALUE_PROVIDED"
  /** Put with ignore_lease and a lease. */
  | "LEASE_PROVIDED"
  /** A txn with more compares, or ops in a branch, than the limit. */
  | "TOO_MANY_OPS"
  /** A txn that writes a key twice (etcd 3.4's rule: check-intervals.ts). */
  | "DUPLICATE_KEY"
  /** Put on a lease that does not exist; revoke of an unknown lease. */
  | "LEASE_NOT_FOUND"
  /** Grant of an ID already granted. */
  | "LEASE_EXISTS"
  /** Grant of a TTL above etcd's MaxLeaseTTL. */
  | "LEASE_TTL_TOO_LARGE";

const MESSAGES: Readonly<Record<RequestErrorReason, string>> = {
  EMPTY_KEY: "key is not provided",
  KEY_NOT_FOUND: "key not found",
  VALUE_PROVIDED: "value is provided",
  LEASE_PROVIDED: "lease is provided",
  TOO_MANY_OPS: "too many operations in txn request",
  DUPLICATE_KEY: "duplicate key given in txn request",
  LEASE_NOT_FOUND: "requested lease not found",
  LEASE_EXISTS: "lease already exists",
  LEASE_TTL_TOO_LARGE: "too large lease TTL",
};

/** A request refused by etcd's rules; nothing was changed. */
export class RequestError extends KvError {
  constructor(readonly reason: RequestErrorReason) {
    super("INVALID_ARGUMENT", MESSAGES[reason]);
  }
}

/** True iff `err` is a RequestError (with `reason` when given). */
export function isRequestError(err: unknown, reason?: RequestErrorReason): err is RequestError {
  return err instanceof RequestError && (reason === undefined || err.reason === reason);
}
