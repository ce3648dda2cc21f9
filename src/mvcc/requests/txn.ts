/**
 * etcd's Txn (apply.go, applierV3backend.Txn): the compares of the txn and of every nested
 * txn on the chosen path are evaluated first, against the state before the txn; then the
 * chosen ops are checked (puts: ignore_value/ignore_lease need the key, the lease must
 * exist; ranges: their revision neither compacted nor future), and only then run, in
 * order, each seeing the earlier ones' writes, all writes at one revision. A check that
 * fails throws before anything is written, as in etcd (where a failure past the checks
 * is a panic).
 *
 * One stricter check than etcd 3.4: a put with ignore_value or ignore_lease on a key an
 * earlier delete of the same txn removed (possible only through a delete whose range end
 * is "\0", which etcd 3.4's duplicate-key check does not see) fails KEY_NOT_FOUND where
 * etcd would panic (docs/etcd.md).
 */
import { create } from "@bufbuild/protobuf";
import { KvError } from "../../errors.js";
import {
  type RequestOp,
  type ResponseOp,
  ResponseOpSchema,
  type TxnRequest,
  type TxnResponse,
  TxnResponseSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { MvccView, MvccWrite } from "../types.js";
import { compareAll } from "./compare.js";
import { deleteRange } from "./delete-range.js";
import { inRange } from "./key-range.js";
import { EMPTY, header, int64 } from "./key-value.js";
import { type LeaseLookup, NO_LEASES } from "./leases.js";
import { checkPutLease, put } from "./put.js";
import { range } from "./range.js";
import { RequestError } from "./request-error.js";

/** True iff no op of `req`, in either branch, at any depth, is a put or a delete. */
export function isTxnReadOnly(req: TxnRequest): boolean {
  const readOnly = (ops: readonly RequestOp[]): boolean =>
    ops.every((op) => {
      const r = op.request;
      if (r.case === "requestPut" || r.case === "requestDeleteRange") return false;
      return r.case !== "requestTxn" || isTxnReadOnly(r.value);
    });
  return readOnly(req.success) && readOnly(req.failure);
}

/** A txn's chosen branch, with the chosen branches of its nested txns. */
interface Chosen {
  readonly succeeded: boolean;
  readonly ops: readonly RequestOp[];
  /** By op index: the nested txn's chosen branch. */
  readonly nested: ReadonlyMap<number, Chosen>;
}

async function choose(view: MvccView, req: TxnRequest): Promise<Chosen> {
  const succeeded = await compareAll(view, req.compare);
  const ops = succeeded ? req.success : req.failure;
  const nested = new Map<number, Chosen>();
  for (let i = 0; i < ops.length; i++) {
    const r = ops[i]!.request;
    if (r.case === "requestTxn") nested.set(i, await choose(view, r.value));
  }
  return { succeeded, ops, nested };
}

/** The chosen ops in the order they run (nested txns' ops in place). */
function* chosenOps(c: Chosen): Generator<RequestOp> {
  for (let i = 0; i < c.ops.length; i++) {
    const inner = c.nested.get(i);
    if (inner !== undefined) yield* chosenOps(inner);
    else yield c.ops[i]!;
  }
}

/** etcd's checkRequestPut over the chosen ops, against the state before the txn. */
async function checkPuts(view: MvccView, chosen: Chosen, leases: LeaseLookup): Promise<void> {
  const deleted: [Uint8Array, Uint8Array][] = [];
  for (const op of chosenOps(chosen)) {
    const r = op.request;
    if (r.case === "requestDeleteRange") deleted.push([r.value.key, r.value.rangeEnd]);
    if (r.case !== "requestPut") continue;
    const p = r.value;
    if (p.ignoreValue || p.ignoreLease) {
      const absent = (await view.range(p.key, EMPTY)).kvs.length === 0;
      if (absent || deleted.some(([k, e]) => inRange(p.key, k, e)))
        throw new RequestError("KEY_NOT_FOUND");
    }
    checkPutLease(p, leases);
  }
}

/** etcd's checkRequestRange over the chosen ops. */
function checkRanges(view: MvccView, chosen: Chosen): void {
  // etcd's first revision of a never compacted store is -1.
  const first = view.compactRevision === 0 ? -1 : view.compactRevision;
  for (const op of chosenOps(chosen)) {
    if (op.request.case !== "requestRange") continue;
    const rev = int64(op.request.value.revision);
    if (rev === 0) continue;
    if (rev > view.revision)
      throw new KvError("FUTURE_REVISION", "mvcc: required revision is a future revision");
    if (rev < first) throw new KvError("COMPACTED", "mvcc: required revision has been compacted");
  }
}

async function apply(
  view: MvccView,
  write: MvccWrite | undefined,
  chosen: Chosen,
  leases: LeaseLookup,
): Promise<{ succeeded: boolean; responses: ResponseOp[] }> {
  const responses: ResponseOp[] = [];
  for (let i = 0; i < chosen.ops.length; i++) {
    const r = chosen.ops[i]!.request;
    const out = create(ResponseOpSchema);
    switch (r.case) {
      case "requestRange":
        out.response = { case: "responseRange", value: await range(view, r.value) };
        break;
      case "requestPut":
        out.response = { case: "responsePut", value: await put(writable(write), r.value, leases) };
        break;
      case "requestDeleteRange":
        out.response = {
          case: "responseDeleteRange",
          value: await deleteRange(writable(write), r.value, leases),
        };
        break;
      case "requestTxn": {
        // A nested txn's header stays empty, as in etcd.
        const inner = await apply(view, write, chosen.nested.get(i)!, leases);
        out.response = {
          case: "responseTxn",
          value: create(TxnResponseSchema, { header: {}, ...inner }),
        };
        break;
      }
      default:
    }
    responses.push(out);
  }
  return { succeeded: chosen.succeeded, responses };
}

function writable(write: MvccWrite | undefined): MvccWrite {
  if (write === undefined) throw new Error("a txn that writes needs a write transaction");
  return write;
}

async function run(
  view: MvccView,
  write: MvccWrite | undefined,
  req: TxnRequest,
  leases: LeaseLookup,
): Promise<TxnResponse> {
  const chosen = await choose(view, req);
  if (write !== undefined) await checkPuts(view, chosen, leases);
  checkRanges(view, chosen);
  const result = await apply(view, write, chosen, leases);
  return create(TxnResponseSchema, { header: header(view.revision), ...result });
}

/**
 * Runs `req` in `write`. Throws RequestError KEY_NOT_FOUND or LEASE_NOT_FOUND, or KvError
 * COMPACTED or FUTURE_REVISION, before writing anything.
 */
export async function txn(
  write: MvccWrite,
  req: TxnRequest,
  leases: LeaseLookup,
): Promise<TxnResponse> {
  return await run(write, write, req, leases);
}

/**
 * Runs a read-only `req` (isTxnReadOnly) on `view`, as etcd serves such a txn without a
 * write. Throws KvError COMPACTED or FUTURE_REVISION; rejects with Error if `req` is not read-only.
 */
export async function readTxn(view: MvccView, req: TxnRequest): Promise<TxnResponse> {
  if (!isTxnReadOnly(req)) throw new Error("readTxn: the txn writes");
  return await run(view, undefined, req, NO_LEASES);
}
