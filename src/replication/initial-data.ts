/**
 * A new cluster's initial data: the multi-version keys of a single-node store with
 * revisions (a checkpoint, or etcd's Snapshot restored: docs/etcd.md) copied into a
 * member's store when the cluster is bootstrapped, before its first local snapshot, so
 * that every initial member given the same store starts from the same state (the same
 * keys, revisions and compacted revision) and later members get it in snapshots.
 */
import { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { isRevisioned } from "../mvcc/revisioned.js";
import type { FileSystem } from "../vfs/file-system.js";
import { MVCC_STORE_RANGES } from "./member-admin.js";

const ROWS = 1024;

/**
 * A bootstrap step copying the multi-version keys of the store in `dir` into the member's
 * store (idempotent: the same keys are written again when redone). Throws
 * INVALID_ARGUMENT when `dir` holds no store, or one without revisions.
 */
export function seedFromStore(dir: string, fs: FileSystem): (into: KvStore) => Promise<void> {
  return async (into) => {
    if (!(await fs.exists(dir)))
      throw new KvError("INVALID_ARGUMENT", `initial data: ${dir} does not exist`);
    const from = await KvStore.open(dir, { fs, createIfMissing: false });
    try {
      if (!(await isRevisioned(from))) {
        throw new KvError(
          "INVALID_ARGUMENT",
          `initial data: ${dir} holds a store without revisions (kv-engine upgrade copies it into one)`,
        );
      }
      for (const range of MVCC_STORE_RANGES) {
        const rows = from.iterator(range);
        try {
          for (;;) {
            const batch = await rows.nextBatch(ROWS);
            if (batch.length === 0) break;
            const wb = into.batch();
            for (const [k, v] of batch) wb.put(k, v);
            await into.write(wb);
          }
        } finally {
          rows.close();
        }
      }
    } finally {
      await from.close();
    }
  };
}
