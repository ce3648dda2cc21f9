/**
 * The options of the write calls (`put`, `delete`, `write`) and their check, made on the
 * caller's stack before the write is queued: bad options are INVALID_ARGUMENT and nothing
 * is written.
 */
import { KvError } from "../errors.js";
import { type AbortSignalLike, isAbortSignalLike } from "./commit-queue.js";

export interface WriteOptions {
  /** Durable before the promise resolves (default: the store's `sync` option). */
  sync?: boolean;
  /**
   * Cancels the write if it fires while the write still waits to be committed (e.g. in a
   * write stall): the promise rejects with ABORTED and nothing of the write is stored.
   * Once the write's commit group has formed, it completes regardless.
   */
  signal?: AbortSignalLike;
}

/**
 * Checks `options` (undefined or a WriteOptions) and returns whether the write must be
 * durable: `options.sync` when given, else `storeSync`. Allocates nothing.
 */
export function writeIsSynced(options: WriteOptions | undefined, storeSync: boolean): boolean {
  if (options === undefined) return storeSync;
  if (typeof options !== "object" || options === null) {
    throw new KvError("INVALID_ARGUMENT", "write options must be an object");
  }
  let sync = storeSync;
  if (options.sync !== undefined) {
    if (typeof options.sync !== "boolean") {
      throw new KvError("INVALID_ARGUMENT", "sync must be a boolean");
    }
    sync = options.sync;
  }
  if (options.signal !== undefined && !isAbortSignalLike(options.signal)) {
    throw new KvError("INVALID_ARGUMENT", "signal must be an AbortSignal");
  }
  return sync;
}
