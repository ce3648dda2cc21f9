/**
 * MemberAdmin: the admin service's backend (src/db/admin-backend.ts) for a cluster member.
 * It acts on the member it is sent to, on the local store that applies the member's
 * entries (the store a snapshot install may have switched to since):
 * - `flush` and `stats`: that store's;
 * - `compactRange(start, end)`: that store over the user keys [start, end] (on a
 *   multi-version store: their latest versions and their history; without bounds, the
 *   changes by revision as well);
 * - `checkpoint(dir)`: a single-node store in `dir` holding the member's user keys as of
 *   its applied index, with their revisions and history when the member has them (its
 *   multi-version keys copied as they are), without the member's internal keys and Raft
 *   state, which `kv-engine serve
 *   --data-dir dir` opens: a backup as etcd's `snapshot save` makes. It is written as
 *   batches into a new store, so it costs a copy of the data (a member's checkpoint by hard
 *   links would be in the member's format, which no plain store opens). The result counts
 *   the table files written as `copied`, and their bytes.
 */
import type { AdminBackend, AdminCompactOptions, CheckpointResult } from "../db/admin-backend.js";
import { KvStore } from "../db/kv-store.js";
import type { StoreStats } from "../db/store-stats.js";
import { KvError } from "../errors.js";
import {
  CHANGES_PREFIX,
  HISTORY_PREFIX,
  historyKey,
  LATEST_PREFIX,
  latestKey,
  prefixEnd,
} from "../mvcc/layout.js";
import type { MvccStore } from "../mvcc/mvcc-store.js";
import type { FileSystem } from "../vfs/file-system.js";
import { storedKey, storedRange, userKey } from "./keys.js";

/** What MemberAdmin needs of its member. */
export interface MemberStoreAccess {
  /** Resolves with the member's current local store once no snapshot install is running. */
  localStore(): Promise<KvStore>;
  /** The multi-version store over it, iff it holds revisions (after `localStore`). */
  localMvcc(): MvccStore | undefined;
  /** The member's file system (where checkpoints are written). */
  readonly fs: FileSystem;
  stats(): StoreStats;
}

/**
 * The keys of a multi-version store (docs/format/mvcc.md): its meta keys and its latest,
 * history and changes records; a copy of them is a single-node store with revisions.
 */
export const MVCC_STORE_RANGES: ReadonlyArray<{ gte: Uint8Array; lt: Uint8Array }> = [
  { gte: Buffer.from("\0mvcc/", "latin1"), lt: Buffer.from("\0mvcc0", "latin1") },
  { gte: Uint8Array.of(LATEST_PREFIX), lt: prefixEnd(CHANGES_PREFIX) },
];

/** The store ranges holding the user keys [start, end] of a multi-version store. */
function mvccRanges(
  start: Uint8Array | undefined,
  end: Uint8Array | undefined,
): Array<[Uint8Array, Uint8Array]> {
  const ranges: Array<[Uint8Array, Uint8Array]> = [
    [
      start === undefined ? Uint8Array.of(LATEST_PREFIX) : latestKey(start),
      end === undefined ? prefixEnd(LATEST_PREFIX) : latestKey(end),
    ],
    [
      start === undefined ? Uint8Array.of(HISTORY_PREFIX) : historyKey(start),
      end === undefined ? prefixEnd(HISTORY_PREFIX) : historyKey(end),
    ],
  ];
  if (start === undefined && end === undefined)
    ranges.push([Uint8Array.of(CHANGES_PREFIX), prefixEnd(CHANGES_PREFIX)]);
  return ranges;
}

/** Rows per batch written into a checkpoint. */
const CHECKPOINT_BATCH_ROWS = 1024;

export class MemberAdmin implements AdminBackend {
  constructor(private readonly member: MemberStoreAccess) {}

  async checkpoint(targetDir: string): Promise<CheckpointResult> {
    if (await this.member.fs.exists(targetDir)) {
      throw new KvError("INVALID_ARGUMENT", `checkpoint: ${targetDir} exists`);
    }
    const store = await this.member.localStore();
    const mvcc = this.member.localMvcc();
    const snapshot = store.snapshot();
    const out = await KvStore.open(targetDir, { fs: this.member.fs, sync: false });
    let tables = 0;
    let bytes = 0;
    try {
      const ranges = mvcc === undefined ? [storedRange(undefined, undefined)] : MVCC_STORE_RANGES;
      for (const range of ranges) {
        const rows = store.iterator({ ...range, snapshot });
        try {
          for (;;) {
            const batch = await rows.nextBatch(CHECKPOINT_BATCH_ROWS);
            if (batch.length === 0) break;
            const wb = out.batch();
            for (const [k, v] of batch) wb.put(mvcc === undefined ? userKey(k) : k, v);
            await out.write(wb);
          }
        } finally {
          rows.close();
        }
      }
      await out.flush();
      const written = out.stats();
      for (const n of written.levelFiles) tables += n;
      for (const n of written.levelBytes) bytes += n;
    } finally {
      snapshot.release();
      await out.close();
    }
    return { linked: 0, copied: tables, bytes };
  }

  async compactRange(
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
    options?: AdminCompactOptions,
  ): Promise<void> {
    const store = await this.member.localStore();
    if (this.member.localMvcc() !== undefined) {
      for (const [gte, lt] of mvccRanges(start, end)) await store.compactRange(gte, lt, options);
      return;
    }
    const range = storedRange(undefined, undefined);
    await store.compactRange(
      start === undefined ? range.gte : storedKey(start),
      end === undefined ? range.lt : storedKey(end),
      options,
    );
  }

  async flush(): Promise<void> {
    await (await this.member.localStore()).flush();
  }

  stats(): StoreStats {
    return this.member.stats();
  }
}
