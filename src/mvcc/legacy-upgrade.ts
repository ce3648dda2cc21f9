/**
 * The upgrade of a pre-MVCC store (docs/format/mvcc.md, "Upgrade"): every plain user key
 * `0x01 ‖ key` becomes a version at revision 1 (created and modified at 1, version 1,
 * lease 0), and the revision counter becomes 1 (it stays as it is when there are none).
 *
 * In batches of at most `batchKeys` keys, in key order; each batch writes the keys' MVCC
 * entries, deletes their plain keys and sets the counter, atomically. The result depends
 * only on the store's content, and a crash midway leaves plain keys that a second run
 * converts the same way: run it again after a restart until it returns.
 */
import { WriteBatch } from "../batch/write-batch.js";
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { getFixed64 } from "../util/coding.js";
import { REVISION_KEY } from "./layout.js";
import type { KeyValue } from "./types.js";
import { encodeChange, encodeRevision } from "./write-txn.js";

/** First byte of a pre-MVCC user key (src/replication/keys.ts's USER_PREFIX). */
export const LEGACY_PREFIX = 0x01;

export interface UpgradeOptions {
  /** Keys per batch (default 1,000). */
  readonly batchKeys?: number;
  /** Told after each batch is written (tests). */
  readonly onBatch?: () => void | Promise<void>;
}

export interface UpgradeResult {
  /** Plain keys converted by this call. */
  readonly keys: number;
  /** The store's revision afterwards. */
  readonly revision: number;
}

/** True iff `store` holds pre-MVCC user keys (an upgrade has something to do). */
export async function hasLegacyKeys(store: KvStore): Promise<boolean> {
  const rows = await store
    .iterator({
      gte: Uint8Array.of(LEGACY_PREFIX),
      lt: Uint8Array.of(LEGACY_PREFIX + 1),
      limit: 1,
      keysOnly: true,
    })
    .all();
  return rows.length > 0;
}

/**
 * Converts the plain user keys of `store` (see the module comment). REQUIRES: no
 * MvccStore is open on `store`. Throws CORRUPTION when plain keys sit beside MVCC
 * revisions above 1 (history the upgrade cannot be placed under).
 */
export async function upgradeLegacyKeys(
  store: KvStore,
  options: UpgradeOptions = {},
): Promise<UpgradeResult> {
  const batchKeys = options.batchKeys ?? 1000;
  const stored = await store.get(REVISION_KEY);
  let revision = stored === undefined ? 0 : getFixed64(stored, 0);
  let after: Uint8Array | undefined;
  let keys = 0;
  for (;;) {
    const rows = await store
      .iterator({
        ...(after === undefined ? { gte: Uint8Array.of(LEGACY_PREFIX) } : { gt: after }),
        lt: Uint8Array.of(LEGACY_PREFIX + 1),
        limit: batchKeys,
      })
      .all();
    if (rows.length === 0) break;
    if (revision > 1) {
      throw new KvError(
        "CORRUPTION",
        `mvcc: pre-MVCC keys beside MVCC revision ${revision}: cannot upgrade`,
      );
    }
    const b = new WriteBatch();
    for (const [k, value] of rows) {
      const key = k.subarray(1);
      const kv: KeyValue = { key, value, createRevision: 1, modRevision: 1, version: 1, lease: 0n };
      encodeChange(b, key, 1, kv);
      b.delete(k);
    }
    b.put(REVISION_KEY, encodeRevision(1));
    await store.write(b);
    revision = 1;
    keys += rows.length;
    after = rows[rows.length - 1]![0];
    await options.onBatch?.();
  }
  return { keys, revision };
}
