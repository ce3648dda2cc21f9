/**
 * etcd's space quota (`--quota-backend-bytes`) and NOSPACE alarm over an EtcdKvBackend:
 * - a Put, or a Txn with a put (at any depth), is refused with etcd's "etcdserver: mvcc:
 *   database space exceeded" (RESOURCE_EXHAUSTED) while a NOSPACE alarm is raised;
 * - such a write when the store's size (table files and memtables) is past the quota
 *   raises NOSPACE for this member and is refused;
 * - any write that fails for lack of disk space (KvError NO_SPACE) raises NOSPACE;
 * - a LeaseGrant counts as a put (QuotaGuardedLease), as in etcd's capped applier.
 * Reads, DeleteRange, Txns without puts and Compact are served under the alarm (as etcd's
 * capped applier does), so space can be freed: delete, compact, defragment, then
 * `etcdctl alarm disarm`. While a CORRUPT alarm is raised (corruption-check.ts), every
 * write is refused with etcd's "etcdserver: corrupt cluster" (reads are served; etcd
 * refuses them too). The checks are made before proposing: a write proposed before an
 * alarm was applied still applies.
 */
import { isKvError } from "../errors.js";
import {
  AlarmType,
  type CompactionRequest,
  type CompactionResponse,
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  type LeaseGrantRequest,
  type LeaseGrantResponse,
  type LeaseKeepAliveResponse,
  type LeaseLeasesResponse,
  type LeaseRevokeRequest,
  type LeaseRevokeResponse,
  type LeaseTimeToLiveRequest,
  type LeaseTimeToLiveResponse,
  type PutRequest,
  type PutResponse,
  type RangeRequest,
  type RangeResponse,
  type TxnRequest,
  type TxnResponse,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { EtcdCallOptions, EtcdKvBackend } from "./etcd-backend.js";
import { EtcdError } from "./etcd-errors.js";
import type { EtcdLeaseBackend } from "./lease-service.js";
import type { EtcdAlarmBackend } from "./maintenance-service.js";

/** etcd's default --quota-backend-bytes: 2 GiB. */
export const DEFAULT_QUOTA_BACKEND_BYTES = 2 * 1024 * 1024 * 1024;

export interface QuotaOptions {
  /** The quota in bytes (default DEFAULT_QUOTA_BACKEND_BYTES). */
  readonly quotaBytes?: number;
  /** The store's size now (maintenance-service.ts storeBytes). */
  readonly size: () => number;
  readonly alarms: EtcdAlarmBackend;
  /** The member an alarm raised here names. */
  readonly memberId: () => bigint;
}

/** True iff `req` puts a key, in either branch, at any depth. */
export function txnPuts(req: TxnRequest): boolean {
  for (const op of [...req.success, ...req.failure]) {
    const r = op.request;
    if (r.case === "requestPut") return true;
    if (r.case === "requestTxn" && txnPuts(r.value)) return true;
  }
  return false;
}

export class QuotaGuardedBackend implements EtcdKvBackend {
  private readonly quotaBytes: number;

  constructor(
    private readonly inner: EtcdKvBackend,
    private readonly o: QuotaOptions,
  ) {
    this.quotaBytes = o.quotaBytes ?? DEFAULT_QUOTA_BACKEND_BYTES;
  }

  hasLeader(): boolean {
    return this.inner.hasLeader();
  }

  range(req: RangeRequest, options?: EtcdCallOptions): Promise<RangeResponse> {
    return this.inner.range(req, options);
  }

  put(req: PutRequest, options?: EtcdCallOptions): Promise<PutResponse> {
    return this.guarded(true, () => this.inner.put(req, options));
  }

  deleteRange(req: DeleteRangeRequest, options?: EtcdCallOptions): Promise<DeleteRangeResponse> {
    return this.guarded(false, () => this.inner.deleteRange(req, options));
  }

  txn(req: TxnRequest, options?: EtcdCallOptions): Promise<TxnResponse> {
    return this.guarded(txnPuts(req), () => this.inner.txn(req, options));
  }

  compact(req: CompactionRequest, options?: EtcdCallOptions): Promise<CompactionResponse> {
    return this.guarded(false, () => this.inner.compact(req, options));
  }

  /**
   * Runs `run` unless an alarm refuses it: CORRUPT refuses every write; when `puts`,
   * NOSPACE or a store past the quota (which raises NOSPACE) refuses it. A run failing
   * for lack of disk space raises NOSPACE.
   */
  async guarded<T>(puts: boolean, run: () => Promise<T>): Promise<T> {
    const alarms = await this.o.alarms.recent();
    if (alarms.some((a) => a.alarm === AlarmType.CORRUPT)) throw new EtcdError("CORRUPT");
    if (puts) {
      if (alarms.some((a) => a.alarm === AlarmType.NOSPACE)) throw new EtcdError("NO_SPACE");
      if (this.o.size() > this.quotaBytes) {
        await this.raise();
        throw new EtcdError("NO_SPACE");
      }
    }
    try {
      return await run();
    } catch (err) {
      if (isKvError(err, "NO_SPACE")) await this.raise();
      throw err;
    }
  }

  /** Raises NOSPACE for this member (best effort: the write is refused either way). */
  private async raise(): Promise<void> {
    await this.o.alarms.activate(this.o.memberId(), AlarmType.NOSPACE).catch(() => {});
  }
}

/** An EtcdLeaseBackend whose grants `quota` admits as puts; the other calls pass through. */
export class QuotaGuardedLease implements EtcdLeaseBackend {
  constructor(
    private readonly inner: EtcdLeaseBackend,
    private readonly quota: QuotaGuardedBackend,
  ) {}

  hasLeader(): boolean {
    return this.inner.hasLeader();
  }

  leaseGrant(req: LeaseGrantRequest, options?: EtcdCallOptions): Promise<LeaseGrantResponse> {
    return this.quota.guarded(true, () => this.inner.leaseGrant(req, options));
  }

  leaseRevoke(req: LeaseRevokeRequest, options?: EtcdCallOptions): Promise<LeaseRevokeResponse> {
    return this.inner.leaseRevoke(req, options);
  }

  leaseKeepAlive(id: bigint, options?: EtcdCallOptions): Promise<LeaseKeepAliveResponse> {
    return this.inner.leaseKeepAlive(id, options);
  }

  leaseTimeToLive(
    req: LeaseTimeToLiveRequest,
    options?: EtcdCallOptions,
  ): Promise<LeaseTimeToLiveResponse> {
    return this.inner.leaseTimeToLive(req, options);
  }

  leaseLeases(options?: EtcdCallOptions): Promise<LeaseLeasesResponse> {
    return this.inner.leaseLeases(options);
  }
}
