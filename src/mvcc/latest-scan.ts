/**
 * The fast path of a kv.v1 scan: the live versions of a key range in key order, read
 * from the latest entries over the visible state (one seek, then a scan of what it
 * returns).
 */
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { keyOfLatest, LATEST_PREFIX, latestKey, prefixEnd } from "./layout.js";
import { decodeLatest } from "./record.js";
import type { KeyValue } from "./types.js";

export interface LatestScanOptions {
  /** The smallest key (inclusive); default: the first key. */
  readonly gte?: Uint8Array;
  /** Only keys below this one; default: to the last key. */
  readonly lt?: Uint8Array;
  /** At most this many (0 or absent: no limit). */
  readonly limit?: number;
}

/**
 * A scan over one consistent state, as KvStore's iterator: `nextBatch(n)` resolves to up
 * to n KeyValues (each holding its key) in key order, fewer only at the end, after which
 * the scan is closed; `close` releases it, idempotently.
 */
export interface LatestScan {
  nextBatch(n: number): Promise<KeyValue[]>;
  close(): void;
}

/** Starts the scan now (the state read is the store's current one). */
export function latestScan(store: KvStore, options: LatestScanOptions = {}): LatestScan {
  const { gte, lt, limit } = options;
  if (gte !== undefined && !(gte instanceof Uint8Array)) {
    throw new KvError("INVALID_ARGUMENT", "gte must be a Uint8Array");
  }
  if (lt !== undefined && !(lt instanceof Uint8Array)) {
    throw new KvError("INVALID_ARGUMENT", "lt must be a Uint8Array");
  }
  const it = store.iterator({
    gte: gte === undefined ? Uint8Array.of(LATEST_PREFIX) : latestKey(gte),
    lt: lt === undefined ? prefixEnd(LATEST_PREFIX) : latestKey(lt),
    ...(limit !== undefined && limit > 0 ? { limit } : {}),
  });
  return {
    nextBatch: async (n: number) => {
      const rows = await it.nextBatch(n);
      return rows.map(([k, v]) => decodeLatest(keyOfLatest(k), v));
    },
    close: () => it.close(),
  };
}
