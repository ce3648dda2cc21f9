/**
 * One write transaction (types.ts, MvccWrite): reads see the store, then the overlay of
 * earlier ended writes not yet visible, then this write's own changes; `end` hands the
 * changes to the store (mvcc-store.ts) as one batch in the layout of docs/format/mvcc.md.
 */
import { checkKey } from "../batch/bytes.js";
import type { WriteBatch } from "../batch/write-batch.js";
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { putFixed64 } from "../util/coding.js";
import { changesKey, historyKey, latestKey, REVISION_KEY } from "./layout.js";
import { keyId, type Overlay, type PendingChange } from "./overlay.js";
import { inRange, queryLimit, readRange } from "./range-read.js";
import { checkLease, decodeLatest, deletionRecord, encodeLatestAndRecord } from "./record.js";
import { checkRevision } from "./revision-checks.js";
import type { KeyValue, MvccWrite, RangeOptions, RangeResult } from "./types.js";

/** What a write transaction needs of its store. */
export interface WriteHost {
  readonly store: KvStore;
  readonly overlay: Overlay;
  readonly compactRevision: number;
  /** Writes are held (Mvcc.hold): the revision counter is written once per batch, not here. */
  readonly holding: boolean;
  /** The batch the write's `end` adds its operations to (batch-pipeline.ts). */
  batch(): WriteBatch;
  /**
   * Commits what `end` added to `batch()`; `changes` join the overlay until it is visible.
   * `failed`: what `extra` threw (the batch holds part of the write: the store fails).
   */
  submit(changes: readonly PendingChange[], revision: number, failed?: unknown): Promise<void>;
}

/** Adds the entries (latest, history, changes) of `key`'s change at `rev` to `b`. */
export function encodeChange(
  b: WriteBatch,
  key: Uint8Array,
  rev: number,
  kv: KeyValue | undefined,
): void {
  if (kv === undefined) {
    b.delete(latestKey(key));
    b.put(historyKey(key, rev), deletionRecord());
    b.put(changesKey(rev, key), deletionRecord());
    return;
  }
  const { latest, recordStart } = encodeLatestAndRecord(kv);
  const record = latest.subarray(recordStart);
  b.put(latestKey(key), latest);
  b.put(historyKey(key, rev), record);
  b.put(changesKey(rev, key), record);
}

/** The revision counter's value (fixed64 little-endian). */
export function encodeRevision(rev: number): Uint8Array {
  const out = new Uint8Array(8);
  putFixed64(out, 0, rev);
  return out;
}

export class WriteTxn implements MvccWrite {
  /** This write's changes, the last per key. */
  private readonly own = new Map<string, PendingChange>();
  private ended = false;

  constructor(
    private readonly host: WriteHost,
    readonly beginRevision: number,
  ) {}

  get revision(): number {
    return this.own.size > 0 ? this.beginRevision + 1 : this.beginRevision;
  }

  get compactRevision(): number {
    return this.host.compactRevision;
  }

  range(key: Uint8Array, end: Uint8Array, options: RangeOptions = {}): Promise<RangeResult> {
    try {
      this.checkOpen();
      const rev = checkRevision(options.revision, this.revision, this.host.compactRevision);
      const pending = this.pendingAt(rev, (k) => inRange(k, key, end));
      const q = { key, end, rev, latest: rev === this.revision, pending, ...queryLimit(options) };
      return readRange(this.host.store, undefined, q).then((r) => ({ ...r, revision: rev }));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  put(key: Uint8Array, value: Uint8Array, lease: bigint): Promise<KeyValue | undefined> {
    try {
      this.checkOpen();
      checkKey(key);
      if (!(value instanceof Uint8Array)) {
        throw new KvError("INVALID_ARGUMENT", "value must be a Uint8Array");
      }
      checkLease(lease);
      const id = keyId(key);
      const rev = this.beginRevision + 1;
      const record = (prev: KeyValue | undefined): KeyValue | undefined => {
        const kv: KeyValue = {
          key,
          value,
          lease,
          modRevision: rev,
          createRevision: prev === undefined ? rev : prev.createRevision,
          version: prev === undefined ? 1 : prev.version + 1,
        };
        this.own.set(id, { id, key, revision: rev, kv });
        return prev;
      };
      const known = this.own.get(id) ?? this.host.overlay.latest(id);
      if (known !== undefined) return Promise.resolve(record(known.kv));
      return this.host.store
        .get(latestKey(key))
        .then((v) => record(v === undefined ? undefined : decodeLatest(key, v)));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  deleteRange(key: Uint8Array, end: Uint8Array): Promise<KeyValue[]> {
    try {
      this.checkOpen();
      checkKey(key);
      const rev = this.beginRevision + 1;
      const pending = this.pendingAt(Number.MAX_SAFE_INTEGER, (k) => inRange(k, key, end));
      const q = { key, end, rev, latest: true, pending, limit: 0, countOnly: false };
      return readRange(this.host.store, undefined, q).then(({ kvs }) => {
        for (const kv of kvs) {
          const id = keyId(kv.key);
          this.own.set(id, { id, key: kv.key, revision: rev, kv: undefined });
        }
        return kvs;
      });
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Ends the write (types.ts): its batch holds, per changed key, the latest, history and
   * changes entries, then the revision counter (unless held: then once per batch, by the
   * store), then `extra`'s operations. `extra` must
   * not throw: if it does, the store fails (the write's batch is shared with others).
   */
  end(extra?: (batch: WriteBatch) => void): Promise<void> {
    try {
      this.checkOpen();
      this.ended = true;
      const b = this.host.batch();
      const changes = [...this.own.values()];
      for (const c of changes) encodeChange(b, c.key, c.revision, c.kv);
      const rev = this.revision;
      if (changes.length > 0 && !this.host.holding) b.put(REVISION_KEY, encodeRevision(rev));
      try {
        extra?.(b);
      } catch (err) {
        return this.host.submit(changes, rev, err);
      }
      return this.host.submit(changes, rev);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Changes not in the store (own, then the overlay's): per key, the newest at or below `rev`. */
  private pendingAt(rev: number, accept: (key: Uint8Array) => boolean): Map<string, PendingChange> {
    const out = new Map<string, PendingChange>();
    if (rev > this.beginRevision) {
      for (const [id, c] of this.own) if (accept(c.key)) out.set(id, c);
    }
    this.host.overlay.collect(rev, accept, out);
    return out;
  }

  private checkOpen(): void {
    if (this.ended) throw new Error("MvccWrite: the write has ended");
  }
}
