/**
 * A plain etcd KV (and Lease, unary calls) client for tests: @grpc/grpc-js with the generated etcdserverpb
 * messages, one unary call per method, no retries. Used against both kv-engine and a real
 * etcd (the differential test), so that both see the same bytes.
 */
import {
  create,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import {
  CompactionRequestSchema,
  CompactionResponseSchema,
  DeleteRangeRequestSchema,
  DeleteRangeResponseSchema,
  LeaseGrantRequestSchema,
  LeaseGrantResponseSchema,
  LeaseLeasesRequestSchema,
  LeaseLeasesResponseSchema,
  LeaseRevokeRequestSchema,
  LeaseRevokeResponseSchema,
  LeaseTimeToLiveRequestSchema,
  LeaseTimeToLiveResponseSchema,
  PutRequestSchema,
  PutResponseSchema,
  RangeRequestSchema,
  RangeResponseSchema,
  TxnRequestSchema,
  TxnResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { grpcJsMethod } from "../../src/proto/kv-service-definition.js";

const SERVICE = "etcdserverpb.KV";
const LEASE = "etcdserverpb.Lease";

/** A call's failure: the gRPC status code and message. */
export interface CallError {
  code: number;
  message: string;
}

export function isServiceError(err: unknown): err is ServiceError {
  return typeof err === "object" && err !== null && "code" in err && "details" in err;
}

export class EtcdGrpcClient {
  private readonly client: Client;

  /** `deadlineMs`: each call's deadline (default 30 s); `channel`: more grpc-js channel options. */
  constructor(
    readonly address: string,
    private readonly metadata: Record<string, string> = {},
    private readonly deadlineMs = 30_000,
    channel: Record<string, number> = {},
  ) {
    this.client = new Client(address, credentials.createInsecure(), {
      "grpc.max_send_message_length": 64 * 1024 * 1024,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
      ...channel,
    });
  }

  call<I extends DescMessage, O extends DescMessage>(
    name: string,
    input: I,
    output: O,
    request: MessageInitShape<I>,
    metadata: Record<string, string> = {},
    service = SERVICE,
  ): Promise<MessageShape<O>> {
    const m = grpcJsMethod(service, name, input, output, false);
    const md = new Metadata();
    for (const [k, v] of Object.entries({ ...this.metadata, ...metadata })) md.set(k, v);
    const message = create(input, request);
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        message,
        md,
        { deadline: Date.now() + this.deadlineMs },
        (err, res) => {
          if (err !== null || res === undefined) reject(err ?? new Error(`${name}: no response`));
          else resolve(res);
        },
      );
    });
  }

  range(req: MessageInitShape<typeof RangeRequestSchema>, md?: Record<string, string>) {
    return this.call("Range", RangeRequestSchema, RangeResponseSchema, req, md);
  }
  put(req: MessageInitShape<typeof PutRequestSchema>, md?: Record<string, string>) {
    return this.call("Put", PutRequestSchema, PutResponseSchema, req, md);
  }
  deleteRange(req: MessageInitShape<typeof DeleteRangeRequestSchema>, md?: Record<string, string>) {
    return this.call("DeleteRange", DeleteRangeRequestSchema, DeleteRangeResponseSchema, req, md);
  }
  txn(req: MessageInitShape<typeof TxnRequestSchema>, md?: Record<string, string>) {
    return this.call("Txn", TxnRequestSchema, TxnResponseSchema, req, md);
  }
  compact(req: MessageInitShape<typeof CompactionRequestSchema>, md?: Record<string, string>) {
    return this.call("Compact", CompactionRequestSchema, CompactionResponseSchema, req, md);
  }

  /** A call of etcdserverpb.Lease. */
  private lease<I extends DescMessage, O extends DescMessage>(
    name: string,
    input: I,
    output: O,
    request: MessageInitShape<I>,
  ): Promise<MessageShape<O>> {
    return this.call(name, input, output, request, {}, LEASE);
  }
  leaseGrant(req: MessageInitShape<typeof LeaseGrantRequestSchema>) {
    return this.lease("LeaseGrant", LeaseGrantRequestSchema, LeaseGrantResponseSchema, req);
  }
  leaseRevoke(req: MessageInitShape<typeof LeaseRevokeRequestSchema>) {
    return this.lease("LeaseRevoke", LeaseRevokeRequestSchema, LeaseRevokeResponseSchema, req);
  }
  leaseTimeToLive(req: MessageInitShape<typeof LeaseTimeToLiveRequestSchema>) {
    return this.lease(
      "LeaseTimeToLive",
      LeaseTimeToLiveRequestSchema,
      LeaseTimeToLiveResponseSchema,
      req,
    );
  }
  leaseLeases() {
    return this.lease("LeaseLeases", LeaseLeasesRequestSchema, LeaseLeasesResponseSchema, {});
  }

  /** One unary call of `service`.`name` with an encoded request: the encoded response. */
  raw(service: string, name: string, request: Uint8Array): Promise<Buffer> {
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.metadata)) md.set(k, v);
    const id = (b: Buffer) => b;
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        `/${service}/${name}`,
        id,
        id,
        Buffer.from(request),
        md,
        { deadline: Date.now() + this.deadlineMs },
        (err, res) => {
          if (err !== null || res === undefined) reject(err ?? new Error(`${name}: no response`));
          else resolve(res);
        },
      );
    });
  }

  /**
   * One request on a new bidirectional stream of `service`.`name` (e.g. a LeaseKeepAlive):
   * resolves with the first response, then cancels the stream; rejects when the stream
   * fails or `deadlineMs` passes first.
   */
  bidiOnce<I extends DescMessage, O extends DescMessage>(
    service: string,
    name: string,
    input: I,
    output: O,
    request: MessageInitShape<I>,
  ): Promise<MessageShape<O>> {
    const m = grpcJsMethod(service, name, input, output, true);
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.metadata)) md.set(k, v);
    const stream = this.client.makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      md,
      { deadline: Date.now() + this.deadlineMs },
    );
    return new Promise<MessageShape<O>>((resolve, reject) => {
      stream.on("data", (res: MessageShape<O>) => resolve(res));
      stream.on("error", reject);
      stream.on("end", () => reject(new Error(`${name}: the stream ended without a response`)));
      stream.write(create(input, request));
    }).finally(() => stream.cancel());
  }

  close(): void {
    this.client.close();
  }
}
