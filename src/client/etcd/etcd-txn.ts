/**
 * A small builder of etcd transactions: compares (all must hold), then the ops of the
 * branch that runs ("success" when they hold, else "failure"), each a get, put, delete or
 * a nested txn. The answer says which branch ran, with each op's answer in order.
 *
 * ```ts
 * const r = await etcd.txn()
 *   .if("config", "mod", "=", seenRevision)
 *   .success(op.put("config", next))
 *   .failure(op.get("config"))
 *   .commit();
 * r.succeeded; r.responses[0];  // { type: "put", ... } or { type: "get", kvs, ... }
 * ```
 *
 * Compares: `value` against bytes or a string; `version`, `create` (revision), `mod`
 * (revision) against a number; `lease` against a lease ID (bigint or number). Operators
 * "=" (or "=="), "!=", "<", ">". A compare on a range holds iff it holds for every key of
 * it; an absent key compares as version, revisions and lease 0 (a value compare fails).
 */
import { create } from "@bufbuild/protobuf";
import {
  type Compare,
  Compare_CompareResult,
  Compare_CompareTarget,
  CompareSchema,
  type RequestOp,
  RequestOpSchema,
  type ResponseOp,
  type TxnRequest,
  TxnRequestSchema,
  type TxnResponse,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import {
  type DeleteOptions,
  type DeleteResult,
  deleteRequest,
  deleteResult,
  type PutOptions,
  type PutResult,
  putRequest,
  putResult,
  type RangeOptions,
  type RangeResult,
  rangeRequest,
  rangeResult,
} from "./etcd-kv.js";
import {
  type Bytes,
  bytes,
  type EtcdHeader,
  headerOf,
  type KeySelector,
  keyRange,
} from "./etcd-types.js";

export type CompareTarget = "value" | "version" | "create" | "mod" | "lease";
export type CompareOperator = "=" | "==" | "!=" | "<" | ">";

/** One op of a txn branch (made with `op`). */
export type TxnOp =
  | { readonly type: "get"; readonly request: RequestOp }
  | { readonly type: "put"; readonly request: RequestOp }
  | { readonly type: "delete"; readonly request: RequestOp }
  | { readonly type: "txn"; readonly request: RequestOp; readonly writes: boolean };

/** The answer of one op, in the order of the branch that ran. */
export type TxnOpResult =
  | ({ type: "get" } & RangeResult)
  | ({ type: "put" } & PutResult)
  | ({ type: "delete" } & DeleteResult)
  | ({ type: "txn" } & TxnResult);

export interface TxnResult {
  /** For a nested txn: all zeros, as etcd sends it. */
  header: EtcdHeader;
  /** True iff every compare held (the "success" branch ran). */
  succeeded: boolean;
  branch: "success" | "failure";
  responses: TxnOpResult[];
}

function requestOp(request: RequestOp["request"]): RequestOp {
  return create(RequestOpSchema, { request });
}

/** The ops of a txn branch. */
export const op = {
  get(selector: KeySelector, options?: RangeOptions): TxnOp {
    const value = rangeRequest(selector, options);
    return { type: "get", request: requestOp({ case: "requestRange", value }) };
  },
  put(key: Bytes, value: Bytes, options?: PutOptions): TxnOp {
    const v = putRequest(key, value, options);
    return { type: "put", request: requestOp({ case: "requestPut", value: v }) };
  },
  delete(selector: KeySelector, options?: DeleteOptions): TxnOp {
    const value = deleteRequest(selector, options);
    return { type: "delete", request: requestOp({ case: "requestDeleteRange", value }) };
  },
  txn(nested: TxnBuilder): TxnOp {
    const value = nested.request();
    return {
      type: "txn",
      request: requestOp({ case: "requestTxn", value }),
      writes: nested.writes,
    };
  },
} as const;

const RESULTS: Record<CompareOperator, Compare_CompareResult> = {
  "=": Compare_CompareResult.EQUAL,
  "==": Compare_CompareResult.EQUAL,
  "!=": Compare_CompareResult.NOT_EQUAL,
  "<": Compare_CompareResult.LESS,
  ">": Compare_CompareResult.GREATER,
};

function compare(
  selector: KeySelector,
  target: CompareTarget,
  operator: CompareOperator,
  operand: Bytes | number | bigint,
): Compare {
  const result = RESULTS[operator];
  if (result === undefined) throw new TypeError(`compare operator ${String(operator)}`);
  const range = keyRange(selector);
  const int = (what: string): bigint => {
    if (typeof operand === "bigint") return operand;
    if (typeof operand === "number" && Number.isSafeInteger(operand)) return BigInt(operand);
    throw new TypeError(`a ${what} compare takes an integer, got ${String(operand)}`);
  };
  // Each message's fields are named one by one (an object spread before more fields takes
  // V8's slow clone path: microseconds per call).
  const { key, rangeEnd } = range;
  switch (target) {
    case "value":
      if (typeof operand !== "string" && !(operand instanceof Uint8Array)) {
        throw new TypeError("a value compare takes bytes or a string");
      }
      return create(CompareSchema, {
        key,
        rangeEnd,
        result,
        target: Compare_CompareTarget.VALUE,
        targetUnion: { case: "value", value: bytes(operand) },
      });
    case "version":
      return create(CompareSchema, {
        key,
        rangeEnd,
        result,
        target: Compare_CompareTarget.VERSION,
        targetUnion: { case: "version", value: int("version") },
      });
    case "create":
      return create(CompareSchema, {
        key,
        rangeEnd,
        result,
        target: Compare_CompareTarget.CREATE,
        targetUnion: { case: "createRevision", value: int("create") },
      });
    case "mod":
      return create(CompareSchema, {
        key,
        rangeEnd,
        result,
        target: Compare_CompareTarget.MOD,
        targetUnion: { case: "modRevision", value: int("mod") },
      });
    case "lease":
      return create(CompareSchema, {
        key,
        rangeEnd,
        result,
        target: Compare_CompareTarget.LEASE,
        targetUnion: { case: "lease", value: int("lease") },
      });
    default:
      throw new TypeError(`compare target ${String(target)}`);
  }
}

export class TxnBuilder {
  private readonly compares: Compare[] = [];
  private readonly successOps: TxnOp[] = [];
  private readonly failureOps: TxnOp[] = [];

  /** `send` commits (EtcdClient's); a builder without it can only be nested (op.txn). */
  constructor(
    private readonly send?: (request: TxnRequest, writes: boolean) => Promise<TxnResponse>,
  ) {}

  /** Adds a compare (all must hold). Throws a TypeError for a bad target, operator or operand. */
  if(
    key: KeySelector,
    target: CompareTarget,
    operator: CompareOperator,
    operand: Bytes | number | bigint,
  ): this {
    this.compares.push(compare(key, target, operator, operand));
    return this;
  }

  /**
   * Ops run when every compare holds (etcd's "success" branch; not named `then`, which
   * would make the builder a thenable that `await` runs).
   */
  success(...ops: TxnOp[]): this {
    this.successOps.push(...ops);
    return this;
  }

  /** Ops run otherwise (etcd's "failure" branch). */
  failure(...ops: TxnOp[]): this {
    this.failureOps.push(...ops);
    return this;
  }

  /** True iff a branch, at any depth, puts or deletes. */
  get writes(): boolean {
    const w = (o: TxnOp) =>
      o.type === "put" || o.type === "delete" || (o.type === "txn" && o.writes);
    return this.successOps.some(w) || this.failureOps.some(w);
  }

  /** etcd's TxnRequest. */
  request(): TxnRequest {
    return create(TxnRequestSchema, {
      compare: this.compares,
      success: this.successOps.map((o) => o.request),
      failure: this.failureOps.map((o) => o.request),
    });
  }

  /** Sends the txn: a read (retried as reads are) unless it writes. */
  async commit(): Promise<TxnResult> {
    if (this.send === undefined) throw new TypeError("a nested txn is committed by its parent");
    return txnResult(await this.send(this.request(), this.writes));
  }
}

export function txnResult(r: TxnResponse): TxnResult {
  return {
    header: headerOf(r.header),
    succeeded: r.succeeded,
    branch: r.succeeded ? "success" : "failure",
    responses: r.responses.map(opResult),
  };
}

function opResult(r: ResponseOp): TxnOpResult {
  const x = r.response;
  switch (x.case) {
    case "responseRange":
      return { type: "get", ...rangeResult(x.value) };
    case "responsePut":
      return { type: "put", ...putResult(x.value) };
    case "responseDeleteRange":
      return { type: "delete", ...deleteResult(x.value) };
    case "responseTxn":
      return { type: "txn", ...txnResult(x.value) };
    default:
      throw new TypeError("a txn answer op of no known kind");
  }
}
