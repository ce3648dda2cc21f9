/** Shared helpers of the request-semantics tests: a model store, messages, bytes. */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { MvccWrite } from "../../../src/mvcc/types.js";
import {
  type Compare,
  Compare_CompareResult,
  Compare_CompareTarget,
  CompareSchema,
  DeleteRangeRequestSchema,
  PutRequestSchema,
  RangeRequestSchema,
  type RequestOp,
  RequestOpSchema,
  TxnRequestSchema,
} from "../../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { MvccModel } from "../../support/mvcc-model.js";

export const b = (s: string): Uint8Array => Buffer.from(s);
export const s = (u: Uint8Array): string => Buffer.from(u).toString();

export const rangeReq = (init: MessageInitShape<typeof RangeRequestSchema>) =>
  create(RangeRequestSchema, init);
export const putReq = (init: MessageInitShape<typeof PutRequestSchema>) =>
  create(PutRequestSchema, init);
export const delReq = (init: MessageInitShape<typeof DeleteRangeRequestSchema>) =>
  create(DeleteRangeRequestSchema, init);
export const txnReq = (init: MessageInitShape<typeof TxnRequestSchema>) =>
  create(TxnRequestSchema, init);

export const opPut = (key: string, value = "", more: object = {}): RequestOp =>
  create(RequestOpSchema, {
    request: { case: "requestPut", value: { key: b(key), value: b(value), ...more } },
  });
export const opDel = (key: string, end = "", more: object = {}): RequestOp =>
  create(RequestOpSchema, {
    request: { case: "requestDeleteRange", value: { key: b(key), rangeEnd: b(end), ...more } },
  });
export const opRange = (key: string, end = "", more: object = {}): RequestOp =>
  create(RequestOpSchema, {
    request: { case: "requestRange", value: { key: b(key), rangeEnd: b(end), ...more } },
  });
export const opTxn = (init: MessageInitShape<typeof TxnRequestSchema>): RequestOp =>
  create(RequestOpSchema, { request: { case: "requestTxn", value: init } });

type Target = "version" | "createRevision" | "modRevision" | "lease" | "value";
const TARGET: Record<Target, Compare_CompareTarget> = {
  version: Compare_CompareTarget.VERSION,
  createRevision: Compare_CompareTarget.CREATE,
  modRevision: Compare_CompareTarget.MOD,
  lease: Compare_CompareTarget.LEASE,
  value: Compare_CompareTarget.VALUE,
};
const RESULT = {
  "==": Compare_CompareResult.EQUAL,
  "!=": Compare_CompareResult.NOT_EQUAL,
  ">": Compare_CompareResult.GREATER,
  "<": Compare_CompareResult.LESS,
};

/** A compare: `cmp("a", "version", ">", 1n)`, `cmp("a", "value", "==", "x")`. */
export function cmp(
  key: string,
  target: Target,
  result: keyof typeof RESULT,
  value: bigint | string,
  rangeEnd = "",
): Compare {
  const targetUnion =
    target === "value"
      ? { case: "value" as const, value: b(value as string) }
      : { case: target, value: value as bigint };
  return create(CompareSchema, {
    key: b(key),
    rangeEnd: b(rangeEnd),
    target: TARGET[target],
    result: RESULT[result],
    targetUnion,
  });
}

/** A model store starting, as etcd does, at revision 1. */
export function freshModel(): MvccModel {
  const m = new MvccModel();
  m.revision = 1;
  return m;
}

/** Runs `fn` in one write transaction of `m` and ends it (also when `fn` throws). */
export async function inWrite<T>(m: MvccModel, fn: (w: MvccWrite) => Promise<T>): Promise<T> {
  const w = m.write();
  try {
    return await fn(w);
  } finally {
    await w.end();
  }
}

/** Puts each key = value in its own write (one revision each). */
export async function seed(m: MvccModel, pairs: [string, string][]): Promise<void> {
  for (const [k, v] of pairs) {
    const w = m.write();
    await w.put(b(k), b(v), 0n);
    await w.end();
  }
}
