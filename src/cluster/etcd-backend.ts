/**
 * etcd's KV service (src/etcd/) over a cluster member: reads on a view of the member's
 * multi-version state (linearizable through the read loop unless `serializable`), writes
 * and compactions proposed through the log and run by every member as it applies them
 * (src/replication/mvcc-request.ts). Each answer's header names this member, the cluster
 * and the Raft term.
 */
import {
  type EtcdCallOptions,
  type EtcdHeaderIds,
  type EtcdKvBackend,
  fillHeader,
} from "../etcd/etcd-backend.js";
import { isTxnReadOnly, range, readTxn } from "../mvcc/requests/index.js";
import type {
  CompactionRequest,
  CompactionResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
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

export class ReplicatedEtcdBackend implements EtcdKvBackend {
  constructor(private readonly store: ReplicatedStore) {}

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
