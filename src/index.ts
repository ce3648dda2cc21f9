/** Public API of KV Engine. */
export type { BytesLike } from "./batch/bytes.js";
export { WriteBatch } from "./batch/write-batch.js";
export type { CheckpointOptions, CheckpointResult } from "./db/checkpoint.js";
export type { AbortSignalLike, CommitStats } from "./db/commit-queue.js";
export type {
  StallCause,
  StallState,
  StoreEvent,
  StoreEventListener,
} from "./db/events.js";
export type { CasResult } from "./db/kv-backend.js";
export type { Entry } from "./db/kv-iterator.js";
export { KvIterator } from "./db/kv-iterator.js";
export { KvStore, open } from "./db/kv-store.js";
export { OPEN_OPTION_NAMES, type OpenOptions } from "./db/options.js";
export type { IteratorOptions, ReadOptions } from "./db/read-options.js";
export type { DroppedRegion, RecoveryReport } from "./db/recovery.js";
export { Snapshot } from "./db/snapshot.js";
export { formatStats } from "./db/stats-format.js";
export type { StoreStats } from "./db/store-stats.js";
export type { WriteOptions } from "./db/write-options.js";
export { type ErrorCode, isKvError, KvError } from "./errors.js";
export { FaultInjectingFileSystem } from "./vfs/fault-injecting-file-system.js";
export type { FileLock, FileSystem, ReadableFile, WritableFile } from "./vfs/file-system.js";
export { MemoryFileSystem } from "./vfs/memory-file-system.js";
export { RealFileSystem } from "./vfs/real-file-system.js";
export type { WalRecoveryMode } from "./wal/log-reader.js";
