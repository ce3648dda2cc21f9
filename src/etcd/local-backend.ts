/**
 * The etcd KV and Lease backend of one node without Raft: an Mvcc store, its writes (puts,
 * deletes, txns that write, compactions, lease grants, revokes and Ticks) run one at a time
 * in arrival order, each write transaction begun once the previous one's `end` was called,
 * and answered once its `end` resolved (so a read that starts after an answer sees it);
 * reads (ranges, read-only txns) run at once on `read()` views, so serializable and
 * linearizable reads are the same here. The node is the leases' primary (src/lease/
 * lessor.ts): a timer runs its Ticks through the write queue until `close`.
 */

import {
  grantToPropose,
  keepAliveResponse,
  leasesResponse,
  timeToLiveResponse,
} from "../lease/lease-answers.js";
import { LeaseIdGenerator, SINGLE_NODE_MIN_TTL } from "../lease/lease-ids.js";
import { type LeaseRequest, runLeaseRequest } from "../lease/lease-requests.js";
import { LeaseTable } from "../lease/lease-table.js";
import { Lessor, type LessorOptions } from "../lease/lessor.js";

import {
  compact,
  deleteRange,
  isTxnReadOnly,
  put,
  range,
  readTxn,
  txn,
} from "../mvcc/requests/index.js";
import { EMPTY } from "../mvcc/requests/key-value.js";
import { SerialWrites } from "../mvcc/serial-writes.js";
import type { Mvcc, MvccWrite } from "../mvcc/types.js";
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
  ResponseHeader,
  TxnRequest,
  TxnResponse,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { type EtcdHeaderIds, type EtcdKvBackend, fillHeader } from "./etcd-backend.js";
import type { EtcdLeaseBackend } from "./lease-service.js";

export interface LocalEtcdBackendOptions {
  /** The header's ids (default: all 0). */
  ids?: Partial<EtcdHeaderIds>;
  /**
   * The lease table of the store (LeaseTable.load; default: a new empty one, for a store
   * that holds no lease).
   */
  leases?: LeaseTable;
  /** The lease clock's options (tests: an injected clock); the grace is 0 here. */
  lessor?: LessorOptions;
  /** Between checks whether a lease Tick is due (default 100 ms). */
  leaseCheckMs?: number;
  /** The store's write queue, when others write to it too (kv.v1: MvccKvBackend). */
  writes?: SerialWrites;
}

export class LocalEtcdBackend implements EtcdKvBackend, EtcdLeaseBackend {
  private readonly ids: EtcdHeaderIds;
  /** The replicated-state half of the leases (here: the store's). */
  readonly leases: LeaseTable;
  /** The leases' clock; this node is always their primary. */
  readonly lessor: Lessor;
  private readonly leaseIds: LeaseIdGenerator;
  private readonly writes: SerialWrites;
  private readonly ticker: NodeJS.Timeout;

  constructor(
    private readonly mvcc: Mvcc,
    options: LocalEtcdBackendOptions = {},
  ) {
    this.ids = { clusterId: 0n, memberId: 0n, raftTerm: 0n, ...options.ids };
    this.writes = options.writes ?? new SerialWrites(mvcc);
    this.leases = options.leases ?? new LeaseTable();
    this.lessor = new Lessor(() => this.leases, options.lessor);
    this.lessor.setPrimary(true);
    this.leaseIds = new LeaseIdGenerator(this.ids.memberId);
    this.ticker = setInterval(() => this.tickLeases(), options.leaseCheckMs ?? 100);
    this.ticker.unref();
  }

  /** Stops the lease clock (the store stays open: its owner closes it). */
  close(): void {
    clearInterval(this.ticker);
  }

  hasLeader(): boolean {
    return true;
  }

  async range(req: RangeRequest): Promise<RangeResponse> {
    const view = this.mvcc.read();
    try {
      return this.filled(await range(view, req));
    } finally {
      view.release();
    }
  }

  put(req: PutRequest): Promise<PutResponse> {
    return this.write((w) => put(w, req, this.leases));
  }

  deleteRange(req: DeleteRangeRequest): Promise<DeleteRangeResponse> {
    return this.write((w) => deleteRange(w, req, this.leases));
  }

  async txn(req: TxnRequest): Promise<TxnResponse> {
    if (!isTxnReadOnly(req)) return this.write((w) => txn(w, req, this.leases));
    const view = this.mvcc.read();
    try {
      return this.filled(await readTxn(view, req));
    } finally {
      view.release();
    }
  }

  async compact(req: CompactionRequest): Promise<CompactionResponse> {
    const started = await this.writes.exclusive((mvcc) => compact(mvcc, req));
    if (req.physical) await started.done;
    return this.filled(started.response);
  }

  async leaseGrant(req: LeaseGrantRequest): Promise<LeaseGrantResponse> {
    const request = grantToPropose(req, this.leaseIds, SINGLE_NODE_MIN_TTL);
    return (await this.lease({ kind: "leaseGrant", request })) as LeaseGrantResponse;
  }

  async leaseRevoke(req: LeaseRevokeRequest): Promise<LeaseRevokeResponse> {
    return (await this.lease({ kind: "leaseRevoke", request: req })) as LeaseRevokeResponse;
  }

  async leaseKeepAlive(id: bigint): Promise<LeaseKeepAliveResponse> {
    return this.filled(keepAliveResponse(id, this.lessor.keepAlive(id), this.mvcc.revision));
  }

  async leaseTimeToLive(req: LeaseTimeToLiveRequest): Promise<LeaseTimeToLiveResponse> {
    const view = this.mvcc.read();
    try {
      const latest = async (k: Uint8Array) => (await view.range(k, EMPTY)).kvs[0]?.lease;
      return this.filled(
        await timeToLiveResponse(this.leases, this.lessor, req, view.revision, latest),
      );
    } finally {
      view.release();
    }
  }

  async leaseLeases(): Promise<LeaseLeasesResponse> {
    return this.filled(leasesResponse(this.leases, this.mvcc.revision));
  }

  /** Runs lease request `req` in the write queue; answers once visible. */
  private async lease(req: LeaseRequest): Promise<unknown> {
    const run = await this.writes.exclusive(async (mvcc) => {
      const r = await runLeaseRequest(mvcc, this.leases, req, () => {});
      await r.ended;
      return r;
    });
    if (run.error !== undefined) throw run.error;
    const response = run.response;
    if (response !== undefined) fillHeader(response.header, this.ids);
    return response;
  }

  /** Proposes (here: runs) the lease Tick due, if any. */
  private tickLeases(): void {
    const tick = this.lessor.nextTick();
    if (tick === undefined) return;
    this.lease({ kind: "leaseTick", request: tick }).catch(() => {
      // A failed store fails the next writes too; they report it.
    });
  }

  private filled<T extends { header?: ResponseHeader | undefined }>(response: T): T {
    fillHeader(response.header, this.ids);
    return response;
  }

  /**
   * Runs `op` in a write transaction of its own, after every earlier one; answers once the
   * transaction is visible. `op` checks before it writes, so one that throws wrote nothing
   * (unless the store itself failed midway).
   */
  private async write<T extends { header?: ResponseHeader | undefined }>(
    op: (w: MvccWrite) => Promise<T>,
  ): Promise<T> {
    return this.filled(await this.writes.run(op));
  }
}
