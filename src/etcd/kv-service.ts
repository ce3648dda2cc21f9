/**
 * etcd's KV service (etcdserverpb.KV: Range, Put, DeleteRange, Txn, Compact) on the lean
 * gRPC path, over an EtcdKvBackend. Each call goes as in etcd's server: the `hasleader`
 * metadata (etcd's clientv3.WithRequireLeader, which Kubernetes sets) fails the call with
 * "etcdserver: no leader" when the backend knows none; the API layer's checks
 * (src/mvcc/requests/validate.ts); for what etcd would propose through Raft (Put,
 * DeleteRange, a Txn that writes, Compact), the request size limit; then the backend.
 * Every failure is answered with etcd's status and text (etcd-errors.ts).
 */
import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { GrpcServer } from "../grpc/grpc-server.js";
import type { MethodDescriptor, ServiceDescriptor } from "../grpc/method.js";
import type { ServerCall } from "../grpc/server-call.js";
import { GrpcError, Status } from "../grpc/status.js";
import {
  DEFAULT_MAX_TXN_OPS,
  isTxnReadOnly,
  validateDeleteRange,
  validatePut,
  validateRange,
  validateTxn,
} from "../mvcc/requests/index.js";
import {
  CompactionRequestSchema,
  CompactionResponseSchema,
  DeleteRangeRequestSchema,
  DeleteRangeResponseSchema,
  file_etcd_api_etcdserverpb_rpc,
  KV,
  PutRequestSchema,
  PutResponseSchema,
  RangeRequestSchema,
  RangeResponseSchema,
  TxnRequestSchema,
  TxnResponseSchema,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdCallOptions, EtcdKvBackend } from "./etcd-backend.js";
import { EtcdError, toEtcdGrpcError } from "./etcd-errors.js";
import { encodeRangeResponse } from "./range-response-codec.js";

/** "etcdserverpb.KV". */
export const ETCD_KV_SERVICE_NAME = KV.typeName;

/** etcd's default --max-request-bytes: 1.5 MiB. */
export const DEFAULT_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;
/** What etcd's gRPC server accepts beyond --max-request-bytes (its grpcOverheadBytes). */
export const GRPC_OVERHEAD_BYTES = 512 * 1024;

export interface EtcdKvServiceOptions {
  /**
   * The largest request etcd would propose (Put, DeleteRange, a Txn that writes,
   * Compact), in encoded bytes; larger: "etcdserver: request is too large". Any request
   * larger than this plus GRPC_OVERHEAD_BYTES is refused as etcd's gRPC server refuses it.
   * Default DEFAULT_MAX_REQUEST_BYTES. (The transport's own message limit applies first.)
   */
  maxRequestBytes?: number;
  /** The most compares, or ops of a branch, in a txn (etcd's --max-txn-ops). Default 128. */
  maxTxnOps?: number;
}

/** The encoded size of each request message decoded by this service. */
const requestBytes = new WeakMap<object, number>();

function method<I extends DescMessage, O extends DescMessage>(
  name: string,
  input: I,
  output: O,
): MethodDescriptor<MessageShape<I>, MessageShape<O>, "unary"> {
  return {
    name,
    path: `/${ETCD_KV_SERVICE_NAME}/${name}`,
    kind: "unary",
    decode(bytes) {
      const message = fromBinary(input, bytes);
      requestBytes.set(message, bytes.length);
      return message;
    },
    encode: (message) => toBinary(output, message),
  };
}

/** etcdserverpb.KV for the lean path. */
export const etcdKvService = {
  name: ETCD_KV_SERVICE_NAME,
  file: file_etcd_api_etcdserverpb_rpc,
  methods: {
    // By hand: a list page's hundreds of KeyValues (range-response-codec.ts).
    Range: {
      ...method("Range", RangeRequestSchema, RangeResponseSchema),
      encode: encodeRangeResponse,
    },
    Put: method("Put", PutRequestSchema, PutResponseSchema),
    DeleteRange: method("DeleteRange", DeleteRangeRequestSchema, DeleteRangeResponseSchema),
    Txn: method("Txn", TxnRequestSchema, TxnResponseSchema),
    Compact: method("Compact", CompactionRequestSchema, CompactionResponseSchema),
  },
} satisfies ServiceDescriptor;

/**
 * Registers etcdserverpb.KV over `backend` on `server` (KvServerOptions.registerServices),
 * behind the server's token and TLS like kv.v1.
 */
export function registerEtcdKv(
  server: Pick<GrpcServer, "addService">,
  backend: EtcdKvBackend,
  options: EtcdKvServiceOptions = {},
): void {
  const maxRequestBytes = positive(
    options.maxRequestBytes,
    DEFAULT_MAX_REQUEST_BYTES,
    "maxRequestBytes",
  );
  const maxTxnOps = positive(options.maxTxnOps, DEFAULT_MAX_TXN_OPS, "maxTxnOps");
  const grpcMax = maxRequestBytes + GRPC_OVERHEAD_BYTES;

  /** Runs the common steps, then `serve`; failures become etcd's statuses. */
  function handler<Req extends object, Res>(
    check: (req: Req) => void,
    proposed: (req: Req) => boolean,
    serve: (req: Req, options: EtcdCallOptions) => Promise<Res>,
  ): (req: Req, call: ServerCall<never>) => Promise<Res> {
    return async (req, call) => {
      try {
        const size = requestBytes.get(req) ?? 0;
        if (size > grpcMax) {
          throw new GrpcError(
            Status.RESOURCE_EXHAUSTED,
            `grpc: received message larger than max (${size} vs. ${grpcMax})`,
          );
        }
        if (call.metadata.get("hasleader")[0] === "true" && !backend.hasLeader())
          throw new EtcdError("NO_LEADER");
        check(req);
        if (size > maxRequestBytes && proposed(req)) throw new EtcdError("REQUEST_TOO_LARGE");
        return await serve(req, { signal: call.signal });
      } catch (err) {
        throw toEtcdGrpcError(err);
      }
    };
  }

  const always = () => true;
  server.addService(etcdKvService, {
    Range: handler(
      validateRange,
      () => false,
      (r, o) => backend.range(r, o),
    ),
    Put: handler(validatePut, always, (r, o) => backend.put(r, o)),
    DeleteRange: handler(validateDeleteRange, always, (r, o) => backend.deleteRange(r, o)),
    Txn: handler(
      (r) => validateTxn(r, maxTxnOps),
      (r) => !isTxnReadOnly(r),
      (r, o) => backend.txn(r, o),
    ),
    Compact: handler(
      () => {},
      always,
      (r, o) => backend.compact(r, o),
    ),
  });
}

function positive(v: number | undefined, fallback: number, name: string): number {
  if (v === undefined) return fallback;
  if (!Number.isSafeInteger(v) || v < 1)
    throw new RangeError(`${name} must be a positive integer, got ${String(v)}`);
  return v;
}
