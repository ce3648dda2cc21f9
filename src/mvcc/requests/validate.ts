/**
 * The checks etcd's API layer makes before a request is proposed (v3rpc/key.go): they
 * need only the request, so they run on the member that receives the call, and a request
 * they refuse is never proposed. What needs the store's state is checked when the request
 * is applied (put.ts, txn.ts). Each throws RequestError, the first failing check's.
 */
import type {
  DeleteRangeRequest,
  PutRequest,
  RangeRequest,
  RequestOp,
  TxnRequest,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { checkIntervals } from "./check-intervals.js";
import { RequestError } from "./request-error.js";

/** etcd's default limit on a txn's compares and on the ops of each branch (--max-txn-ops). */
export const DEFAULT_MAX_TXN_OPS = 128;

export function validateRange(req: RangeRequest): void {
  if (req.key.length === 0) throw new RequestError("EMPTY_KEY");
}

export function validatePut(req: PutRequest): void {
  if (req.key.length === 0) throw new RequestError("EMPTY_KEY");
  if (req.ignoreValue && req.value.length !== 0) throw new RequestError("VALUE_PROVIDED");
  if (req.ignoreLease && req.lease !== 0n) throw new RequestError("LEASE_PROVIDED");
}

export function validateDeleteRange(req: DeleteRangeRequest): void {
  if (req.key.length === 0) throw new RequestError("EMPTY_KEY");
}

/**
 * A txn: at most `maxTxnOps` compares and ops per branch (a nested txn gets what its
 * parent leaves: `maxTxnOps` minus the parent's largest count), every compare and op with
 * a key, no empty op (KEY_NOT_FOUND, as etcd answers it), no key written twice
 * (check-intervals.ts).
 */
export function validateTxn(req: TxnRequest, maxTxnOps = DEFAULT_MAX_TXN_OPS): void {
  checkTxn(req, maxTxnOps);
  checkIntervals(req.success);
  checkIntervals(req.failure);
}

function checkTxn(req: TxnRequest, maxTxnOps: number): void {
  const opc = Math.max(req.compare.length, req.success.length, req.failure.length);
  if (opc > maxTxnOps) throw new RequestError("TOO_MANY_OPS");
  for (const c of req.compare) if (c.key.length === 0) throw new RequestError("EMPTY_KEY");
  for (const op of req.success) checkOp(op, maxTxnOps - opc);
  for (const op of req.failure) checkOp(op, maxTxnOps - opc);
}

function checkOp(op: RequestOp, maxTxnOps: number): void {
  const r = op.request;
  switch (r.case) {
    case "requestRange":
      validateRange(r.value);
      return;
    case "requestPut":
      validatePut(r.value);
      return;
    case "requestDeleteRange":
      validateDeleteRange(r.value);
      return;
    case "requestTxn":
      checkTxn(r.value, maxTxnOps);
      return;
    default:
      throw new RequestError("KEY_NOT_FOUND");
  }
}
