/**
 * KvClient: a typed client of kv.v1.KvService.
 *
 * Keys and values are bytes (a `Uint8Array`) or strings (taken as UTF-8); what comes back
 * is a Buffer. Every call takes an optional deadline (`timeoutMs`, or the client's default)
 * and fails with a KvClientError carrying the gRPC status code and message.
 *
 * ```ts
 * const client = new KvClient("127.0.0.1:50051");
 * await client.put("apple", "red");
 * const v = await client.get("apple");             // Buffer "red", or undefined when absent
 * for await (const [key, value] of client.scan("a", "m")) { ... }  // [a, m), one snapshot
 * client.close();
 * ```
 */
import {
  type CallOptions,
  type ChannelCredentials,
  type ChannelOptions,
  Client,
  credentials,
  Metadata,
} from "@grpc/grpc-js";
import type {
  KeyValue,
  Mutation as MutationMessage,
  ScanResponse,
} from "../proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition as kv } from "../proto/kv-service-definition.js";
import { toClientError } from "./kv-client-error.js";

/** What the client accepts as a key or value: bytes, or a string taken as UTF-8. */
export type Bytes = Uint8Array | string;

/** One operation of an atomic `write`. */
export type Mutation = { type: "put"; key: Bytes; value: Bytes } | { type: "delete"; key: Bytes };

/** A row of a scan. */
export type Row = [key: Buffer, value: Buffer];

/** PEM contents (not paths). */
export interface ClientTlsOptions {
  /** CA certificates to trust (default: the system's roots). */
  ca?: string | Uint8Array;
  /** Client certificate and key, for servers that require mutual TLS. */
  cert?: string | Uint8Array;
  key?: string | Uint8Array;
  /** Name to check the server's certificate against, when not the address's host. */
  serverName?: string;
}

export interface KvClientOptions {
  /** Connect with TLS (default: plaintext). */
  tls?: ClientTlsOptions;
  /** Sent as `authorization: Bearer <token>` on every call. */
  authToken?: string;
  /** Default deadline of each call, in milliseconds from its start (default: none). */
  timeoutMs?: number;
  /** Largest response message accepted (bytes). Default 64 MiB. */
  maxReceiveMessageBytes?: number;
}

export interface KvCallOptions {
  /** Deadline of this call in milliseconds from now (overrides the client's default). */
  timeoutMs?: number;
}

export class KvClient {
  private readonly client: Client;
  private readonly metadata: Metadata;
  private readonly timeoutMs: number | undefined;

  /** `address` is "host:port" (IPv6 hosts in brackets). No connection is made until the first call. */
  constructor(
    readonly address: string,
    options: KvClientOptions = {},
  ) {
    const channelOptions: ChannelOptions = {
      "grpc.max_receive_message_length": options.maxReceiveMessageBytes ?? 64 * 1024 * 1024,
    };
    if (options.tls?.serverName !== undefined) {
      channelOptions["grpc.ssl_target_name_override"] = options.tls.serverName;
    }
    this.client = new Client(address, channelCredentials(options.tls), channelOptions);
    this.metadata = new Metadata();
    if (options.authToken !== undefined) {
      this.metadata.set("authorization", `Bearer ${options.authToken}`);
    }
    this.timeoutMs = options.timeoutMs;
  }

  /** Stores `value` under `key` (durable when the server replies, unless it runs with --no-sync). */
  async put(key: Bytes, value: Bytes, options?: KvCallOptions): Promise<void> {
    await this.unary(
      kv.Put,
      { $typeName: "kv.v1.PutRequest", key: b(key), value: b(value) },
      options,
    );
  }

  /** The value of `key`, or undefined when it is absent. */
  async get(key: Bytes, options?: KvCallOptions): Promise<Buffer | undefined> {
    const res = await this.unary(kv.Get, { $typeName: "kv.v1.GetRequest", key: b(key) }, options);
    return res.found ? buffer(res.value) : undefined;
  }

  /** Removes `key` (no error when absent). */
  async delete(key: Bytes, options?: KvCallOptions): Promise<void> {
    await this.unary(kv.Delete, { $typeName: "kv.v1.DeleteRequest", key: b(key) }, options);
  }

  /** Applies every mutation atomically: all or none. */
  async write(mutations: Iterable<Mutation>, options?: KvCallOptions): Promise<void> {
    const list: MutationMessage[] = [];
    for (const m of mutations) list.push(mutationMessage(m));
    await this.unary(kv.Write, { $typeName: "kv.v1.WriteRequest", mutations: list }, options);
  }

  /**
   * Rows with `start <= key < end` in key order, at most `limit` (0: no limit), read from
   * one snapshot taken when the scan starts. An omitted or empty bound is open. Leaving
   * `for await` early cancels the call, and the server releases its snapshot.
   */
  async *scan(start?: Bytes, end?: Bytes, limit = 0, options?: KvCallOptions): AsyncGenerator<Row> {
    for await (const batch of this.scanBatches(start, end, limit, options)) yield* batch;
  }

  /** Like `scan`, but yields the rows of each response message together (fewer awaits). */
  async *scanBatches(
    start?: Bytes,
    end?: Bytes,
    limit = 0,
    options?: KvCallOptions,
  ): AsyncGenerator<Row[]> {
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
    }
    const call = this.client.makeServerStreamRequest(
      kv.Scan.path,
      kv.Scan.requestSerialize,
      kv.Scan.responseDeserialize,
      {
        $typeName: "kv.v1.ScanRequest",
        startKey: b(start ?? ""),
        endKey: b(end ?? ""),
        limit: BigInt(limit),
      },
      this.metadata,
      this.callOptions(options),
    );
    try {
      for await (const msg of call as AsyncIterable<ScanResponse>) {
        yield msg.entries.map(row);
      }
    } catch (err) {
      throw toClientError(err);
    } finally {
      call.cancel();
    }
  }

  /** Every row of `scan(start, end, limit)` in an array. */
  async scanAll(start?: Bytes, end?: Bytes, limit = 0, options?: KvCallOptions): Promise<Row[]> {
    const out: Row[] = [];
    for await (const batch of this.scanBatches(start, end, limit, options)) {
      for (const r of batch) out.push(r);
    }
    return out;
  }

  /** Closes the channel. Calls started later fail; calls in flight are not waited for. */
  close(): void {
    this.client.close();
  }

  private callOptions(options: KvCallOptions | undefined): CallOptions {
    const ms = options?.timeoutMs ?? this.timeoutMs;
    return ms === undefined ? {} : { deadline: Date.now() + ms };
  }

  private unary<Req, Res>(
    method: {
      path: string;
      requestSerialize: (r: Req) => Buffer;
      responseDeserialize: (b: Buffer) => Res;
    },
    request: Req,
    options: KvCallOptions | undefined,
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        this.metadata,
        this.callOptions(options),
        (err, res) => {
          if (err !== null || res === undefined) reject(toClientError(err));
          else resolve(res);
        },
      );
    });
  }
}

function b(v: Bytes): Uint8Array {
  return typeof v === "string" ? Buffer.from(v, "utf8") : v;
}

/** A Buffer over the same memory (no copy). */
function buffer(v: Uint8Array): Buffer {
  return Buffer.isBuffer(v) ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function row(kv: KeyValue): Row {
  return [buffer(kv.key), buffer(kv.value)];
}

function mutationMessage(m: Mutation): MutationMessage {
  if (m.type === "put") {
    return {
      $typeName: "kv.v1.Mutation",
      op: {
        case: "put",
        value: { $typeName: "kv.v1.PutRequest", key: b(m.key), value: b(m.value) },
      },
    };
  }
  if (m.type === "delete") {
    return {
      $typeName: "kv.v1.Mutation",
      op: { case: "delete", value: { $typeName: "kv.v1.DeleteRequest", key: b(m.key) } },
    };
  }
  throw new TypeError(`mutation type must be "put" or "delete"`);
}

function pem(v: string | Uint8Array | undefined): Buffer | null {
  if (v === undefined) return null;
  return typeof v === "string" ? Buffer.from(v, "utf8") : Buffer.from(v);
}

/** The channel credentials for `tls` (plaintext when undefined). */
export function channelCredentials(tls: ClientTlsOptions | undefined): ChannelCredentials {
  if (tls === undefined) return credentials.createInsecure();
  return credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}
