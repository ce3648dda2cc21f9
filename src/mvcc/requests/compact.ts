/** etcd's Compact (apply.go, applierV3backend.Compaction) over a store. */
import { create } from "@bufbuild/protobuf";
import type { WriteBatch } from "../../batch/write-batch.js";
import {
  type CompactionRequest,
  type CompactionResponse,
  CompactionResponseSchema,
} from "../../proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { Mvcc } from "../types.js";
import { header, int64 } from "./key-value.js";

export interface CompactResult {
  readonly response: CompactionResponse;
  /** Resolves when the history is removed from the store (what `physical` waits for). */
  readonly done: Promise<void>;
}

/**
 * Compacts `mvcc`'s history to `req.revision` (reads below it fail from now on). Throws
 * KvError COMPACTED (at or below the compacted revision) or FUTURE_REVISION, doing
 * nothing. The header's revision is the store's. REQUIRES: no write open.
 *
 * Revision 0 on a store never compacted succeeds and does nothing, as etcd's first such
 * call does (etcd's compacted revision starts at -1). `extra` is written only when the
 * store compacts (not on an error, nor for that revision 0).
 */
export function compact(
  mvcc: Mvcc,
  req: CompactionRequest,
  extra?: (batch: WriteBatch) => void,
): CompactResult {
  const revision = int64(req.revision);
  const done =
    revision === 0 && mvcc.compactRevision === 0
      ? Promise.resolve()
      : mvcc.compact(revision, extra).done;
  return {
    response: create(CompactionResponseSchema, { header: header(mvcc.revision) }),
    done,
  };
}
