/**
 * The merged internal iterator over a read view, the source of `db.iterator()`: one child
 * per memtable (the active one, then the immutable ones), one per level-0 table (or one
 * for all of level 0 when its files happen not to overlap), and one LevelIterator per
 * deeper level, merged in internal-key order. The table readers are held (acquired from
 * the table cache) until the iterator is closed.
 */
import { LevelIterator } from "../iterator/level-iterator.js";
import { MergingIterator } from "../iterator/merging-iterator.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import { compareBytes } from "../key/internal-key.js";
import type { TableCache } from "../sstable/table-cache.js";
import type { TableReader } from "../sstable/table-reader.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { ReadView } from "./read-view.js";

/**
 * The merged iterator over `view` (see the module comment); `fillCache` says whether the
 * blocks it reads go into the block cache. REQUIRES: `view` stays referenced until the
 * iterator is closed. Throws what opening a table throws, holding nothing then.
 */
export async function viewIterator(
  tables: TableCache,
  view: ReadView,
  fillCache: boolean,
): Promise<InternalIterator> {
  const children: InternalIterator[] = [view.mem.iterator(), ...view.imms.map((m) => m.iterator())];
  const held: TableReader[] = [];
  const release = () => {
    for (const r of held) tables.release(r);
    held.length = 0;
  };
  const options = { fillCache };
  try {
    for (let level = 0; level < view.version.numLevels; level++) {
      const files = view.version.levels[level]!;
      if (files.length === 0) continue;
      const readers: TableReader[] = [];
      for (const f of files) {
        const reader = await tables.acquire(f.number);
        held.push(reader);
        readers.push(reader);
      }
      const sorted = level > 0 ? files.map((_, i) => i) : disjointOrder(files);
      if (sorted === undefined) {
        for (const r of readers) children.push(r.iterator(options));
      } else {
        children.push(
          new LevelIterator(
            sorted.map((i) => files[i]!),
            (i) => readers[sorted[i]!]!.iterator(options),
          ),
        );
      }
    }
  } catch (err) {
    for (const c of children) c.close();
    release();
    throw err;
  }
  return new MergingIterator(children, release);
}

/**
 * Indexes of level-0 files sorted by smallest key if no two of them overlap (then they
 * can be read like a deeper level), else undefined.
 */
function disjointOrder(files: readonly FileMetadata[]): number[] | undefined {
  const order = files.map((_, i) => i);
  order.sort((a, b) => compareBytes(files[a]!.smallestKey, files[b]!.smallestKey));
  for (let k = 1; k < order.length; k++) {
    if (compareBytes(files[order[k - 1]!]!.largestKey, files[order[k]!]!.smallestKey) >= 0) {
      return undefined;
    }
  }
  return order;
}
