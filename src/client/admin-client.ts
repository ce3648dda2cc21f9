/**
 * AdminClient: a typed client of kv.v1.AdminService (proto/kv/v1/admin.proto), which a
 * server offers when it serves an admin backend (`kv-engine serve` does, cluster members
 * too). It acts on the one node it is given (to act on a cluster's leader, find it first:
 * KvClient.memberList). Options as KvClient's (TLS, bearer token, deadline); every call
 * fails with a KvClientError in the client's words (call-failure.ts).
 *
 * ```ts
 * const admin = new AdminClient("127.0.0.1:50051");
 * await admin.checkpoint("nightly");            // under the server's --backup-dir
 * for await (const p of admin.compactRange()) console.log(p.step, p.done);
 * admin.close();
 * ```
 */
import { adminServiceDefinition as admin } from "../proto/admin-service-definition.js";
import type { CompactRangeProgress, LevelSizes } from "../proto/gen/kv/v1/admin_pb.js";
import type { CallContext } from "./call-failure.js";
import { parseEndpointList } from "./endpoints.js";
import {
  type Bytes,
  type KvCallOptions,
  type KvClientOptions,
  makeTransport,
} from "./kv-client.js";
import { type CallTransport, transportSettings, type UnaryMethod } from "./transport.js";

/** Files and bytes per level. */
export interface AdminLevelSizes {
  files: number[];
  bytes: number[];
}

/** Where a checkpoint went (a path on the server) and how its tables got there. */
export interface AdminCheckpoint {
  path: string;
  linked: number;
  copied: number;
  bytes: number;
}

/**
 * A message of compactRange's stream: first `before` and `targetLevel`; then one per
 * compaction that finished (`step` from 1, `levels` after it); last `done` with `after`.
 */
export interface AdminCompactProgress {
  targetLevel: number;
  before: AdminLevelSizes | undefined;
  step: number;
  level: number;
  outputLevel: number;
  trivialMove: boolean;
  manual: boolean;
  inputFiles: number;
  outputFiles: number;
  bytesRead: number;
  bytesWritten: number;
  levels: AdminLevelSizes | undefined;
  done: boolean;
  after: AdminLevelSizes | undefined;
}

const sizes = (s: LevelSizes | undefined): AdminLevelSizes | undefined =>
  s === undefined ? undefined : { files: s.files.map(Number), bytes: s.bytes.map(Number) };

function progress(m: CompactRangeProgress): AdminCompactProgress {
  return {
    targetLevel: m.targetLevel,
    before: sizes(m.before),
    step: m.step,
    level: m.level,
    outputLevel: m.outputLevel,
    trivialMove: m.trivialMove,
    manual: m.manual,
    inputFiles: m.inputFiles,
    outputFiles: m.outputFiles,
    bytesRead: Number(m.bytesRead),
    bytesWritten: Number(m.bytesWritten),
    levels: sizes(m.levels),
    done: m.done,
    after: sizes(m.after),
  };
}

const bytes = (v: Bytes): Uint8Array => (typeof v === "string" ? Buffer.from(v, "utf8") : v);

export class AdminClient {
  private readonly transport: CallTransport;
  private readonly timeoutMs: number | undefined;
  /** "host:port" of the node. */
  readonly address: string;

  /**
   * `address` is one "host:port" (or http://host:port, https://host:port: endpoints.ts);
   * a malformed one, or several, throw a TypeError. No connection is made until the first
   * call.
   */
  constructor(address: string, options: KvClientOptions = {}) {
    const endpoints = parseEndpointList(address);
    if (endpoints.length !== 1) {
      throw new TypeError(`AdminClient acts on one node; got ${endpoints.length} addresses`);
    }
    this.address = endpoints[0]!.address;
    this.transport = makeTransport(transportSettings(endpoints, options), options);
    this.timeoutMs = options.timeoutMs;
  }

  /**
   * Writes a checkpoint of the server's store into `dir`, a directory that must not exist
   * under the server's backup directory (a relative name, or an absolute path inside it).
   */
  async checkpoint(dir: string, options?: KvCallOptions): Promise<AdminCheckpoint> {
    const r = await this.unary(
      admin.Checkpoint,
      { $typeName: "kv.v1.CheckpointRequest", dir },
      options,
    );
    return {
      path: r.path,
      linked: Number(r.linked),
      copied: Number(r.copied),
      bytes: Number(r.bytes),
    };
  }

  /**
   * Compacts the keys in [start, end] (bounds inclusive, either omitted), yielding progress
   * (see AdminCompactProgress). Leaving the loop early stops the messages, not the
   * compaction.
   */
  async *compactRange(
    start?: Bytes,
    end?: Bytes,
    options?: KvCallOptions,
  ): AsyncGenerator<AdminCompactProgress> {
    const { deadline, context } = this.callOptions(admin.CompactRange.path, options);
    const call = this.transport.serverStream(
      this.address,
      admin.CompactRange,
      {
        $typeName: "kv.v1.CompactRangeRequest",
        ...(start === undefined ? {} : { startKey: bytes(start) }),
        ...(end === undefined ? {} : { endKey: bytes(end) }),
      },
      deadline,
      context,
    );
    try {
      for await (const m of call as AsyncIterable<CompactRangeProgress>) yield progress(m);
    } finally {
      call.cancel();
    }
  }

  /** Turns the server's memtables into tables. */
  async flush(options?: KvCallOptions): Promise<void> {
    await this.unary(admin.Flush, { $typeName: "kv.v1.FlushRequest" }, options);
  }

  /** The store's stats: db.stats() of the server's store, as JSON data. */
  async stats(options?: KvCallOptions): Promise<Record<string, unknown>> {
    const r = await this.unary(admin.Stats, { $typeName: "kv.v1.StatsRequest" }, options);
    return JSON.parse(r.json) as Record<string, unknown>;
  }

  /** Closes the connection. */
  close(): void {
    this.transport.close();
  }

  private callOptions(
    path: string,
    options: KvCallOptions | undefined,
  ): { deadline: number | undefined; context: CallContext } {
    const ms = options?.timeoutMs ?? this.timeoutMs;
    return {
      deadline: ms === undefined ? undefined : Date.now() + ms,
      // Checkpoint and compaction change the node's files: "write" for the account of a lost answer.
      context: { endpoint: this.address, path, kind: "write", timeoutMs: ms },
    };
  }

  private unary<Req, Res>(
    method: UnaryMethod<Req, Res>,
    request: Req,
    options: KvCallOptions | undefined,
  ): Promise<Res> {
    const { deadline, context } = this.callOptions(method.path, options);
    return this.transport.unary(this.address, method, request, deadline, context);
  }
}
