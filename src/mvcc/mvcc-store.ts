/**
 * MvccStore: the multi-version store (types.ts, Mvcc) over a KvStore its caller opened and
 * owns, in the layout of docs/format/mvcc.md. The store is shared: others keep their own
 * keys outside the MVCC key space and write them in the same batches through `extra`.
 *
 * - Writes are pipelined: each ended write's batch goes to the store at once (group
 *   commit orders them); until it is visible its changes sit in an overlay (overlay.ts)
 *   that later writes read. A store failure fails that write and every later one.
 * - Reads (`read`) pin a store snapshot; the view's revision is the revision counter
 *   stored in that snapshot, so it covers every write whose `end` resolved and possibly
 *   later ones already visible.
 * - `compact` is logical at once and physical in the background (physical-compaction.ts),
 *   resumed by `open` after a restart.
 * - Keys are non-empty (INVALID_ARGUMENT otherwise), as etcd's API requires.
 */
import type { WriteBatch } from "../batch/write-batch.js";
import type { KvStore } from "../db/kv-store.js";
import type { Snapshot } from "../db/snapshot.js";
import type { WriteOptions } from "../db/write-options.js";
import { KvError } from "../errors.js";
import { getFixed64 } from "../util/coding.js";
import { BatchPipeline } from "./batch-pipeline.js";
import { changesOf, type MvccEvent } from "./changes.js";
import { type LatestScan, type LatestScanOptions, latestScan } from "./latest-scan.js";
import {
  COMPACT_CURSOR_KEY,
  COMPACT_FINISHED_KEY,
  COMPACT_SCHEDULED_KEY,
  latestKey,
  REVISION_KEY,
} from "./layout.js";
import { Overlay, type PendingChange } from "./overlay.js";
import { PageCounts } from "./page-counts.js";
import {
  type CompactionCursor,
  type CompactorOptions,
  decodeCursor,
  PhysicalCompactor,
} from "./physical-compaction.js";
import { queryLimit, readRange } from "./range-read.js";
import { decodeLatest } from "./record.js";
import { checkRevision, compactedError, futureError } from "./revision-checks.js";
import type { Compaction, KeyValue, Mvcc, MvccReadView, MvccWrite } from "./types.js";
import { encodeRevision, type WriteHost, WriteTxn } from "./write-txn.js";

export interface MvccStoreOptions {
  /** Sync each write (default: the store's default). */
  readonly sync?: boolean;
  /** Changes entries per physical compaction chunk (default 512). */
  readonly compactionChunk?: number;
  /** Told after each physical compaction chunk (tests). */
  readonly onCompactionChunk?: () => void | Promise<void>;
}

function fixed64(v: Uint8Array | undefined, what: string): number {
  if (v === undefined) return 0;
  if (v.length !== 8) throw new KvError("CORRUPTION", `mvcc: ${what} has ${v.length} bytes, not 8`);
  return getFixed64(v, 0);
}

/** The revision counter's value; a store without one is new: at revision 1, as etcd starts. */
function storedRevision(v: Uint8Array | undefined): number {
  return Math.max(1, fixed64(v, "revision"));
}

export class MvccStore implements Mvcc, WriteHost {
  private lastRevision: number;
  private compacted: number;
  /** @internal The changes of ended writes not yet visible (write-txn.ts, WriteHost). */
  readonly overlay = new Overlay();
  /** The counts of paged ranges' next pages (page-counts.ts). */
  private readonly pageCounts = new PageCounts();
  private writeOpen = false;
  private closed = false;
  private readonly writeOptions: WriteOptions;
  private readonly compactor: PhysicalCompactor;
  private pipeline: BatchPipeline;
  /** The physical compaction resumed by `open`, if any. */
  readonly resumed: Promise<void> | undefined;
  private readonly visibleListeners = new Set<(revision: number) => void>();

  private constructor(
    readonly store: KvStore,
    state: { revision: number; scheduled: number; finished: number; cursor?: CompactionCursor },
    options: MvccStoreOptions,
  ) {
    this.lastRevision = state.revision;
    this.compacted = state.scheduled;
    this.writeOptions = options.sync === undefined ? {} : { sync: options.sync };
    this.pipeline = new BatchPipeline(store, this.writeOptions);
    const compactorOptions: CompactorOptions = {
      write: this.writeOptions,
      ...(options.compactionChunk === undefined ? {} : { chunk: options.compactionChunk }),
      ...(options.onCompactionChunk === undefined ? {} : { onChunk: options.onCompactionChunk }),
    };
    this.compactor = new PhysicalCompactor(store, state.finished, state.cursor, compactorOptions);
    let resumed: Promise<void> | undefined;
    if (state.cursor !== undefined) resumed = this.compactor.schedule(state.cursor.target);
    if (state.scheduled > state.finished) resumed = this.compactor.schedule(state.scheduled);
    resumed?.catch(() => {});
    this.resumed = resumed;
  }

  get revision(): number {
    return this.lastRevision;
  }

  get compactRevision(): number {
    return this.compacted;
  }

  /**
   * Reads the MVCC state of `store` (revision, compaction) and resumes an unfinished
   * physical compaction. Throws CORRUPTION for malformed state. REQUIRES: no pre-MVCC
   * keys (legacy-upgrade.ts: hasLegacyKeys, upgradeLegacyKeys); `store` stays open
   * until `close` resolved.
   */
  static async open(store: KvStore, options: MvccStoreOptions = {}): Promise<MvccStore> {
    const revision = storedRevision(await store.get(REVISION_KEY));
    const scheduled = fixed64(await store.get(COMPACT_SCHEDULED_KEY), "compaction revision");
    const finished = fixed64(await store.get(COMPACT_FINISHED_KEY), "finished compaction");
    const c = await store.get(COMPACT_CURSOR_KEY);
    const cursor = c === undefined ? undefined : decodeCursor(c);
    return new MvccStore(
      store,
      { revision, scheduled, finished, ...(cursor === undefined ? {} : { cursor }) },
      options,
    );
  }

  read(): MvccReadView {
    this.checkOpen();
    const { snapshot, revision } = this.pin();
    const compactRevision = this.compactRevision;
    return {
      revision,
      compactRevision,
      range: (key, end, options = {}) => {
        try {
          const rev = checkRevision(options.revision, revision, this.compactRevision);
          const limits = queryLimit(options);
          const paged = limits.limit > 0 && !limits.countOnly && end.length > 0;
          const known = paged ? this.pageCounts.lookup(key, end, rev) : undefined;
          const q = {
            key,
            end,
            rev,
            latest: rev === revision,
            ...limits,
            countKnown: known !== undefined,
          };
          return readRange(this.store, snapshot, q).then((r) => {
            const count = known ?? r.count;
            const n = r.kvs.length;
            if (paged && n === limits.limit) {
              // After the last key, and after the one before it (etcd's Range reads one
              // key beyond its limit to tell `more`).
              for (const i of [n - 1, n - 2]) {
                const kv = r.kvs[i];
                if (kv !== undefined) this.pageCounts.remember(kv.key, end, rev, count - i - 1);
              }
            }
            return { kvs: r.kvs, count, revision: rev };
          });
        } catch (err) {
          return Promise.reject(err);
        }
      },
      release: () => snapshot.release(),
    };
  }

  write(): MvccWrite {
    this.checkOpen();
    if (this.pipeline.failure !== undefined) throw this.pipeline.failure;
    if (this.writeOpen) throw new Error("MvccStore: a write is already open");
    this.writeOpen = true;
    return new WriteTxn(this, this.revision);
  }

  compact(revision: number, extra?: (batch: WriteBatch) => void): Compaction {
    this.checkOpen();
    if (this.writeOpen) throw new Error("MvccStore: compact while a write is open");
    if (this.pipeline.failure !== undefined) throw this.pipeline.failure;
    if (!Number.isSafeInteger(revision)) {
      throw new KvError("INVALID_ARGUMENT", "compaction revision must be an integer");
    }
    if (revision <= this.compacted) throw compactedError();
    if (revision > this.lastRevision) throw futureError();
    this.compacted = revision;
    const b = this.pipeline.batch();
    b.put(COMPACT_SCHEDULED_KEY, encodeRevision(revision));
    try {
      extra?.(b);
    } catch (err) {
      this.pipeline.fail(err);
      throw err;
    }
    const done = this.pipeline.commit(() => {}).then(() => this.compactor.schedule(revision));
    done.catch(() => {});
    return { done };
  }

  hold(maxBytes: number, trailer?: (batch: WriteBatch) => void): void {
    this.checkOpen();
    this.pipeline.hold(maxBytes, (b) => {
      b.put(REVISION_KEY, encodeRevision(this.lastRevision));
      trailer?.(b);
    });
  }

  release(): void {
    this.pipeline.release();
  }

  /** @internal Between hold and release: writes leave the revision counter to the trailer. */
  get holding(): boolean {
    return this.pipeline.held;
  }

  /** The live version of `key` in the visible state, or undefined: one store get. */
  async latest(key: Uint8Array): Promise<KeyValue | undefined> {
    this.checkOpen();
    const v = await this.store.get(latestKey(key));
    return v === undefined ? undefined : decodeLatest(key, v);
  }

  /** The live versions of a key range in the visible state (latest-scan.ts). */
  latestScan(options: LatestScanOptions = {}): LatestScan {
    this.checkOpen();
    return latestScan(this.store, options);
  }

  /**
   * The changes with revision in [from, to] (to: default and at most the visible
   * revision when the first event is asked for) in revision order, a revision's in key
   * order (changes.ts). Throws COMPACTED when `from` is below the compacted revision.
   */
  changes(from: number, to = Number.MAX_SAFE_INTEGER): AsyncGenerator<MvccEvent, void, undefined> {
    this.checkOpen();
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to)) {
      throw new KvError("INVALID_ARGUMENT", "changes: revisions must be integers");
    }
    if (from < this.compacted) throw compactedError();
    return changesOf(this.store, () => this.pin(), from, to);
  }

  /**
   * Waits for the writes submitted and stops the physical compaction after its current
   * chunk (an unfinished one resumes at the next open). Does not close the KvStore.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pipeline.idle();
    await this.compactor.stop();
  }

  /** A snapshot of the visible state and the revision it holds. */
  private pin(): { snapshot: Snapshot; revision: number } {
    const snapshot = this.store.snapshot();
    try {
      return {
        snapshot,
        revision: storedRevision(this.store.getSync(REVISION_KEY, { snapshot })),
      };
    } catch (err) {
      snapshot.release();
      throw err;
    }
  }

  /** True iff a write failed in the store: every later one fails until `recover`. */
  get failed(): boolean {
    return this.pipeline.failure !== undefined;
  }

  /**
   * After a failed write: once every write committed so far settled, and iff the KvStore
   * accepts writes again (it recovers by itself from a full disk; a failed commit group
   * wrote nothing), forgets the failed writes and resumes from the state the store holds
   * (its revision counter and compaction revision). Resolves true iff writes are accepted
   * now. REQUIRES: no write open.
   */
  async recover(): Promise<boolean> {
    this.checkOpen();
    if (this.pipeline.failure === undefined) return true;
    if (this.writeOpen) throw new Error("MvccStore: recover while a write is open");
    await this.pipeline.idle();
    if (this.store.stats().backgroundError !== undefined) return false;
    this.lastRevision = storedRevision(await this.store.get(REVISION_KEY));
    this.compacted = fixed64(await this.store.get(COMPACT_SCHEDULED_KEY), "compaction revision");
    this.overlay.clear();
    this.pageCounts.clear();
    this.pipeline = new BatchPipeline(this.store, this.writeOptions);
    return true;
  }

  /** @internal WriteTxn's end (write-txn.ts, WriteHost). */
  batch(): WriteBatch {
    return this.pipeline.batch();
  }

  /** @internal WriteTxn's end (write-txn.ts, WriteHost). */
  submit(changes: readonly PendingChange[], revision: number, failed?: unknown): Promise<void> {
    this.writeOpen = false;
    if (failed !== undefined) this.pipeline.fail(failed);
    if (this.pipeline.failure !== undefined) return Promise.reject(this.pipeline.failure);
    this.lastRevision = revision;
    this.overlay.add(changes);
    return this.pipeline.commit(() => {
      this.overlay.remove(changes);
      if (changes.length > 0) this.tellVisible(revision);
    });
  }

  /**
   * Calls `listener(revision)` each time a write that changed keys became visible (in
   * revision order, synchronously, before that write's `end` resolves). It must be quick;
   * what it throws is ignored. Returns the unsubscribe function.
   */
  onVisible(listener: (revision: number) => void): () => void {
    this.visibleListeners.add(listener);
    return () => this.visibleListeners.delete(listener);
  }

  private tellVisible(revision: number): void {
    for (const l of this.visibleListeners) {
      try {
        l(revision);
      } catch {
        // A listener must not fail a write.
      }
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new KvError("CLOSED", "mvcc store is closed");
  }
}
