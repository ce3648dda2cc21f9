/**
 * Locks (v3lock) and elections (v3election) through the server's own recipes, each held
 * by a lease: one given by the caller, or one of the call's own (TTL `ttl`, default 60 s,
 * kept alive by this client, revoked on unlock/resign and when the call fails).
 *
 * - `lock(name)` resolves once the lock is held, with its key and fencing revision: the
 *   key's create revision, which grows with each holder (give it to the resources the lock
 *   guards, so that a holder whose lease was lost meanwhile is refused: a lock alone is
 *   not safe, Jepsen etcd 3.4.3). `lost` fires when its lease is lost.
 * - `campaign(name, value)` resolves once elected, with the leader key and its revision;
 *   `proclaim`, `resign`. `observe(name)` iterates the leaders' values, the current one
 *   first; it resumes on the next endpoint after a failure (a leader it had yielded is
 *   not yielded again).
 * - `signal` cancels a wait (the call fails ABORTED, and its key is removed by the server
 *   or with the call's own lease).
 */
import { create } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import {
  CampaignRequestSchema,
  type LeaderKey,
  LeaderKeySchema,
  LeaderRequestSchema,
  ProclaimRequestSchema,
  ResignRequestSchema,
} from "../../proto/gen/etcd/api/v3electionpb/v3election_pb.js";
import {
  LockRequestSchema,
  UnlockRequestSchema,
} from "../../proto/gen/etcd/api/v3lockpb/v3lock_pb.js";
import type { CallOptions, CallRunner } from "../call-runner.js";
import { KvClientError } from "../kv-client-error.js";
import { rangeRequest } from "./etcd-kv.js";
import type { Lease } from "./etcd-lease.js";
import { etcdMethods } from "./etcd-methods.js";
import { type Bytes, buffer, bytes, type KeyValueRecord, kvRecord } from "./etcd-types.js";

export interface HeldOptions extends CallOptions {
  /** Hold it with this lease (default: one of its own, revoked when released). */
  lease?: Lease;
  /** The TTL in seconds of the call's own lease (default 60). */
  ttl?: number;
  /** Cancels the wait (the call then fails ABORTED). */
  signal?: AbortSignal;
}

/** What the recipes need of the client. */
export interface ConcurrencyHost {
  readonly calls: CallRunner;
  lease(ttl: number): Promise<Lease>;
}

/** A held lock. */
export interface HeldLock {
  /** The lock's key (the name, then the lease ID). */
  readonly key: Buffer;
  /** The key's create revision: the fencing token. */
  readonly revision: number;
  /** The lease holding it. */
  readonly lease: Lease;
  /** Fires when the lease is lost (the lock is then no longer held). */
  readonly lost: AbortSignal;
  /** Releases the lock (and revokes the call's own lease). */
  unlock(options?: CallOptions): Promise<void>;
}

/** An election won. */
export interface Leadership {
  readonly name: Buffer;
  /** The leader key. */
  readonly key: Buffer;
  /** The leader key's create revision. */
  readonly revision: number;
  readonly lease: Lease;
  readonly lost: AbortSignal;
  /** Sets the leader's value (fails FAILED_PRECONDITION once no longer the leader). */
  proclaim(value: Bytes, options?: CallOptions): Promise<void>;
  /** Gives up leadership (and revokes the call's own lease). */
  resign(options?: CallOptions): Promise<void>;
}

/** Runs `wait` with a lease (the caller's, or a new one revoked if `wait` fails). */
async function withLease<T>(
  host: ConcurrencyHost,
  o: HeldOptions,
  wait: (lease: Lease) => Promise<T>,
): Promise<{ value: T; lease: Lease; own: boolean }> {
  const own = o.lease === undefined;
  const lease = o.lease ?? (await host.lease(o.ttl ?? 60));
  try {
    return { value: await wait(lease), lease, own };
  } catch (err) {
    if (own) await lease.revoke().catch(() => {});
    if (o.signal?.aborted === true) {
      throw new KvClientError(status.CANCELLED, "the wait was cancelled by its signal", {
        serverCode: "ABORTED",
        cause: err,
      });
    }
    throw err;
  }
}

export async function lock(
  host: ConcurrencyHost,
  name: Bytes,
  o: HeldOptions = {},
): Promise<HeldLock> {
  const calls = host.calls;
  const {
    value: key,
    lease,
    own,
  } = await withLease(host, o, async (lease) => {
    const r = await calls.unary(
      "write",
      etcdMethods.Lock,
      create(LockRequestSchema, { name: bytes(name), lease: lease.id }),
      o,
    );
    return buffer(r.key);
  });
  // The fencing revision: the lock key's create revision.
  const r = await calls.unary("read", etcdMethods.Range, rangeRequest(key), o);
  const kv = r.kvs[0];
  if (kv === undefined) {
    if (own) await lease.revoke().catch(() => {});
    throw new KvClientError(
      status.NOT_FOUND,
      "the lock's key was gone once acquired (its lease lost)",
      {
        serverCode: "NOT_FOUND",
      },
    );
  }
  return {
    key,
    revision: Number(kv.createRevision),
    lease,
    lost: lease.lost,
    async unlock(options?: CallOptions) {
      await calls.unary("write", etcdMethods.Unlock, create(UnlockRequestSchema, { key }), options);
      if (own) await lease.revoke(options).catch(() => {});
    },
  };
}

export async function campaign(
  host: ConcurrencyHost,
  name: Bytes,
  value: Bytes,
  o: HeldOptions = {},
): Promise<Leadership> {
  const calls = host.calls;
  const {
    value: leader,
    lease,
    own,
  } = await withLease(host, o, async (lease) => {
    const r = await calls.unary(
      "write",
      etcdMethods.Campaign,
      create(CampaignRequestSchema, { name: bytes(name), lease: lease.id, value: bytes(value) }),
      o,
    );
    if (r.leader === undefined)
      throw new KvClientError(status.INTERNAL, "a Campaign answer without a leader key");
    return r.leader;
  });
  const key: LeaderKey = create(LeaderKeySchema, leader);
  return {
    name: buffer(key.name),
    key: buffer(key.key),
    revision: Number(key.rev),
    lease,
    lost: lease.lost,
    async proclaim(v: Bytes, options?: CallOptions) {
      await calls.unary(
        "write",
        etcdMethods.Proclaim,
        create(ProclaimRequestSchema, { leader: key, value: bytes(v) }),
        options,
      );
    },
    async resign(options?: CallOptions) {
      await calls.unary(
        "write",
        etcdMethods.Resign,
        create(ResignRequestSchema, { leader: key }),
        options,
      );
      if (own) await lease.revoke(options).catch(() => {});
    },
  };
}

/** The current leader's key-value, or undefined when the election has none. */
export async function leader(
  calls: CallRunner,
  name: Bytes,
  options?: CallOptions,
): Promise<KeyValueRecord | undefined> {
  try {
    const r = await calls.unary(
      "read",
      etcdMethods.Leader,
      create(LeaderRequestSchema, { name: bytes(name) }),
      options,
    );
    return r.kv === undefined ? undefined : kvRecord(r.kv);
  } catch (err) {
    if (err instanceof KvClientError && err.serverCode === "NOT_FOUND") return undefined;
    throw err;
  }
}

/** The leaders of election `name` (see the module comment); ends when `signal` fires. */
export async function* observe(
  calls: CallRunner,
  name: Bytes,
  options: { signal?: AbortSignal } = {},
): AsyncGenerator<KeyValueRecord> {
  const signal = options.signal;
  const aborted = (): boolean => signal?.aborted === true;
  const request = create(LeaderRequestSchema, { name: bytes(name) });
  let endpoint = calls.current;
  let last: KeyValueRecord | undefined;
  let pause = 50;
  while (!aborted()) {
    const context = { endpoint, path: etcdMethods.Observe.path, kind: "read" as const };
    const stream = calls.transport.serverStream(
      endpoint,
      etcdMethods.Observe,
      request,
      undefined,
      context,
    );
    const onAbort = () => stream.cancel();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const r of stream) {
        if (r.kv === undefined) continue;
        const kv = kvRecord(r.kv);
        pause = 50;
        if (last !== undefined && kv.modRevision <= last.modRevision) continue;
        last = kv;
        yield kv;
      }
    } catch (err) {
      if (aborted()) return;
      const e = calls.error(err, context);
      if (e.failure === "answered" && e.code !== status.UNAVAILABLE) throw e;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      stream.cancel();
    }
    endpoint = calls.nextEndpoint(endpoint);
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(1000, pause * 2);
  }
}
