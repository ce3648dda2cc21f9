/**
 * etcd's KV request semantics over the multi-version store (src/mvcc/types.ts): what the
 * API layer checks before proposing (validate.ts), and what every member runs when it
 * applies a request (range, put, deleteRange, txn, compact). Responses are etcd's
 * messages with `header.revision` set; the caller fills in cluster_id, member_id and
 * raft_term of the top-level header (nested headers stay as etcd leaves them).
 */
export { type CompactResult, compact } from "./compact.js";
export { deleteRange } from "./delete-range.js";
export { type LeaseLookup, NO_LEASES } from "./leases.js";
export { put } from "./put.js";
export { range } from "./range.js";
export { isRequestError, RequestError, type RequestErrorReason } from "./request-error.js";
export { isTxnReadOnly, readTxn, txn } from "./txn.js";
export {
  DEFAULT_MAX_TXN_OPS,
  validateDeleteRange,
  validatePut,
  validateRange,
  validateTxn,
} from "./validate.js";
