/**
 * The interface every benchmarked store implements. One adapter file per store; register
 * it in ./index.ts. Adapters are imported lazily, so a peer whose package is not
 * installed (or whose native binding fails to load) is reported as "missing".
 */

export interface StoreOpenOptions {
  /** Default durability of writes: true = fsync/fdatasync before a put resolves. */
  sync: boolean;
}

export interface PutOptions {
  sync: boolean;
}

export interface BenchStore {
  put(key: Uint8Array, value: Uint8Array, options: PutOptions): Promise<void>;
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  /** Store-specific counters included in the results (optional). */
  stats?(): Record<string, number>;
  close(): Promise<void>;
}

export interface StoreAdapter {
  /** Opens (creating) a store in the empty directory `dir`. */
  open(dir: string, options: StoreOpenOptions): Promise<BenchStore>;
}
