/**
 * A minimal gRPC client of one etcd 3.4 member (etcdserverpb over @grpc/grpc-js, the same
 * library KvClient uses, with the same reconnect back-off), for the cluster benchmarks:
 * Put, Range (linearizable unless `serializable`), Txn of puts, Status, MemberAdd, and a
 * bidirectional stream of any method (LeaseKeepAlive). One endpoint, no retries: callers
 * that want another member make another client.
 */
import {
  type CallOptions,
  Client,
  type ClientDuplexStream,
  credentials,
  Metadata,
} from "@grpc/grpc-js";
import {
  decodeMemberAdd,
  decodeRange,
  decodeResponseHeader,
  decodeStatus,
  ETCD_MEMBER_ADD,
  ETCD_PUT,
  ETCD_RANGE,
  ETCD_STATUS,
  ETCD_TXN,
  type EtcdHeader,
  type EtcdMember,
  type EtcdRange,
  type EtcdStatus,
  encodeEmpty,
  encodeMemberAdd,
  encodePut,
  encodeRange,
  encodeTxnPuts,
} from "./etcd-codec.js";

const identity = (b: Buffer): Buffer => b;

export class EtcdClient {
  private readonly client: Client;
  private readonly metadata = new Metadata();

  constructor(
    readonly endpoint: string,
    private readonly timeoutMs?: number,
  ) {
    this.client = new Client(endpoint, credentials.createInsecure(), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
      "grpc.initial_reconnect_backoff_ms": 100,
      "grpc.max_reconnect_backoff_ms": 1000,
    });
  }

  /** One unary call of `path` with an encoded request; resolves with the encoded response. */
  unary(path: string, request: Buffer, timeoutMs?: number): Promise<Buffer> {
    return this.call(path, request, timeoutMs);
  }

  /** A bidirectional stream of `path` (encoded messages both ways), without a deadline. */
  bidi(path: string): ClientDuplexStream<Buffer, Buffer> {
    return this.client.makeBidiStreamRequest(path, identity, identity, this.metadata, {});
  }

  private call(path: string, request: Buffer, timeoutMs?: number): Promise<Buffer> {
    const ms = timeoutMs ?? this.timeoutMs;
    const options: CallOptions = ms === undefined ? {} : { deadline: Date.now() + ms };
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        path,
        identity,
        identity,
        request,
        this.metadata,
        options,
        (err, res) => {
          if (err !== null || res === undefined) reject(err ?? new Error(`${path}: no response`));
          else resolve(res);
        },
      );
    });
  }

  async put(key: Uint8Array, value: Uint8Array, timeoutMs?: number): Promise<EtcdHeader> {
    return decodeResponseHeader(await this.call(ETCD_PUT, encodePut(key, value), timeoutMs));
  }

  async range(
    key: Uint8Array,
    rangeEnd: Uint8Array | undefined,
    limit: number,
    serializable = false,
    timeoutMs?: number,
  ): Promise<EtcdRange> {
    const req = encodeRange(key, rangeEnd, limit, serializable);
    return decodeRange(await this.call(ETCD_RANGE, req, timeoutMs));
  }

  async get(key: Uint8Array, timeoutMs?: number): Promise<Uint8Array | undefined> {
    return (await this.range(key, undefined, 0, false, timeoutMs)).kvs[0]?.[1];
  }

  /** Puts `keys[i] -> values[i]` in one transaction (etcd allows 128 operations by default). */
  async txnPuts(keys: readonly Uint8Array[], values: readonly Uint8Array[]): Promise<void> {
    await this.call(ETCD_TXN, encodeTxnPuts(keys, values));
  }

  async status(timeoutMs?: number): Promise<EtcdStatus> {
    return decodeStatus(await this.call(ETCD_STATUS, encodeEmpty(), timeoutMs));
  }

  async memberAdd(
    peerUrls: readonly string[],
  ): Promise<{ member: EtcdMember; members: EtcdMember[] }> {
    return decodeMemberAdd(await this.call(ETCD_MEMBER_ADD, encodeMemberAdd(peerUrls)));
  }

  close(): void {
    this.client.close();
  }
}
