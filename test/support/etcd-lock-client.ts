/**
 * A plain client of etcd's v3lock and v3election services for tests: @grpc/grpc-js with
 * the generated messages, no retries. Used against kv-engine and a real etcd alike.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import {
  CampaignRequestSchema as CampaignReq,
  type CampaignResponse,
  CampaignResponseSchema,
  LeaderRequestSchema,
  type LeaderResponse,
  LeaderResponseSchema,
  ProclaimRequestSchema as ProclaimReq,
  type ProclaimResponse,
  ProclaimResponseSchema,
  ResignRequestSchema as ResignReq,
  type ResignResponse,
  ResignResponseSchema,
} from "../../src/proto/gen/etcd/api/v3electionpb/v3election_pb.js";
import {
  LockRequestSchema as LockReq,
  type LockResponse,
  LockResponseSchema,
  UnlockRequestSchema,
  type UnlockResponse,
  UnlockResponseSchema,
} from "../../src/proto/gen/etcd/api/v3lockpb/v3lock_pb.js";
import { grpcJsMethod } from "../../src/proto/kv-service-definition.js";

const LOCK = "v3lockpb.Lock";
const ELECTION = "v3electionpb.Election";

export interface CallOptions {
  /** Cancels the call when it fires. */
  signal?: AbortSignal;
  /** Deadline from now (default 30 s). */
  deadlineMs?: number;
  /** gRPC metadata to send (e.g. hasleader). */
  metadata?: Record<string, string>;
}

/** An Observe stream: its responses as they come, and how it ended. */
export interface ObserveStream {
  readonly responses: LeaderResponse[];
  /** Resolves with the status the stream ended with (0: OK) and its message. */
  readonly ended: Promise<{ code: number; message: string }>;
  /** Resolves once at least `n` responses came (rejects when the stream ends first). */
  next(n: number): Promise<LeaderResponse[]>;
  cancel(): void;
}

export class EtcdLockClient {
  private readonly client: Client;

  constructor(readonly address: string) {
    this.client = new Client(address, credentials.createInsecure());
  }

  lock(req: MessageInitShape<typeof LockReq>, o: CallOptions = {}): Promise<LockResponse> {
    const m = grpcJsMethod(LOCK, "Lock", LockReq, LockResponseSchema, false);
    return this.unary(m, create(LockReq, req), o);
  }

  unlock(key: Uint8Array | string, o: CallOptions = {}): Promise<UnlockResponse> {
    const m = grpcJsMethod(LOCK, "Unlock", UnlockRequestSchema, UnlockResponseSchema, false);
    return this.unary(m, create(UnlockRequestSchema, { key: bytes(key) }), o);
  }

  campaign(
    req: MessageInitShape<typeof CampaignReq>,
    o: CallOptions = {},
  ): Promise<CampaignResponse> {
    const m = grpcJsMethod(ELECTION, "Campaign", CampaignReq, CampaignResponseSchema, false);
    return this.unary(m, create(CampaignReq, req), o);
  }

  proclaim(
    req: MessageInitShape<typeof ProclaimReq>,
    o: CallOptions = {},
  ): Promise<ProclaimResponse> {
    const m = grpcJsMethod(ELECTION, "Proclaim", ProclaimReq, ProclaimResponseSchema, false);
    return this.unary(m, create(ProclaimReq, req), o);
  }

  leader(name: Uint8Array | string, o: CallOptions = {}): Promise<LeaderResponse> {
    const m = grpcJsMethod(ELECTION, "Leader", LeaderRequestSchema, LeaderResponseSchema, false);
    return this.unary(m, create(LeaderRequestSchema, { name: bytes(name) }), o);
  }

  resign(req: MessageInitShape<typeof ResignReq>, o: CallOptions = {}): Promise<ResignResponse> {
    const m = grpcJsMethod(ELECTION, "Resign", ResignReq, ResignResponseSchema, false);
    return this.unary(m, create(ResignReq, req), o);
  }

  observe(name: Uint8Array | string): ObserveStream {
    const m = grpcJsMethod(ELECTION, "Observe", LeaderRequestSchema, LeaderResponseSchema, true);
    const call = this.client.makeServerStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      create(LeaderRequestSchema, { name: bytes(name) }),
      new Metadata(),
      {},
    );
    const responses: LeaderResponse[] = [];
    let wake: () => void = () => {};
    let done = false;
    call.on("data", (r: LeaderResponse) => {
      responses.push(r);
      wake();
    });
    const ended = new Promise<{ code: number; message: string }>((resolve) => {
      call.on("status", (s) => {
        done = true;
        wake();
        resolve({ code: s.code, message: s.details });
      });
    });
    call.on("error", () => {});
    return {
      responses,
      ended,
      async next(n) {
        while (responses.length < n) {
          if (done) throw new Error(`observe ended after ${responses.length} responses`);
          await new Promise<void>((r) => {
            wake = r;
          });
        }
        return responses.slice(0, n);
      },
      cancel: () => call.cancel(),
    };
  }

  close(): void {
    this.client.close();
  }

  private unary<I, O>(
    m: {
      path: string;
      requestSerialize: (v: I) => Buffer;
      responseDeserialize: (b: Buffer) => O;
    },
    req: I,
    o: CallOptions,
  ): Promise<O> {
    return new Promise((resolve, reject) => {
      const call = this.client.makeUnaryRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        req,
        metadataOf(o),
        { deadline: Date.now() + (o.deadlineMs ?? 30_000) },
        (err, res) => {
          if (err !== null || res === undefined) reject(err ?? new Error(`${m.path}: no response`));
          else resolve(res);
        },
      );
      o.signal?.addEventListener("abort", () => call.cancel());
    });
  }
}

function metadataOf(o: CallOptions): Metadata {
  const md = new Metadata();
  for (const [k, v] of Object.entries(o.metadata ?? {})) md.set(k, v);
  return md;
}

function bytes(v: Uint8Array | string): Uint8Array {
  return typeof v === "string" ? new TextEncoder().encode(v) : v;
}
