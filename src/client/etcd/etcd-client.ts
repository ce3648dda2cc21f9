/**
 * EtcdClient: a client of etcd's v3 API (KV, Watch, Lease, v3lock, v3election) for
 * kv-engine and for etcd itself, with the endpoints, transports, TLS, token, deadlines
 * and retry rules of KvClient (call-runner.ts; docs/client.md, "etcd's API").
 *
 * Keys and values are bytes or strings (UTF-8); what comes back is a Buffer. Revisions
 * are numbers, lease IDs bigints. Every call takes `timeoutMs` (or the client's default)
 * and fails with a KvClientError whose `serverCode` names etcd's error (etcd-errors.ts).
 * Reads (Range, a txn without writes, TimeToLive, Leases) are retried on another endpoint
 * after UNAVAILABLE; writes only when certainly not done ("etcdserver: no leader", or
 * never sent).
 *
 * ```ts
 * const etcd = new EtcdClient(["127.0.0.1:2379", "127.0.0.1:22379"]);
 * await etcd.put("a", "1");
 * const { kvs, header } = await etcd.range({ prefix: "a" });
 * for await (const batch of etcd.watch({ prefix: "a" }, { startRevision: header.revision + 1 })) { ... }
 * const lease = await etcd.lease(10);           // kept alive; lease.lost fires if not
 * const held = await etcd.lock("jobs");          // held.revision: the fencing token
 * etcd.close();
 * ```
 */
import { create } from "@bufbuild/protobuf";
import {
  CompactionRequestSchema,
  LeaseGrantRequestSchema,
  LeaseLeasesRequestSchema,
  type TxnRequest,
  type TxnResponse,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { type CallOptions, CallRunner, type ClientOptions } from "../call-runner.js";
import {
  campaign,
  type HeldLock,
  type HeldOptions,
  type Leadership,
  leader,
  lock,
  observe,
} from "./etcd-concurrency.js";
import { refineEtcdError } from "./etcd-errors.js";
import {
  type DeleteOptions,
  type DeleteResult,
  deleteRequest,
  deleteResult,
  type PutOptions,
  type PutResult,
  putRequest,
  putResult,
  type RangeOptions,
  type RangeResult,
  rangeRequest,
  rangeResult,
} from "./etcd-kv.js";
import { Lease, type LeaseTimeToLive, revokeLease, timeToLive } from "./etcd-lease.js";
import { etcdMethods } from "./etcd-methods.js";
import { TxnBuilder } from "./etcd-txn.js";
import {
  type Bytes,
  type EtcdHeader,
  headerOf,
  type KeySelector,
  type KeyValueRecord,
  revisionOf,
} from "./etcd-types.js";
import { type WatchBatch, type WatchOptions, watchBatches } from "./etcd-watch.js";

export type EtcdClientOptions = ClientOptions;

export interface GetOptions extends CallOptions {
  /** Read at this revision (omitted or 0: the current one). */
  revision?: number;
  /** A cluster member may answer from its own state, possibly stale. */
  serializable?: boolean;
}

export class EtcdClient {
  /** The endpoints, the transport, the attempts of a call (shared by the watches and leases). */
  readonly calls: CallRunner;
  private isClosed = false;
  /** The leases this client keeps alive. */
  private readonly kept = new Set<Lease>();

  /**
   * `address`: "host:port", http://host:port or https://host:port (TLS), a comma list of
   * them, or an array; throws a TypeError naming the expected form for a malformed one.
   * No connection is made until the first call.
   */
  constructor(address: string | readonly string[], options: EtcdClientOptions = {}) {
    this.calls = new CallRunner(address, options, refineEtcdError);
  }

  get endpoints(): readonly string[] {
    return this.calls.endpoints;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.isClosed;
  }

  // ---- KV ----

  /** The key's state (undefined when absent), at `revision` or now. */
  async get(key: Bytes, options?: GetOptions): Promise<KeyValueRecord | undefined> {
    return (await this.range(key, options)).kvs[0];
  }

  /** The keys of `selector` with their metadata, and the header (its revision: the store's). */
  async range(selector: KeySelector, options?: RangeOptions & CallOptions): Promise<RangeResult> {
    const r = await this.calls.unary(
      "read",
      etcdMethods.Range,
      rangeRequest(selector, options),
      options,
    );
    return rangeResult(r);
  }

  /** Stores `value` under `key`; the header's revision is the put's. */
  async put(key: Bytes, value: Bytes, options?: PutOptions & CallOptions): Promise<PutResult> {
    const r = await this.calls.unary(
      "write",
      etcdMethods.Put,
      putRequest(key, value, options),
      options,
    );
    return putResult(r);
  }

  /** Deletes the keys of `selector`; `deleted` counts them. */
  async delete(
    selector: KeySelector,
    options?: DeleteOptions & CallOptions,
  ): Promise<DeleteResult> {
    const r = await this.calls.unary(
      "write",
      etcdMethods.DeleteRange,
      deleteRequest(selector, options),
      options,
    );
    return deleteResult(r);
  }

  /**
   * Drops the history below `revision` (reads below it then fail COMPACTED); `physical`
   * waits until the store removed it.
   */
  async compact(
    revision: number,
    options?: { physical?: boolean } & CallOptions,
  ): Promise<EtcdHeader> {
    const r = await this.calls.unary(
      "write",
      etcdMethods.Compact,
      create(CompactionRequestSchema, {
        revision: revisionOf(revision, "revision"),
        physical: options?.physical === true,
      }),
      options,
    );
    return headerOf(r.header);
  }

  /** A transaction (etcd-txn.ts): `.if(...).success(...).failure(...).commit()`. */
  txn(options?: CallOptions): TxnBuilder {
    return new TxnBuilder(
      (request: TxnRequest, writes: boolean): Promise<TxnResponse> =>
        this.calls.unary(writes ? "write" : "read", etcdMethods.Txn, request, options),
    );
  }

  // ---- Watch ----

  /** The changes of `selector` as batches of events (etcd-watch.ts). */
  watch(selector: KeySelector, options?: WatchOptions): AsyncGenerator<WatchBatch> {
    return watchBatches(this, selector, options);
  }

  // ---- Lease ----

  /** Grants a lease of `ttl` seconds and keeps it alive until revoked, released or lost. */
  async lease(ttl: number, options?: CallOptions & { id?: bigint }): Promise<Lease> {
    if (!Number.isSafeInteger(ttl) || ttl < 1) {
      throw new RangeError(`a lease's TTL is a positive whole number of seconds, got ${ttl}`);
    }
    const at = Date.now();
    const r = await this.calls.unary(
      "write",
      etcdMethods.LeaseGrant,
      create(LeaseGrantRequestSchema, { TTL: BigInt(ttl), ID: options?.id ?? 0n }),
      options,
    );
    const lease = new Lease(this.calls, r.ID, Number(r.TTL), at, (l) => this.kept.delete(l));
    if (this.isClosed) lease.release();
    else this.kept.add(lease);
    return lease;
  }

  /** The state of lease `id` (TTL -1: gone); with `keys`, its keys. */
  timeToLive(id: bigint, options?: CallOptions & { keys?: boolean }): Promise<LeaseTimeToLive> {
    return timeToLive(this.calls, id, options);
  }

  /** Revokes lease `id` (its keys are deleted). */
  revoke(id: bigint, options?: CallOptions): Promise<void> {
    return revokeLease(this.calls, id, options);
  }

  /** The IDs of every lease the server holds. */
  async leases(options?: CallOptions): Promise<bigint[]> {
    const r = await this.calls.unary(
      "read",
      etcdMethods.LeaseLeases,
      create(LeaseLeasesRequestSchema, {}),
      options,
    );
    return r.leases.map((l) => l.ID);
  }

  // ---- Lock and Election ----

  /** Waits for the lock `name` (etcd-concurrency.ts); resolves with its fencing revision. */
  lock(name: Bytes, options?: HeldOptions): Promise<HeldLock> {
    return lock(this, name, options);
  }

  /** Waits to lead election `name`, proclaiming `value`. */
  campaign(name: Bytes, value: Bytes, options?: HeldOptions): Promise<Leadership> {
    return campaign(this, name, value, options);
  }

  /** The leader of election `name` (undefined: none). */
  leader(name: Bytes, options?: CallOptions): Promise<KeyValueRecord | undefined> {
    return leader(this.calls, name, options);
  }

  /** The leaders of election `name`, the current one first. */
  observe(name: Bytes, options?: { signal?: AbortSignal }): AsyncGenerator<KeyValueRecord> {
    return observe(this.calls, name, options);
  }

  /**
   * Stops every lease's keep-alives (the leases expire after their TTL), ends the
   * watches, closes the connections.
   */
  close(): void {
    this.isClosed = true;
    for (const l of [...this.kept]) l.release();
    this.calls.close();
  }
}
