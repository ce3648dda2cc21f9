/**
 * The interface every benchmarked store implements. One adapter file per store; register
 * it in ./index.ts. Adapters are imported lazily, so a peer whose package is not
 * installed (or whose native binding fails to load) is reported as "missing".
 */
import type { BenchCluster } from "../cluster/cluster.js";

export interface StoreOpenOptions {
  /** Default durability of writes: true = fsync/fdatasync before a put resolves. */
  sync: boolean;
  /** Memtable size in bytes (absent: the store's default). */
  writeBufferSize?: number;
  /** Block cache size in bytes (absent: the store's default). */
  blockCacheSize?: number;
}

export interface PutOptions {
  sync: boolean;
}

/** A key-value pair as the read scenarios handle them. */
export type Row = readonly [key: Uint8Array, value: Uint8Array];

/** Up to `limit` entries with key >= `start`, in key order. */
export type ScanFn = (start: Uint8Array, limit: number) => Promise<Row[]>;

export interface BenchStore {
  /** For the cluster stores (./cluster.ts): the running cluster the scenarios drive. */
  cluster?: BenchCluster;
  put(key: Uint8Array, value: Uint8Array, options: PutOptions): Promise<void>;
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  /**
   * A synchronous get, for stores that have one (KV Engine's and classic-level's `getSync`,
   * lmdb's `get`). The get scenarios measure it as a separate row, `<store> (getSync)`.
   */
  getSync?(key: Uint8Array): Uint8Array | undefined;
  /** Puts `keys[i] -> values[i]` for every i as one atomic batch. */
  putBatch(
    keys: readonly Uint8Array[],
    values: readonly Uint8Array[],
    options: PutOptions,
  ): Promise<void>;
  /** Deletes every key of `keys` as one atomic batch (keys absent already are no-ops). */
  deleteBatch(keys: readonly Uint8Array[], options: PutOptions): Promise<void>;
  /** The store's idiomatic range read (collects the rows into an array). */
  scan: ScanFn;
  /**
   * Other ways the store offers to read a range (e.g. classic-level's `nextv`), by name;
   * each is measured as a row `<store> (<name>)`.
   */
  scanVariants?: Readonly<Record<string, ScanFn>>;
  /**
   * Moves everything written so far into table files, then closes and reopens the store
   * (same directory and options), so that reads are served from files by a fresh instance.
   */
  reopenFromTables(): Promise<void>;
  /** Table files per level, for checks and the report (optional). */
  levelFiles?(): number[];
  /**
   * Table files in the store's directory, for a store that cannot tell their levels (a
   * server in another process); used when `levelFiles` is absent (optional).
   */
  tableFiles?(): number;
  /**
   * Bytes written to storage by the process(es) doing the store's I/O, when that is not
   * this process (a server), counted as `processWriteBytes` does (optional: default, this
   * process's).
   */
  ioWriteBytes?(): number | undefined;
  /** Store-specific counters included in the results (optional). */
  stats?(): Record<string, number>;
  /**
   * Waits until the store's background work (flushes, compactions) is idle, at most
   * `maxMs`; resolves to whether it got idle (optional: stores without it are not waited on).
   */
  waitIdle?(maxMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface StoreAdapter {
  /** Opens (creating) a store in the empty directory `dir`. */
  open(dir: string, options: StoreOpenOptions): Promise<BenchStore>;
}
