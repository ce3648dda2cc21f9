/**
 * KvBackend: what a store offers the gRPC server (src/server) and the metrics
 * (src/observability): the seam between them and the store behind it. The local store
 * (KvStore) implements it; a replicated store implements the same calls and is served by
 * the same server. src/server and src/observability import this file, never a store
 * (test/lint/layers.test.ts).
 *
 * Contract, for every implementation:
 * - Errors are KvErrors (src/errors.ts) with the codes of docs/errors.md, which the server
 *   maps to gRPC statuses. Bad input is INVALID_ARGUMENT and changes nothing.
 * - A write (put, delete, write) resolves once it is committed, with the backend's
 *   durability, and is visible to every read started after that. If its `signal` fires
 *   while the write still waits to be committed, it rejects with ABORTED and nothing of it
 *   is stored, then or later; once committed it completes regardless.
 * - `get` and `iterator` see every write that resolved before they were called.
 * - `iterator` reads one consistent state, the one when it was created: later writes do
 *   not change what it yields. It throws (synchronously) for bad options. `nextBatch(n)`
 *   resolves to up to n entries in key order, fewer only at the end, after which the
 *   iterator is closed; `close` releases what it holds, at any time, idempotently.
 * - Writes are accepted iff `stats().backgroundError` is undefined: once it is set, every
 *   write rejects until the backend is reopened.
 * - Events: the backend reports StoreEvents to the listener it was opened with (for
 *   KvStore, OpenOptions.onEvent), synchronously and ignoring what the listener throws;
 *   the metrics and the event log are such listeners.
 *
 * - `compareAndSwap` is atomic against every other write: it compares and writes at one
 *   point of the backend's order of writes (for KvStore, in its commit path; for a
 *   replicated store, when the entry is applied).
 * - Reads: `serializable: true` (in BackendReadOptions and BackendScanOptions) allows a
 *   replicated store to answer from its local state, which may be stale; without it a
 *   read is linearizable. A local store is always current and ignores it. A replicated
 *   store's linearizable read may wait (for a majority's confirmation); `signal` ends the
 *   wait (UNAVAILABLE).
 */
import type { WriteBatch } from "../batch/write-batch.js";
import type { AbortSignalLike } from "./commit-queue.js";
import type { StoreStats } from "./store-stats.js";

export type { AbortSignalLike } from "./commit-queue.js";
export type { StoreEvent, StoreEventListener } from "./events.js";
export type { StoreStats } from "./store-stats.js";

/** Options of a backend write. */
export interface BackendWriteOptions {
  /** Cancels the write while it still waits to be committed (see the module comment). */
  signal?: AbortSignalLike;
  /**
   * The write's place in a client session (backends with `openSession` only): sent again
   * with the same session and sequence number, it answers with its first result and
   * changes nothing.
   */
  session?: ClientSessionCall;
}

/** A write's place in a client session (kv.v1 SessionCall). */
export interface ClientSessionCall {
  /** The session's ID, from `openSession`. */
  readonly id: number;
  /** This write's sequence number in the session (from 1). */
  readonly seq: number;
  /** The lowest sequence number whose answer the client has not yet received. */
  readonly ackedBelow: number;
}

/** An open client session. */
export interface ClientSession {
  readonly id: number;
  /** A session idle for longer than this (cluster time) expires. */
  readonly ttlMs: number;
}

/** Options of a backend read. */
export interface BackendReadOptions {
  /** Allow a possibly stale local read (see the module comment). Default false. */
  serializable?: boolean;
  /** Ends a read that still waits (replicated stores). */
  signal?: AbortSignalLike;
}

/** The range and size of a scan. */
export interface BackendScanOptions extends BackendReadOptions {
  /** The smallest key yielded (inclusive); default: from the first key. */
  gte?: Uint8Array;
  /** Only keys below this one (exclusive); default: to the last key. */
  lt?: Uint8Array;
  /** At most this many entries; default: no limit. */
  limit?: number;
}

/** What a compare-and-swap did. */
export interface CasResult {
  /** True iff the comparison held and the new value (or the delete) was written. */
  readonly applied: boolean;
  /**
   * The key's value once the operation took effect: the new value iff applied (undefined
   * for a delete), else the value that failed the comparison (undefined: absent).
   */
  readonly current: Uint8Array | undefined;
}

/** A key and its value, as a scan yields them. */
export type BackendEntry = readonly [key: Uint8Array, value: Uint8Array];

/** A scan over one consistent state (see the module comment). */
export interface BackendIterator {
  nextBatch(n: number): Promise<BackendEntry[]>;
  close(): void;
}

/** See the module comment. */
export interface KvBackend {
  /** A new, empty batch for `write`. */
  batch(): WriteBatch;
  put(key: Uint8Array, value: Uint8Array, options?: BackendWriteOptions): Promise<void>;
  delete(key: Uint8Array, options?: BackendWriteOptions): Promise<void>;
  /** Applies every operation of `batch` atomically. */
  write(batch: WriteBatch, options?: BackendWriteOptions): Promise<void>;
  /**
   * Iff the value of `key` is `expected` (undefined: the key is absent), stores `next`
   * (undefined: deletes the key); atomic (see the module comment). A write like the others
   * for `signal`, durability and errors.
   */
  compareAndSwap(
    key: Uint8Array,
    expected: Uint8Array | undefined,
    next: Uint8Array | undefined,
    options?: BackendWriteOptions,
  ): Promise<CasResult>;
  /** The newest value of `key`, or undefined when it is absent or deleted. */
  get(key: Uint8Array, options?: BackendReadOptions): Promise<Uint8Array | undefined>;
  iterator(options: BackendScanOptions): BackendIterator;
  /** Counters and state; `backgroundError` says whether writes are accepted. */
  stats(): StoreStats;
  /**
   * Opens a client session (see BackendWriteOptions.session). Only backends that keep
   * sessions (a replicated store) have it.
   */
  openSession?(options?: BackendWriteOptions): Promise<ClientSession>;
}
