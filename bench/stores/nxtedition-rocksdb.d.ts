/**
 * Minimal types for the parts of `@nxtedition/rocksdb` (12.x, which ships none) that the
 * benchmark adapter uses: an abstract-level store with `view` encodings.
 */
declare module "@nxtedition/rocksdb" {
  export interface RocksLevelOptions {
    keyEncoding?: "view";
    valueEncoding?: "view";
    createIfMissing?: boolean;
    /** Memory for memtables; each write buffer is a quarter of it (default 256 MiB). */
    memtableMemoryBudget?: number;
    /** Block cache bytes (default 8 MiB). */
    cacheSize?: number;
  }
  export interface ChainedBatch<K, V> {
    put(key: K, value: V): this;
    del(key: K): this;
    /** Only a batch passes `sync` on to RocksDB (WriteOptions.sync). */
    write(options?: { sync?: boolean }): Promise<void>;
  }
  export interface Iterator<K, V> {
    all(): Promise<Array<[K, V]>>;
  }
  export class RocksLevel<K, V> {
    constructor(location: string, options?: RocksLevelOptions);
    open(): Promise<void>;
    close(): Promise<void>;
    /** Ignores `sync` (see bench/stores/rocksdb.ts). */
    put(key: K, value: V): Promise<void>;
    get(key: K): Promise<V | undefined>;
    batch(): ChainedBatch<K, V>;
    iterator(options: { gte?: K; limit?: number }): Iterator<K, V>;
    getProperty(name: string): string;
  }
}
