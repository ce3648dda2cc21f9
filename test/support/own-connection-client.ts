/**
 * A kv.v1.KvService client on an HTTP/2 connection of its own, for tests that need several
 * clients to be several connections to the server. grpc-js shares one connection between
 * the channels to one address with the same options (its global subchannel pool), so two
 * KvClients of one address are one connection; this client's channel sets
 * `grpc.use_local_subchannel_pool`, and `close()` closes its connection. Failures reject
 * with grpc-js's ServiceError (its `code` is the status).
 */
import { Client, credentials, Metadata, type ServiceError } from "@grpc/grpc-js";
import type { KeyValue, ScanResponse } from "../../src/proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition as kv } from "../../src/proto/kv-service-definition.js";

export class OwnConnectionClient {
  private readonly client: Client;

  constructor(
    address: string,
    private readonly timeoutMs: number,
  ) {
    this.client = new Client(address, credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    });
  }

  put(key: string, value: string | Uint8Array): Promise<void> {
    return this.unary(kv.Put, {
      $typeName: "kv.v1.PutRequest",
      key: Buffer.from(key),
      value: typeof value === "string" ? Buffer.from(value) : value,
    }).then(() => {});
  }

  async get(key: string): Promise<Buffer | undefined> {
    const res = await this.unary(kv.Get, {
      $typeName: "kv.v1.GetRequest",
      key: Buffer.from(key),
      serializable: false,
    });
    return res.found ? Buffer.from(res.value) : undefined;
  }

  /** The response messages of a scan of [start, end); leaving the loop early cancels it. */
  async *scanBatches(start: string, end: string, limit = 0): AsyncGenerator<KeyValue[]> {
    const call = this.client.makeServerStreamRequest(
      kv.Scan.path,
      kv.Scan.requestSerialize,
      kv.Scan.responseDeserialize,
      {
        $typeName: "kv.v1.ScanRequest",
        startKey: Buffer.from(start),
        endKey: Buffer.from(end),
        limit: BigInt(limit),
        serializable: false,
      },
      new Metadata(),
      { deadline: Date.now() + this.timeoutMs },
    );
    try {
      for await (const msg of call as AsyncIterable<ScanResponse>) yield msg.entries;
    } finally {
      call.cancel();
    }
  }

  /** The number of rows a scan of [start, end) returns. */
  async scanCount(start: string, end: string, limit = 0): Promise<number> {
    let n = 0;
    for await (const rows of this.scanBatches(start, end, limit)) n += rows.length;
    return n;
  }

  close(): void {
    this.client.close();
  }

  private unary<Req, Res>(
    method: {
      path: string;
      requestSerialize: (r: Req) => Buffer;
      responseDeserialize: (b: Buffer) => Res;
    },
    request: Req,
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        new Metadata(),
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => (err !== null || res === undefined ? reject(err) : resolve(res)),
      );
    });
  }
}

/** The status code of a grpc-js call failure, or undefined for anything else. */
export function statusOf(err: unknown): number | undefined {
  const code = (err as Partial<ServiceError> | null)?.code;
  return typeof code === "number" ? code : undefined;
}
