/**
 * Whether a store holds the multi-version layout (docs/format/mvcc.md): its revision
 * counter is the mark. A cluster member's store gets it when the cluster is created (or
 * from a snapshot of a store that has it); a store without it predates revisions (its
 * user keys are stored plain: legacy-upgrade.ts).
 */
import type { WriteBatch } from "../batch/write-batch.js";
import type { KvStore } from "../db/kv-store.js";
import { REVISION_KEY } from "./layout.js";
import { encodeRevision } from "./write-txn.js";

/** The revision a new multi-version store starts at (etcd's). */
export const FIRST_REVISION = 1;

/** True iff `store` holds the multi-version layout. */
export async function isRevisioned(store: KvStore): Promise<boolean> {
  return (await store.get(REVISION_KEY)) !== undefined;
}

/** Adds to `b` the mark of a new multi-version store: its revision counter at 1. */
export function markRevisioned(b: WriteBatch): WriteBatch {
  return b.put(REVISION_KEY, encodeRevision(FIRST_REVISION));
}
