/**
 * etcd's KV and Lease services (src/etcd/) over a cluster member: reads on a view of the
 * member's multi-version state (linearizable through the read loop unless `serializable`),
 * writes, compactions, lease grants and revokes proposed through the log and run by every
 * member as it applies them (src/replication/mvcc-request.ts). Keep-alives: the leader
 * answers at once from its lessor (the renewal joins its next Tick); a follower proposes
 * the keep-alives that arrive together as one Tick of elapsed 0 and answers once it is
 * applied. TimeToLive: the leader's local clock, a follower's replicated table, after a
 * linearizable read. Each answer's header names this member, the cluster and the Raft term.
 */

import { KvError } from "../errors.js";
import {
  type EtcdCallOptions,
  type EtcdHeaderIds,
  type EtcdKvBackend,
  fillHeader,
} from "../etcd/etcd-backend.js";
import type { EtcdLeaseBackend } from "../etcd/lease-service.js";
import {
  grantToPropose,
  keepAliveResponse,
  leasesResponse,
  timeToLiveResponse,
} from "../lease/lease-answers.js";
import { LeaseIdGenerator, minLeaseTtl } from "../lease/lease-ids.js";
import type { LeaseTickResult } from "../lease/lease-requests.js";
import type { LeaseTable } from "../lease/lease-table.js";
import { isTxnReadOnly, range, readTxn } from "../mvcc/requests/index.js";
import { EMPTY } from "../mvcc/requests/key-value.js";
import type {
  CompactionRequest,
  CompactionResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  LeaseGrantRequest,
  LeaseGrantResponse,
  LeaseKeepAliveResponse,
  LeaseLeasesResponse,
  LeaseRevokeRequest,
  LeaseRevokeResponse,
  LeaseTimeToLiveRequest,
  LeaseTimeToLiveResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { MvccRequest, MvccRequestResult } from "../replication/mvcc-request.js";
import type { ReplicatedStore } from "../replication/replicated-store.js";

/** True iff every range of a read-only txn, nested ones included, is serializable. */
function serializableTxn(req: TxnRequest): boolean {
  for (const op of [...req.success, ...req.failure]) {
    const r = op.request;
    if (r.case === "requestRange" && !r.value.serializable) return false;
    if (r.case === "requestTxn" && !serializableTxn(r.value)) return false;
  }
  return true;
}

/** Keep-alives waiting for the follower's next renewal Tick. */
interface Renewal {
  readonly id: bigint;
  resolve(ttl: number): void;
  reject(err: unknown): void;
}

export class ReplicatedEtcdBackend implements EtcdKvBackend, EtcdLeaseBackend {
  private readonly leaseIds: LeaseIdGenerator;
  /** A follower's keep-alives gathered for one Tick proposal (undefined: none waiting). */
  private renewals: Renewal[] | undefined;

  constructor(private readonly store: ReplicatedStore) {
    this.leaseIds = new LeaseIdGenerator(store.memberId);
  }

  private ids(): EtcdHeaderIds {
    return {
      clusterId: BigInt(this.store.clusterId),
      memberId: BigInt(this.store.memberId),
      raftTerm: BigInt(this.store.term),
    };
  }

  hasLeader(): boolean {
    return this.store.leader() !== undefined;
  }

  range(req: RangeRequest, options?: EtcdCallOptions): Promise<RangeResponse> {
    return this.read(req.serializable, options, (view) => range(view, req));
  }

  put(req: PutRequest, options?: EtcdCallOptions): Promise<PutResponse> {
    return this.write({ kind: "put", request: req }, options) as Promise<PutResponse>;
  }

  deleteRange(req: DeleteRangeRequest, options?: EtcdCallOptions): Promise<DeleteRangeResponse> {
    return this.write(
      { kind: "deleteRange", request: req },
      options,
    ) as Promise<DeleteRangeResponse>;
  }

  txn(req: TxnRequest, options?: EtcdCallOptions): Promise<TxnResponse> {
    if (isTxnReadOnly(req)) return this.read(serializableTxn(req), options, (v) => readTxn(v, req));
    return this.write({ kind: "txn", request: req }, options) as Promise<TxnResponse>;
  }

  async compact(req: CompactionRequest, options?: EtcdCallOptions): Promise<CompactionResponse> {
    const result = await this.submit({ kind: "compact", request: req }, options);
    if (req.physical) await result.done;
    return result.response as CompactionResponse;
  }

  async leaseGrant(req: LeaseGrantRequest, options?: EtcdCallOptions): Promise<LeaseGrantResponse> {
    const minTtl = minLeaseTtl(this.store.lessor.graceMs);
    const request = grantToPropose(req, this.leaseIds, minTtl);
    return (await this.write({ kind: "leaseGrant", request }, options)) as LeaseGrantResponse;
  }

  async leaseRevoke(
    req: LeaseRevokeRequest,
    options?: EtcdCallOptions,
  ): Promise<LeaseRevokeResponse> {
    return (await this.write(
      { kind: "leaseRevoke", request: req },
      options,
    )) as LeaseRevokeResponse;
  }

  /** (No cancellation: a follower's keep-alive shares its proposal with others.) */
  async leaseKeepAlive(id: bigint): Promise<LeaseKeepAliveResponse> {
    this.leaseTable();
    const ttl = this.store.lessor.isPrimary
      ? this.store.lessor.keepAlive(id)
      : await this.renewAtFollower(id);
    const resp = keepAliveResponse(id, ttl, this.store.revision);
    fillHeader(resp.header, this.ids());
    return resp;
  }

  async leaseTimeToLive(
    req: LeaseTimeToLiveRequest,
    options?: EtcdCallOptions,
  ): Promise<LeaseTimeToLiveResponse> {
    return this.read(false, options, async (view) => {
      const latest = async (k: Uint8Array) => (await view.range(k, EMPTY)).kvs[0]?.lease;
      return timeToLiveResponse(this.leaseTable(), this.store.lessor, req, view.revision, latest);
    });
  }

  leaseLeases(options?: EtcdCallOptions): Promise<LeaseLeasesResponse> {
    return this.read(false, options, async (view) =>
      leasesResponse(this.leaseTable(), view.revision),
    );
  }

  /** The member's lease table; throws as `ReplicatedStore.view` when it has none. */
  private leaseTable(): LeaseTable {
    const t = this.store.leases();
    if (t === undefined) {
      throw new KvError(
        "UNAVAILABLE",
        "this member has no multi-version state to serve leases from (not caught up, or it predates revisions)",
      );
    }
    return t;
  }

  /**
   * A follower's keep-alive: joins the keep-alives of this turn of the event loop, proposed
   * together as one Tick of elapsed 0; resolves with the lease's TTL once it is applied.
   */
  private renewAtFollower(id: bigint): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      if (this.renewals === undefined) {
        const batch: Renewal[] = [];
        this.renewals = batch;
        setImmediate(() => {
          this.renewals = undefined;
          const renewed = batch.map((r) => r.id);
          // Applied at the replicated T, which lags the leader's clock by up to a Tick
          // interval: the renewal carries that as slack, so it never ends early.
          const slackMs = this.store.lessor.intervalMs;
          this.store
            .request({ kind: "leaseTick", request: { elapsedMs: 0, renewed, slackMs } })
            .then(
              (result) => {
                const ttls = (result.response as LeaseTickResult).ttls;
                for (const [i, r] of batch.entries()) r.resolve(ttls[i] ?? 0);
              },
              (err: unknown) => {
                for (const r of batch) r.reject(err);
              },
            );
        });
      }
      this.renewals.push({ id, resolve, reject });
    });
  }

  private async read<T extends { header?: RangeResponse["header"] }>(
    serializable: boolean,
    options: EtcdCallOptions | undefined,
    run: (view: Awaited<ReturnType<ReplicatedStore["view"]>>) => Promise<T>,
  ): Promise<T> {
    const signal = options?.signal;
    const view = await this.store.view({
      serializable,
      ...(signal === undefined ? {} : { signal }),
    });
    try {
      const response = await run(view);
      fillHeader(response.header, this.ids());
      return response;
    } finally {
      view.release();
    }
  }

  private async write(r: MvccRequest, options: EtcdCallOptions | undefined): Promise<unknown> {
    return (await this.submit(r, options)).response;
  }

  /** Proposes `r`; resolves with its result once applied here, the header filled. */
  private async submit(
    r: MvccRequest,
    options: EtcdCallOptions | undefined,
  ): Promise<MvccRequestResult> {
    const signal = options?.signal;
    const result = await this.store.request(r, signal === undefined ? {} : { signal });
    fillHeader(result.response.header, this.ids());
    return result;
  }
}
