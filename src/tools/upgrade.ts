/**
 * `kv-engine upgrade`: copies a single-node store written before revisions (plain user
 * keys) into a new directory as a store with revisions (docs/format/mvcc.md), every key at
 * revision 1 (create = mod = 1, version 1), which `kv-engine serve` then serves to kv.v1
 * and etcd's API alike. The source is only read. A store that already has revisions is
 * refused (nothing to do); the target must not exist. The copy is written in TARGET.partial
 * and renamed to TARGET once complete and flushed (the parent directory synced), so a
 * crash leaves no TARGET: run again (it starts over, removing TARGET.partial).
 */
import { WriteBatch } from "../batch/write-batch.js";
import { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { LEGACY_PREFIX, upgradeLegacyKeys } from "../mvcc/legacy-upgrade.js";
import { isRevisioned, markRevisioned } from "../mvcc/revisioned.js";
import { dirName, type FileSystem } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import { removeTree } from "../vfs/remove-tree.js";

export interface UpgradeReport {
  readonly from: string;
  readonly to: string;
  /** Keys copied, each now at revision 1. */
  readonly keys: number;
  /** The new store's revision. */
  readonly revision: number;
}

const BATCH_ROWS = 1000;

export async function upgradeStore(
  from: string,
  to: string,
  fs: FileSystem = new RealFileSystem(),
): Promise<UpgradeReport> {
  if (await fs.exists(to)) throw new KvError("INVALID_ARGUMENT", `upgrade: ${to} exists`);
  const partial = `${to}.partial`;
  const source = await KvStore.open(from, { fs, createIfMissing: false });
  let report: UpgradeReport;
  try {
    if (await isRevisioned(source)) {
      throw new KvError("INVALID_ARGUMENT", `upgrade: ${from} has revisions already`);
    }
    if (await fs.exists(partial)) await removeTree(fs, partial);
    const target = await KvStore.open(partial, { fs, sync: false });
    try {
      const rows = source.iterator({});
      let keys = 0;
      try {
        for (;;) {
          const batch = await rows.nextBatch(BATCH_ROWS);
          if (batch.length === 0) break;
          const b = new WriteBatch();
          for (const [k, v] of batch) {
            const stored = Buffer.allocUnsafe(1 + k.length);
            stored[0] = LEGACY_PREFIX;
            stored.set(k, 1);
            b.put(stored, v);
          }
          await target.write(b);
          keys += batch.length;
        }
      } finally {
        rows.close();
      }
      const { revision } = await upgradeLegacyKeys(target);
      // A store without keys gets its mark here (the conversion writes it otherwise).
      if (!(await isRevisioned(target))) await target.write(markRevisioned(new WriteBatch()));
      await target.flush();
      report = { from, to, keys, revision: Math.max(1, revision) };
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
  await fs.rename(partial, to);
  await fs.syncDir(dirName(to));
  return report;
}
