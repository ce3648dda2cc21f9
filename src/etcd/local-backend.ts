/**
 * The etcd KV backend of one node without Raft: an Mvcc store, its writes (puts, deletes,
 * txns that write, compactions) run one at a time in arrival order, each write transaction
 * begun once the previous one's `end` was called, and answered once its `end` resolved
 * (so a read that starts after an answer sees it); reads (ranges, read-only txns) run at
 * once on `read()` views, so serializable and linearizable reads are the same here.
 */

import {
  compact,
  deleteRange,
  isTxnReadOnly,
  type LeaseLookup,
  NO_LEASES,
  put,
  range,
  readTxn,
  txn,
} from "../mvcc/requests/index.js";
import { SerialWrites } from "../mvcc/serial-writes.js";
import type { Mvcc, MvccWrite } from "../mvcc/types.js";
import type {
  CompactionRequest,
  CompactionResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  ResponseHeader,
  TxnRequest,
  TxnResponse,
} from "../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { type EtcdHeaderIds, type EtcdKvBackend, fillHeader } from "./etcd-backend.js";

export interface LocalEtcdBackendOptions {
  /** The header's ids (default: all 0). */
  ids?: Partial<EtcdHeaderIds>;
  /** The leases puts may name (default: none exists). */
  leases?: LeaseLookup;
  /** The store's write queue, when others write to it too (kv.v1: MvccKvBackend). */
  writes?: SerialWrites;
}

export class LocalEtcdBackend implements EtcdKvBackend {
  private readonly ids: EtcdHeaderIds;
  private readonly leases: LeaseLookup;
  private readonly writes: SerialWrites;

  constructor(
    private readonly mvcc: Mvcc,
    options: LocalEtcdBackendOptions = {},
  ) {
    this.ids = { clusterId: 0n, memberId: 0n, raftTerm: 0n, ...options.ids };
    this.writes = options.writes ?? new SerialWrites(mvcc);
    this.leases = options.leases ?? NO_LEASES;
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
    return this.write((w) => deleteRange(w, req));
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
