/**
 * A plain etcd Watch client for tests: one grpc-js bidirectional stream with the
 * generated etcdserverpb messages, the responses queued as they come, nothing
 * interpreted. Works against kv-engine and a real etcd alike.
 */
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  Client,
  type ClientDuplexStream,
  credentials,
  Metadata,
  type ServiceError,
} from "@grpc/grpc-js";
import {
  type WatchCreateRequestSchema,
  type WatchRequest,
  WatchRequestSchema,
  type WatchResponse,
  WatchResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";

export class EtcdWatchClient {
  private readonly client: Client;
  private stream: ClientDuplexStream<WatchRequest, WatchResponse> | undefined;
  private readonly queue: WatchResponse[] = [];
  private waiter: (() => void) | undefined;
  /** The stream's end: its error (a status), or null when it ended OK. */
  ended: ServiceError | null | undefined;

  constructor(
    readonly address: string,
    private readonly metadata: Record<string, string> = {},
  ) {
    this.client = new Client(address, credentials.createInsecure(), {
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    });
  }

  /** Opens the stream (once). */
  open(): this {
    const md = new Metadata();
    for (const [k, v] of Object.entries(this.metadata)) md.set(k, v);
    const s = this.client.makeBidiStreamRequest(
      "/etcdserverpb.Watch/Watch",
      (m: WatchRequest) => Buffer.from(toBinary(WatchRequestSchema, m)),
      (b: Buffer) => fromBinary(WatchResponseSchema, b),
      md,
    );
    s.on("data", (r: WatchResponse) => {
      this.queue.push(r);
      this.wake();
    });
    s.on("error", (err: ServiceError) => {
      this.ended = err;
      this.wake();
    });
    s.on("end", () => {
      this.ended ??= null;
      this.wake();
    });
    this.stream = s;
    return this;
  }

  send(req: MessageInitShape<typeof WatchRequestSchema>): void {
    if (this.stream === undefined) this.open();
    this.stream?.write(create(WatchRequestSchema, req));
  }

  create(req: MessageInitShape<typeof WatchCreateRequestSchema>): void {
    this.send({ requestUnion: { case: "createRequest", value: req } });
  }

  cancel(watchId: bigint): void {
    this.send({ requestUnion: { case: "cancelRequest", value: { watchId } } });
  }

  progress(): void {
    this.send({ requestUnion: { case: "progressRequest", value: {} } });
  }

  /** Responses received and not yet taken. */
  get pending(): number {
    return this.queue.length;
  }

  /** The next response; rejects after `timeoutMs` or when the stream ended. */
  async next(timeoutMs = 5000): Promise<WatchResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = this.queue.shift();
      if (r !== undefined) return r;
      if (this.ended !== undefined) {
        throw new Error(`the watch stream ended: ${this.ended?.message ?? "OK"}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no watch response within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /** The responses received and not yet taken, taken now. */
  take(): WatchResponse[] {
    return this.queue.splice(0);
  }

  /** Resolves with the responses received within `ms` (none expected: an empty list). */
  async drain(ms: number): Promise<WatchResponse[]> {
    await new Promise((r) => setTimeout(r, ms));
    return this.queue.splice(0);
  }

  /** Waits for the stream's end; resolves with its error (null: OK). */
  async end(timeoutMs = 5000): Promise<ServiceError | null> {
    const deadline = Date.now() + timeoutMs;
    while (this.ended === undefined) {
      if (Date.now() > deadline) throw new Error("the watch stream did not end");
      this.queue.splice(0);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.ended;
  }

  /** Stops reading (grpc-js then stops granting the server window). */
  pause(): void {
    this.stream?.pause();
  }

  resume(): void {
    this.stream?.resume();
  }

  close(): void {
    this.stream?.cancel();
    this.client.close();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}
