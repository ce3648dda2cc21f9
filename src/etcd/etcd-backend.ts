/**
 * What etcd's KV service (kv-service.ts) needs of the store behind it: the local one
 * (local-backend.ts: an Mvcc on this node) or a replicated one (the cluster wires its own).
 * Requests reach a backend after the API layer's checks (src/mvcc/requests/validate.ts);
 * the backend applies them (src/mvcc/requests) and answers with etcd's messages, their
 * top-level header complete (cluster_id, member_id, revision, raft_term: fillHeader).
 * Failures are thrown as EtcdError, RequestError or KvError (etcd-errors.ts maps them).
 */
import type { AbortSignalLike } from "../db/kv-backend.js";
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

/** The header fields that name who answered. */
export interface EtcdHeaderIds {
  readonly clusterId: bigint;
  readonly memberId: bigint;
  /** The Raft term (0 on a single node without Raft). */
  readonly raftTerm: bigint;
}

export interface EtcdCallOptions {
  /** Fires when the call is cancelled or its deadline passes. */
  readonly signal?: AbortSignalLike;
}

export interface EtcdKvBackend {
  /** False when this member knows of no leader (calls with `hasleader` then fail NO_LEADER). */
  hasLeader(): boolean;
  /** Linearizable unless `req.serializable`. */
  range(req: RangeRequest, options?: EtcdCallOptions): Promise<RangeResponse>;
  put(req: PutRequest, options?: EtcdCallOptions): Promise<PutResponse>;
  deleteRange(req: DeleteRangeRequest, options?: EtcdCallOptions): Promise<DeleteRangeResponse>;
  /** A txn without puts or deletes is a read (serializable when all its ranges are). */
  txn(req: TxnRequest, options?: EtcdCallOptions): Promise<TxnResponse>;
  /** Resolves once reads below the revision fail; with `physical`, once the history is gone. */
  compact(req: CompactionRequest, options?: EtcdCallOptions): Promise<CompactionResponse>;
}

/** Sets the ids of a response's top-level header (its revision is the request's own). */
export function fillHeader(header: ResponseHeader | undefined, ids: EtcdHeaderIds): void {
  if (header === undefined) return;
  header.clusterId = ids.clusterId;
  header.memberId = ids.memberId;
  header.raftTerm = ids.raftTerm;
}
