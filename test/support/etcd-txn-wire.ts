/**
 * The txn checker's vocabulary (linearizability/txn-model.ts) on etcd's wire: a TxnInput
 * as the etcd request that asks it (a Range, Put or DeleteRange for a lone op without
 * compares, else a Txn), and the etcd response as the TxnOutput to record. Keys and
 * values are UTF-8 strings.
 */
import { create } from "@bufbuild/protobuf";
import {
  type Compare,
  Compare_CompareResult,
  Compare_CompareTarget,
  CompareSchema,
  type DeleteRangeResponse,
  type PutResponse,
  type RangeResponse,
  type RequestOp,
  RequestOpSchema,
  type TxnRequest,
  TxnRequestSchema,
  type TxnResponse,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { KeyValue } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import type { EtcdGrpcClient } from "./etcd-grpc-client.js";
import type {
  TxnCompare,
  TxnInput,
  TxnKv,
  TxnOp,
  TxnOpResult,
  TxnOutput,
} from "./linearizability/index.js";

const utf8 = new TextEncoder();
const text = new TextDecoder();
const b = (s: string): Uint8Array => utf8.encode(s);

const RESULT: Record<TxnCompare["op"], Compare_CompareResult> = {
  "==": Compare_CompareResult.EQUAL,
  "!=": Compare_CompareResult.NOT_EQUAL,
  "<": Compare_CompareResult.LESS,
  ">": Compare_CompareResult.GREATER,
};

function compareOf(c: TxnCompare): Compare {
  const base = { key: b(c.key), rangeEnd: b(c.end ?? ""), result: RESULT[c.op] };
  if (c.target === "value") {
    return create(CompareSchema, {
      ...base,
      target: Compare_CompareTarget.VALUE,
      targetUnion: { case: "value", value: b(String(c.value)) },
    });
  }
  const n = BigInt(c.value);
  const [target, targetUnion] =
    c.target === "version"
      ? [Compare_CompareTarget.VERSION, { case: "version" as const, value: n }]
      : c.target === "create"
        ? [Compare_CompareTarget.CREATE, { case: "createRevision" as const, value: n }]
        : [Compare_CompareTarget.MOD, { case: "modRevision" as const, value: n }];
  return create(CompareSchema, { ...base, target, targetUnion });
}

function requestOpOf(op: TxnOp): RequestOp {
  switch (op.type) {
    case "range":
      return create(RequestOpSchema, {
        request: { case: "requestRange", value: { key: b(op.key), rangeEnd: b(op.end ?? "") } },
      });
    case "put":
      return create(RequestOpSchema, {
        request: { case: "requestPut", value: { key: b(op.key), value: b(op.value) } },
      });
    case "delete":
      return create(RequestOpSchema, {
        request: {
          case: "requestDeleteRange",
          value: { key: b(op.key), rangeEnd: b(op.end ?? "") },
        },
      });
  }
}

/** `input` as an etcd TxnRequest. */
export function txnRequestOf(input: TxnInput): TxnRequest {
  return create(TxnRequestSchema, {
    compare: input.compares.map(compareOf),
    success: input.success.map(requestOpOf),
    failure: input.failure.map(requestOpOf),
  });
}

/** A returned key-value as the model's. */
export function kvOf(kv: KeyValue): TxnKv {
  return {
    key: text.decode(kv.key),
    value: text.decode(kv.value),
    createRevision: Number(kv.createRevision),
    modRevision: Number(kv.modRevision),
    version: Number(kv.version),
  };
}

const revisionOf = (r: { header?: { revision: bigint } | undefined }): number =>
  Number(r.header?.revision ?? -1n);

function rangeResult(r: RangeResponse): TxnOpResult {
  return { type: "range", kvs: r.kvs.map(kvOf) };
}

function deleteResult(r: DeleteRangeResponse): TxnOpResult {
  return { type: "delete", deleted: Number(r.deleted) };
}

/** `r` as the model's answer. */
export function txnOutputOf(r: TxnResponse): TxnOutput {
  const results = r.responses.map((op): TxnOpResult => {
    const x = op.response;
    switch (x.case) {
      case "responseRange":
        return rangeResult(x.value);
      case "responsePut":
        return { type: "put" };
      case "responseDeleteRange":
        return deleteResult(x.value);
      default:
        throw new Error(`unexpected txn response op ${String(x.case)}`);
    }
  });
  return { revision: revisionOf(r), succeeded: r.succeeded, results };
}

/** A lone op without compares: sent as its own call (Range, Put, DeleteRange). */
function lone(input: TxnInput): TxnOp | undefined {
  return input.compares.length === 0 && input.failure.length === 0 && input.success.length === 1
    ? input.success[0]
    : undefined;
}

/**
 * Sends `input` through `client`: a lone op as its own call (a linearizable Range, a Put,
 * a DeleteRange), anything else as a Txn. Resolves with the model's form of the answer;
 * rejects as the call did.
 */
export async function sendTxnInput(client: EtcdGrpcClient, input: TxnInput): Promise<TxnOutput> {
  const op = lone(input);
  if (op === undefined) return txnOutputOf(await client.txn(txnRequestOf(input)));
  const one = (result: TxnOpResult, r: { header?: { revision: bigint } | undefined }) => ({
    revision: revisionOf(r),
    succeeded: true,
    results: [result],
  });
  switch (op.type) {
    case "range": {
      const r = await client.range({ key: b(op.key), rangeEnd: b(op.end ?? "") });
      return one(rangeResult(r), r);
    }
    case "put": {
      const r: PutResponse = await client.put({ key: b(op.key), value: b(op.value) });
      return one({ type: "put" }, r);
    }
    case "delete": {
      const r = await client.deleteRange({ key: b(op.key), rangeEnd: b(op.end ?? "") });
      return one(deleteResult(r), r);
    }
  }
}

/** The kvs of [key, end) at `revision` (a linearizable Range at a revision). */
export async function rangeAt(
  client: EtcdGrpcClient,
  key: string,
  end: string | undefined,
  revision: number,
): Promise<{ revision: number; kvs: TxnKv[] }> {
  const r = await client.range({
    key: b(key),
    rangeEnd: b(end ?? ""),
    revision: BigInt(revision),
  });
  return { revision: revisionOf(r), kvs: r.kvs.map(kvOf) };
}
