/**
 * KvClient: a typed client of kv.v1.KvService (and of kv.v1.ClusterService, for cluster
 * members).
 *
 * Keys and values are bytes (a `Uint8Array`) or strings (taken as UTF-8); what comes back
 * is a Buffer. Every call takes an optional deadline (`timeoutMs`, or the client's default)
 * and fails with a KvClientError carrying the gRPC status code and message.
 *
 * Endpoints: one address, or several (an array, or a comma list "h1:p1,h2:p2") for a
 * cluster, whose every member accepts every call; each HOST:PORT, http://HOST:PORT or
 * https://HOST:PORT (endpoints.ts; https:// turns TLS on). A call goes to the endpoint
 * that last answered (the first one at the start); when it fails in a way that allows it
 * (see retry-policy.ts: reads after UNAVAILABLE, writes only when certainly not done), it
 * is tried on the leader the server named (trailer `kv-leader`), else on the next
 * endpoint, within the call's deadline and at most `maxAttempts` attempts (see
 * call-attempts.ts, which also says which failure is reported). With a single endpoint
 * and no `maxAttempts`, a call is made once.
 *
 * Calls are sent and retried by a CallRunner (call-runner.ts, shared with EtcdClient):
 * `unary`, and `once` for one attempt; errors are mapped to the client's own words at the
 * transport's edge (call-failure.ts).
 *
 * ```ts
 * const client = new KvClient("127.0.0.1:50051");
 * await client.put("apple", "red");
 * const v = await client.get("apple");             // Buffer "red", or undefined when absent
 * for await (const [key, value] of client.scan("a", "m")) { ... }  // [a, m), one snapshot
 * client.close();
 * ```
 */
import { status } from "@grpc/grpc-js";
import { clusterServiceDefinition as cs } from "../proto/cluster-service-definition.js";
import type { Member as MemberMessage, StatusResponse } from "../proto/gen/kv/v1/cluster_pb.js";
import type {
  CompareAndSwapRequest,
  DeleteRequest,
  KeyValue,
  Mutation as MutationMessage,
  PutRequest,
  ScanResponse,
  SessionCall as SessionCallMessage,
  WriteRequest,
} from "../proto/gen/kv/v1/kv_pb.js";
import { kvServiceDefinition as kv } from "../proto/kv-service-definition.js";
import { toClientError } from "./call-failure.js";
import { type CallOptions, CallRunner, type ClientOptions, contextOf } from "./call-runner.js";
import { KvClientError } from "./kv-client-error.js";
import type { ClientTlsOptions, TransportName, UnaryMethod } from "./transport.js";
import { type SessionPlace, WriteSession } from "./write-session.js";

export { makeTransport } from "./call-runner.js";
export { DEFAULT_MAX_RECEIVE_BYTES } from "./transport.js";
export type { ClientTlsOptions, TransportName, UnaryMethod };

/** What the client accepts as a key or value: bytes, or a string taken as UTF-8. */
export type Bytes = Uint8Array | string;

/** One operation of an atomic `write`. */
export type Mutation = { type: "put"; key: Bytes; value: Bytes } | { type: "delete"; key: Bytes };

/** A row of a scan. */
export type Row = [key: Buffer, value: Buffer];

export interface KvClientOptions extends ClientOptions {
  /**
   * Writes in a client session where the server keeps them (cluster members; opened with
   * the first write): a write whose outcome is unknown (its leader died or changed, its
   * connection dropped) is sent again, to any member, within its deadline, and applied
   * once (docs/cluster.md, "Retries that apply once"). Default true; false: writes are
   * sent again only when certainly not applied.
   */
  sessions?: boolean;
}

export type KvCallOptions = CallOptions;

export interface KvReadOptions extends KvCallOptions {
  /**
   * Allow a cluster member to answer from its local state, which may be stale (default
   * false: linearizable). A single-node server is always current.
   */
  serializable?: boolean;
}

/** What a compare-and-swap did. */
export interface CasOutcome {
  /** True iff the key held the expected value (or was absent as expected) and was updated. */
  applied: boolean;
  /** The key's value afterwards: the new one iff applied, else the one that differed (undefined: absent). */
  current: Buffer | undefined;
}

/** A cluster member, as the cluster service lists it. */
export interface MemberRecord {
  id: number;
  name: string;
  peerAddress: string;
  /** "" until the member published it. */
  clientAddress: string;
  learner: boolean;
}

export interface MemberList {
  clusterId: number;
  /** The member that answered. */
  memberId: number;
  /** The leader it knows (0: none). */
  leaderId: number;
  members: MemberRecord[];
}

/** One member's own state (ClusterService.Status). */
export interface MemberStatusRecord {
  clusterId: number;
  memberId: number;
  name: string;
  role: string;
  term: number;
  leaderId: number;
  leaderClientAddress: string;
  commitIndex: number;
  appliedIndex: number;
  firstIndex: number;
  lastIndex: number;
  snapshotIndex: number;
  removed: boolean;
  failure: string;
  peers: {
    id: number;
    /** Milliseconds since the member heard from it (-1: never). */
    lastContactMs: number;
    progress: string;
    matchIndex: number;
    rttMicros: number;
  }[];
}

export class KvClient {
  /** The endpoints, the transport, the attempts of a call. */
  private readonly calls: CallRunner;
  /** The client session of writes (undefined: sessions off). */
  private readonly session: WriteSession | undefined;

  /**
   * `address` is "host:port" (IPv6 hosts in brackets; also http://host:port, or
   * https://host:port for TLS), a comma list of them, or an array. Throws a TypeError
   * naming the expected form for a malformed address. No connection is made until the
   * first call.
   */
  constructor(address: string | readonly string[], options: KvClientOptions = {}) {
    this.calls = new CallRunner(address, options);
    this.session =
      options.sessions === false
        ? undefined
        : new WriteSession(
            async (timeoutMs) => {
              const r = await this.calls.unary(
                "open-session",
                kv.OpenSession,
                { $typeName: "kv.v1.OpenSessionRequest" },
                timeoutOption(timeoutMs),
              );
              return { id: r.id, ttlMs: r.ttlMs };
            },
            (err) => isUnimplemented(err),
          );
  }

  /** The endpoints given. */
  get endpoints(): readonly string[] {
    return this.calls.endpoints;
  }

  private get timeoutMs(): number | undefined {
    return this.calls.timeoutMs;
  }

  /** The first endpoint (the single-address form's address). */
  get address(): string {
    return this.endpoints[0]!;
  }

  /** Stores `value` under `key` (durable when the server replies, unless it runs with --no-sync). */
  async put(key: Bytes, value: Bytes, options?: KvCallOptions): Promise<void> {
    const k = b(key);
    const v = b(value);
    await this.write1(
      kv.Put,
      (session): PutRequest => ({ $typeName: "kv.v1.PutRequest", key: k, value: v, ...session }),
      nothing,
      options,
    );
  }

  /** The value of `key`, or undefined when it is absent. */
  async get(key: Bytes, options?: KvReadOptions): Promise<Buffer | undefined> {
    const res = await this.calls.unary(
      "read",
      kv.Get,
      { $typeName: "kv.v1.GetRequest", key: b(key), serializable: options?.serializable === true },
      options,
    );
    return res.found ? buffer(res.value) : undefined;
  }

  /** Removes `key` (no error when absent). */
  async delete(key: Bytes, options?: KvCallOptions): Promise<void> {
    const k = b(key);
    await this.write1(
      kv.Delete,
      (session): DeleteRequest => ({ $typeName: "kv.v1.DeleteRequest", key: k, ...session }),
      nothing,
      options,
    );
  }

  /** Applies every mutation atomically: all or none. */
  async write(mutations: Iterable<Mutation>, options?: KvCallOptions): Promise<void> {
    const list: MutationMessage[] = [];
    for (const m of mutations) list.push(mutationMessage(m));
    await this.write1(
      kv.Write,
      (session): WriteRequest => ({
        $typeName: "kv.v1.WriteRequest",
        mutations: list,
        ...session,
      }),
      nothing,
      options,
    );
  }

  /**
   * Iff the value of `key` is `expected` (undefined: the key must be absent), stores `next`
   * (undefined: deletes the key), atomically. Resolves with whether it did and the key's
   * value afterwards. Never retried once sent (see retry-policy.ts).
   */
  async compareAndSwap(
    key: Bytes,
    expected: Bytes | undefined,
    next: Bytes | undefined,
    options?: KvCallOptions,
  ): Promise<CasOutcome> {
    const k = b(key);
    const e = expected === undefined ? undefined : b(expected);
    const n = next === undefined ? undefined : b(next);
    return this.write1(
      kv.CompareAndSwap,
      (session): CompareAndSwapRequest => ({
        $typeName: "kv.v1.CompareAndSwapRequest",
        key: k,
        expected:
          e === undefined
            ? { case: "expectAbsent", value: true }
            : { case: "expectedValue", value: e },
        update: n === undefined ? { case: "delete", value: true } : { case: "newValue", value: n },
        ...session,
      }),
      casOutcome,
      options,
    );
  }

  /**
   * Rows with `start <= key < end` in key order, at most `limit` (0: no limit), read from
   * one snapshot taken when the scan starts. An omitted or empty bound is open. Leaving
   * `for await` early cancels the call, and the server releases its snapshot.
   */
  async *scan(start?: Bytes, end?: Bytes, limit = 0, options?: KvReadOptions): AsyncGenerator<Row> {
    for await (const batch of this.scanBatches(start, end, limit, options)) yield* batch;
  }

  /**
   * Like `scan`, but yields the rows of each response message together (fewer awaits). A
   * scan is tried on another endpoint only before its first rows arrived.
   */
  async *scanBatches(
    start?: Bytes,
    end?: Bytes,
    limit = 0,
    options?: KvReadOptions,
  ): AsyncGenerator<Row[]> {
    if (!Number.isSafeInteger(limit) || limit < 0) {
      throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
    }
    const request = {
      $typeName: "kv.v1.ScanRequest" as const,
      startKey: b(start ?? ""),
      endKey: b(end ?? ""),
      limit: BigInt(limit),
      serializable: options?.serializable === true,
    };
    const attempts = this.calls.attempts("read", options);
    for (;;) {
      const attempt = attempts.next();
      const context = contextOf(attempt, kv.Scan.path, "read");
      const call = this.calls.transport.serverStream(
        attempt.endpoint,
        kv.Scan,
        request,
        attempt.deadline,
        context,
      );
      let yielded = false;
      try {
        for await (const msg of call as AsyncIterable<ScanResponse>) {
          yielded = true;
          yield msg.entries.map(row);
        }
        this.calls.current = attempt.endpoint;
        return;
      } catch (err) {
        const e = toClientError(err, context);
        if (yielded) throw e;
        await attempts.failed(attempt, e);
      } finally {
        call.cancel();
      }
    }
  }

  /** Every row of `scan(start, end, limit)` in an array. */
  async scanAll(start?: Bytes, end?: Bytes, limit = 0, options?: KvReadOptions): Promise<Row[]> {
    const out: Row[] = [];
    for await (const batch of this.scanBatches(start, end, limit, options)) {
      for (const r of batch) out.push(r);
    }
    return out;
  }

  // ---- the cluster service ----

  /** The members, as the answering member applied them, and the leader it knows. */
  async memberList(options?: KvCallOptions): Promise<MemberList> {
    const res = await this.calls.unary(
      "read",
      cs.MemberList,
      { $typeName: "kv.v1.MemberListRequest" },
      options,
    );
    return {
      clusterId: Number(res.clusterId),
      memberId: Number(res.memberId),
      leaderId: Number(res.leaderId),
      members: res.members.map(memberRecord),
    };
  }

  /**
   * Adds a member (as a learner; the leader promotes it once caught up). Resolves with its
   * record (its new ID) and the membership after the change. Start the new member with
   * `--initial-cluster-state existing` (`kv-engine cluster add` prints the flags).
   */
  async memberAdd(
    spec: { name: string; peerAddress: string; clientAddress?: string },
    options?: KvCallOptions,
  ): Promise<{ clusterId: number; member: MemberRecord; members: MemberRecord[] }> {
    const res = await this.calls.unary(
      "write",
      cs.MemberAdd,
      {
        $typeName: "kv.v1.MemberAddRequest",
        name: spec.name,
        peerAddress: spec.peerAddress,
        clientAddress: spec.clientAddress ?? "",
      },
      options,
    );
    if (res.member === undefined) {
      throw new KvClientError(status.INTERNAL, "the MemberAdd answer names no member");
    }
    return {
      clusterId: Number(res.clusterId),
      member: memberRecord(res.member),
      members: res.members.map(memberRecord),
    };
  }

  /** Removes member `id`; resolves with the membership after the change. */
  async memberRemove(id: number, options?: KvCallOptions): Promise<MemberRecord[]> {
    const res = await this.calls.unary(
      "write",
      cs.MemberRemove,
      { $typeName: "kv.v1.MemberRemoveRequest", id: BigInt(id) },
      options,
    );
    return res.members.map(memberRecord);
  }

  /**
   * Hands leadership to member `to` (default: the most caught-up other voter), asking the
   * leader (found with memberList). Resolves with the new leader's ID.
   */
  async transferLeadership(to = 0, options?: KvCallOptions): Promise<number> {
    const list = await this.memberList(options);
    const leader = list.members.find((m) => m.id === list.leaderId);
    const request = { $typeName: "kv.v1.TransferLeadershipRequest" as const, to: BigInt(to) };
    const res =
      leader !== undefined && leader.clientAddress !== ""
        ? await this.calls.unaryAt(
            leader.clientAddress,
            "write",
            cs.TransferLeadership,
            request,
            options,
          )
        : await this.calls.unary("write", cs.TransferLeadership, request, options);
    return Number(res.leaderId);
  }

  /** The state of the member at `endpoint` (default: the current endpoint); never retried elsewhere. */
  async status(endpoint?: string, options?: KvCallOptions): Promise<MemberStatusRecord> {
    const res = await this.calls.unaryAt(
      endpoint ?? this.calls.current,
      "read",
      cs.Status,
      { $typeName: "kv.v1.StatusRequest" },
      options,
    );
    return statusRecord(res);
  }

  /** Closes the connections. Calls started later fail; calls in flight are not waited for. */
  close(): void {
    this.calls.close();
  }

  // ---- internals ----

  /**
   * A write of the KV service, answered with `decode(response)`: in the client session
   * when the server keeps one (opened first if needed), sent again after an unknown
   * outcome within the call's deadline; else a plain write (`unary`, sent again only when
   * certainly not applied).
   */
  private async write1<Req, Res, T>(
    method: UnaryMethod<Req, Res>,
    make: (session: SessionField) => Req,
    decode: (res: Res) => T,
    options: KvCallOptions | undefined,
  ): Promise<T> {
    const session = this.session;
    const end = deadlineOf(options?.timeoutMs ?? this.timeoutMs);
    // A session that cannot be opened now (no leader, no member up) fails the write with
    // that answer: nothing of it was sent.
    const id = session === undefined ? undefined : await session.open(left(end));
    if (session === undefined || id === undefined) {
      const rest = left(end);
      if (rest !== undefined) options = { ...options, timeoutMs: rest };
      return decode(await this.calls.unary("write", method, make({}), options));
    }
    const w: SessionWrite<Req, Res, T> = { session, id, seq: 0n, method, make, decode };
    w.seq = session.next(id).seq;
    return this.sessionWrite(w, end, false);
  }

  /**
   * Sends session write `w` until answered, within the deadline `end` (a Date.now() time).
   * `reached`: an earlier call of it may have reached a member. SESSION_EXPIRED before any
   * attempt may have reached one opens a new session and goes on; after, the outcome is
   * unknown for good. A write whose outcome stays unknown is rejected with
   * KvClientError.unresolved set, and kept for its resend.
   */
  private async sessionWrite<Req, Res, T>(
    w: SessionWrite<Req, Res, T>,
    end: number | undefined,
    reached: boolean,
  ): Promise<T> {
    let attempts = this.calls.attempts("session-write", timeoutOption(left(end)));
    let unknown: KvClientError | undefined;
    for (;;) {
      const attempt = attempts.next();
      const place = w.session.again(w.id, w.seq);
      const request = w.make({ session: sessionMessage(place) });
      try {
        const res = await this.calls.once(attempt, "session-write", w.method, request);
        this.calls.current = attempt.endpoint;
        w.session.settled(w.id, Number(w.seq));
        return w.decode(res);
      } catch (err) {
        const e = toClientError(err);
        if (e.serverCode === "SESSION_EXPIRED") {
          w.session.expired(w.id);
          if (reached) throw unknown ?? e;
          // Nothing of this write applied: again in a new session, within the deadline.
          const fresh = await w.session.open(left(end)).catch(() => undefined);
          if (fresh === undefined) throw e;
          w.id = fresh;
          w.seq = w.session.next(fresh).seq;
          attempts = this.calls.attempts("session-write", timeoutOption(left(end)));
          continue;
        }
        if (!e.notProposed && !e.neverSent) reached = true;
        if (e.outcomeUnknown) unknown = e;
        try {
          await attempts.failed(attempt, e);
        } catch (final) {
          const f = final instanceof KvClientError ? final : e;
          if (!reached) {
            w.session.settled(w.id, Number(w.seq));
            throw f;
          }
          throw this.keepUnresolved(w, f.outcomeUnknown ? f : (unknown ?? f));
        }
      }
    }
  }

  /** `err` with a handle to send `w` again, kept unsettled in the session until then. */
  private keepUnresolved<Req, Res, T>(
    w: SessionWrite<Req, Res, T>,
    err: KvClientError,
  ): KvClientError {
    const handle = {
      givenUp: false,
      resend: (options?: KvCallOptions): Promise<unknown> => {
        if (handle.givenUp) return Promise.reject(givenUpError(err));
        return this.sessionWrite(w, deadlineOf(options?.timeoutMs ?? this.timeoutMs), true);
      },
    };
    w.session.keep(w.id, Number(w.seq), () => {
      handle.givenUp = true;
    });
    return err.withUnresolved(handle);
  }
}

/** A write of the client session, as it is (re)sent. */
interface SessionWrite<Req, Res, T> {
  readonly session: WriteSession;
  id: bigint;
  seq: bigint;
  readonly method: UnaryMethod<Req, Res>;
  readonly make: (session: SessionField) => Req;
  readonly decode: (res: Res) => T;
}

/** The `session` field of a write request (absent: no session). */
type SessionField = { session?: SessionCallMessage };

function sessionMessage(p: SessionPlace): SessionCallMessage {
  return { $typeName: "kv.v1.SessionCall", id: p.id, seq: p.seq, ackedBelow: p.ackedBelow };
}

/** Milliseconds left until `end` (a Date.now() time; undefined: no deadline). */
function left(end: number | undefined): number | undefined {
  return end === undefined ? undefined : Math.max(1, end - Date.now());
}

function timeoutOption(ms: number | undefined): KvCallOptions {
  return ms === undefined ? {} : { timeoutMs: ms };
}

function deadlineOf(timeoutMs: number | undefined): number | undefined {
  return timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
}

function isUnimplemented(err: unknown): boolean {
  return err instanceof KvClientError && err.code === status.UNIMPLEMENTED;
}

/** A resend of a write given up: its outcome stays unknown for good. */
function givenUpError(err: KvClientError): KvClientError {
  return new KvClientError(err.code, err.details, {
    serverCode: err.serverCode,
    endpoint: err.endpoint,
    failure: err.failure,
    text: `${err.text} (it can no longer be sent again: its client session expired or was replaced)`,
  });
}

function nothing(): undefined {
  return undefined;
}

function casOutcome(res: { applied: boolean; found: boolean; value: Uint8Array }): CasOutcome {
  return { applied: res.applied, current: res.found ? buffer(res.value) : undefined };
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

function memberRecord(m: MemberMessage): MemberRecord {
  return {
    id: Number(m.id),
    name: m.name,
    peerAddress: m.peerAddress,
    clientAddress: m.clientAddress,
    learner: m.learner,
  };
}

function statusRecord(s: StatusResponse): MemberStatusRecord {
  return {
    clusterId: Number(s.clusterId),
    memberId: Number(s.memberId),
    name: s.name,
    role: s.role,
    term: Number(s.term),
    leaderId: Number(s.leaderId),
    leaderClientAddress: s.leaderClientAddress,
    commitIndex: Number(s.commitIndex),
    appliedIndex: Number(s.appliedIndex),
    firstIndex: Number(s.firstIndex),
    lastIndex: Number(s.lastIndex),
    snapshotIndex: Number(s.snapshotIndex),
    removed: s.removed,
    failure: s.failure,
    peers: s.peers.map((p) => ({
      id: Number(p.id),
      lastContactMs: Number(p.lastContactMs),
      progress: p.progress,
      matchIndex: Number(p.matchIndex),
      rttMicros: Number(p.rttMicros),
    })),
  };
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
