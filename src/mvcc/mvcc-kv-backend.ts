/**
 * kv.v1 over a multi-version store on a single node (KvBackend, src/db/kv-backend.ts): a
 * put, delete or batch is one write transaction (one revision, kv-writes.ts), queued with
 * the etcd API's writes (serial-writes.ts) and answered once visible; gets and scans read
 * the latest versions. Durability is the KvStore's (synced per commit group unless opened
 * unsynced). `signal` is honoured until the write's turn comes.
 */
import { checkCasArguments, checkKey } from "../batch/bytes.js";
import { WriteBatch } from "../batch/write-batch.js";
import type {
  BackendEntry,
  BackendIterator,
  BackendScanOptions,
  BackendWriteOptions,
  CasResult,
  KvBackend,
} from "../db/kv-backend.js";
import type { KvStore } from "../db/kv-store.js";
import type { StoreStats } from "../db/store-stats.js";
import { KvError } from "../errors.js";
import { casIn, putAll } from "./kv-writes.js";
import type { MvccStore } from "./mvcc-store.js";
import type { SerialWrites } from "./serial-writes.js";
import type { MvccWrite } from "./types.js";

/** The latest versions of [gte, lt) as a KvBackend iterator (key, value). */
export function latestIterator(
  mvcc: MvccStore,
  gte: Uint8Array | undefined,
  lt: Uint8Array | undefined,
  limit: number | undefined,
): BackendIterator {
  const scan = mvcc.latestScan({
    ...(gte === undefined ? {} : { gte }),
    ...(lt === undefined ? {} : { lt }),
    ...(limit === undefined ? {} : { limit }),
  });
  return {
    nextBatch: async (n: number): Promise<BackendEntry[]> =>
      (await scan.nextBatch(n)).map((kv) => [kv.key, kv.value] as const),
    close: () => scan.close(),
  };
}

export class MvccKvBackend implements KvBackend {
  constructor(
    private readonly store: KvStore,
    private readonly mvcc: MvccStore,
    private readonly writes: SerialWrites,
  ) {}

  batch(): WriteBatch {
    return new WriteBatch();
  }

  put(key: Uint8Array, value: Uint8Array, options?: BackendWriteOptions): Promise<void> {
    try {
      return this.write(new WriteBatch().put(key, value), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  delete(key: Uint8Array, options?: BackendWriteOptions): Promise<void> {
    try {
      return this.write(new WriteBatch().delete(key), options);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async write(batch: WriteBatch, options?: BackendWriteOptions): Promise<void> {
    if (!(batch instanceof WriteBatch)) {
      throw new KvError("INVALID_ARGUMENT", "write() takes a WriteBatch from batch()");
    }
    if (batch.count === 0) return;
    const rep = batch.encode();
    await this.queued(options, (w) => putAll(w, rep));
  }

  async compareAndSwap(
    key: Uint8Array,
    expected: Uint8Array | undefined,
    next: Uint8Array | undefined,
    options?: BackendWriteOptions,
  ): Promise<CasResult> {
    checkCasArguments(key, expected, next);
    return this.queued(options, (w) => casIn(w, key, expected, next));
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    checkKey(key);
    return (await this.mvcc.latest(key))?.value;
  }

  iterator(options: BackendScanOptions): BackendIterator {
    const { gte, lt, limit } = options;
    if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
      throw new KvError("INVALID_ARGUMENT", "limit must be a non-negative integer");
    }
    if (gte !== undefined && lt !== undefined && Buffer.compare(gte, lt) > 0) {
      throw new KvError("INVALID_ARGUMENT", "gte must not be after lt");
    }
    return latestIterator(this.mvcc, gte, lt, limit);
  }

  stats(): StoreStats {
    return this.store.stats();
  }

  /** Runs `op` in its turn; ABORTED if `signal` fired before the turn came. */
  private queued<T>(
    options: BackendWriteOptions | undefined,
    op: (w: MvccWrite) => Promise<T>,
  ): Promise<T> {
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(aborted());
    return this.writes.run(async (w) => {
      if (signal?.aborted) throw aborted();
      return op(w);
    });
  }
}

function aborted(): KvError {
  return new KvError("ABORTED", "write cancelled before it was committed");
}
