/**
 * Reading what `kv-engine serve` stored, after the server stopped: a data directory (or a
 * backup of one) with revisions, opened with its multi-version store; keys and values as
 * kv.v1 sees them (the latest versions).
 */
import { open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";

export interface ServedStore {
  /** The latest value of `key` (UTF-8), or undefined. */
  get(key: string): Promise<string | undefined>;
  /** How many live keys the store holds. */
  count(): Promise<number>;
  /** The store's revision. */
  readonly revision: number;
  close(): Promise<void>;
}

export async function openServedStore(dir: string): Promise<ServedStore> {
  const db = await open(dir, { createIfMissing: false });
  const mvcc = await MvccStore.open(db).catch(async (err: unknown) => {
    await db.close();
    throw err;
  });
  return {
    get: async (key) => {
      const kv = await mvcc.latest(Buffer.from(key));
      return kv === undefined ? undefined : Buffer.from(kv.value).toString();
    },
    count: async () => {
      const scan = mvcc.latestScan();
      let n = 0;
      for (;;) {
        const rows = await scan.nextBatch(1000);
        n += rows.length;
        if (rows.length < 1000) break;
      }
      scan.close();
      return n;
    },
    get revision() {
      return mvcc.revision;
    },
    close: async () => {
      await mvcc.close();
      await db.close();
    },
  };
}

/** The latest value of `key` in the store with revisions in `dir`. */
export async function servedValue(dir: string, key: string): Promise<string | undefined> {
  const s = await openServedStore(dir);
  try {
    return await s.get(key);
  } finally {
    await s.close();
  }
}
