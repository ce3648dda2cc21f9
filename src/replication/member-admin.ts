/**
 * MemberAdmin: the admin service's backend (src/db/admin-backend.ts) for a cluster member.
 * It acts on the member it is sent to, on the local store that applies the member's
 * entries (the store a snapshot install may have switched to since):
 * - `flush` and `stats`: that store's;
 * - `compactRange(start, end)`: that store over the user keys [start, end];
 * - `checkpoint(dir)`: a plain single-node store in `dir` holding the member's user keys as
 *   of its applied index (no internal keys, no Raft state), which `kv-engine serve
 *   --data-dir dir` opens: a backup as etcd's `snapshot save` makes. It is written as
 *   batches into a new store, so it costs a copy of the data (a member's checkpoint by hard
 *   links would be in the member's format, which no plain store opens). The result counts
 *   the table files written as `copied`, and their bytes.
 */
import type { AdminBackend, AdminCompactOptions, CheckpointResult } from "../db/admin-backend.js";
import { KvStore } from "../db/kv-store.js";
import type { StoreStats } from "../db/store-stats.js";
import { KvError } from "../errors.js";
import type { FileSystem } from "../vfs/file-system.js";
import { storedKey, storedRange, userKey } from "./keys.js";

/** What MemberAdmin needs of its member. */
export interface MemberStoreAccess {
  /** Resolves with the member's current local store once no snapshot install is running. */
  localStore(): Promise<KvStore>;
  /** The member's file system (where checkpoints are written). */
  readonly fs: FileSystem;
  stats(): StoreStats;
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
    const snapshot = store.snapshot();
    const out = await KvStore.open(targetDir, { fs: this.member.fs, sync: false });
    let tables = 0;
    let bytes = 0;
    try {
      const rows = store.iterator({ ...storedRange(undefined, undefined), snapshot });
      try {
        for (;;) {
          const batch = await rows.nextBatch(CHECKPOINT_BATCH_ROWS);
          if (batch.length === 0) break;
          const wb = out.batch();
          for (const [k, v] of batch) wb.put(userKey(k), v);
          await out.write(wb);
        }
      } finally {
        rows.close();
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
    const range = storedRange(undefined, undefined);
    const store = await this.member.localStore();
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
