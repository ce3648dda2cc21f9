/**
 * AdminBackend: what a store offers the admin service (src/server/admin-service.ts), the
 * seam beside KvBackend (kv-backend.ts) for operations on the store itself rather than
 * its data. The local store (KvStore) implements it; a replicated store offers it for the
 * node it runs on ("in a cluster it acts on the node it is sent to").
 *
 * Contract, for every implementation:
 * - Errors are KvErrors (src/errors.ts) with the codes of docs/errors.md.
 * - `checkpoint(dir)`: `dir` must not exist; resolves once a copy that opens as a store,
 *   holding every write acknowledged before the call, is durable there.
 * - `compactRange(start, end, options)`: bounds inclusive, either omitted; resolves once
 *   the range is compacted and the obsolete files are deleted (those an open iterator or
 *   snapshot reads excepted). `onCompaction` is called, synchronously and ignoring what it
 *   throws, after each compaction that finishes between the call and its end (background
 *   ones too: `manual` tells them apart).
 * - `flush()`: resolves once the memtables are tables.
 * - `stats()`: as KvBackend's.
 */
import type { CheckpointResult } from "./checkpoint.js";
import type { StoreEvent } from "./events.js";
import type { StoreStats } from "./store-stats.js";

export type { CheckpointResult } from "./checkpoint.js";

/** A compaction that finished, as events report it. */
export type CompactionEvent = Extract<StoreEvent, { type: "compaction" }>;

export interface AdminCompactOptions {
  /** Called after each compaction that finishes while compactRange runs. */
  onCompaction?: (event: CompactionEvent) => void;
}

/** See the module comment. */
export interface AdminBackend {
  checkpoint(targetDir: string): Promise<CheckpointResult>;
  compactRange(
    start: Uint8Array | undefined,
    end: Uint8Array | undefined,
    options?: AdminCompactOptions,
  ): Promise<void>;
  flush(): Promise<void>;
  stats(): StoreStats;
}
