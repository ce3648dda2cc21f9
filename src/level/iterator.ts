/**
 * KvEngineLevelIterator: abstract-level's iterator over an engine KvIterator.
 *
 * - Implicit snapshot: the iterator pins an engine snapshot when it is created
 *   (synchronously), so it reads the state of that moment however long it lives.
 * - seek(): the engine iterator cannot reposition, so seek closes it and opens a new one
 *   on the same pinned snapshot, with the bound on the seek side moved to the target
 *   (never outside the iterator's own range).
 * - limit: counted by abstract-level (it stops calling _next/_nextv once reached), which
 *   also keeps the count right across seeks.
 * - signal: checked after every engine read; an aborted read rejects with LEVEL_ABORTED.
 */
import { AbstractIterator } from "abstract-level";
import type { IteratorOptions, KvIterator, KvStore } from "../index.js";
import { abortError, engine, KvEngineLevelError } from "./errors.js";
import {
  type Bound,
  type Encoded,
  type EngineRange,
  type Format,
  fromEngine,
  type KeyCodec,
  type RangeOptions,
  rangeToEngine,
} from "./key-codec.js";
import type { SnapshotPin } from "./snapshot.js";

/** The options abstract-level hands to `db._iterator()` (range already encoded). */
export interface PrivateIteratorOptions extends RangeOptions {
  reverse: boolean;
  limit: number;
  keys: boolean;
  values: boolean;
  keyEncoding: Format;
  valueEncoding: Format;
  signal?: AbortSignal | null;
  snapshot?: unknown;
  fillCache?: unknown;
}

type LevelEntry = [key: Encoded | undefined, value: Encoded | undefined];

/** Entries fetched from the engine per step of all() (then the abort signal is checked). */
const ALL_CHUNK = 1000;

/** abstract-level's AbstractIterator as its implementation defines it. */
const IteratorBase = AbstractIterator as unknown as new (
  db: object,
  options: PrivateIteratorOptions,
) => object;

export class KvEngineLevelIterator extends IteratorBase {
  // ES private fields: AbstractIterator's public names are left alone.
  readonly #store: KvStore;
  readonly #codec: KeyCodec;
  readonly #pin: SnapshotPin | undefined;
  /** Undefined when created on a snapshot already closed (reads fail, see snapshotGone). */
  #inner: KvIterator | undefined;
  /** The iterator's own range (seek targets are clamped to it). */
  readonly #range: EngineRange;
  readonly #keys: boolean;
  readonly #values: boolean;
  readonly #keyFormat: Format;
  readonly #valueFormat: Format;
  readonly #reverse: boolean;
  readonly #fillCache: boolean;
  readonly #signal: AbortSignal | null;

  /** @internal created by KvEngineLevel#_iterator(); takes ownership of `pin` */
  constructor(
    db: object,
    options: PrivateIteratorOptions,
    store: KvStore,
    codec: KeyCodec,
    pin: SnapshotPin | undefined,
  ) {
    super(db, options);
    this.#store = store;
    this.#codec = codec;
    this.#pin = pin;
    this.#keys = options.keys;
    this.#values = options.values;
    this.#keyFormat = options.keyEncoding;
    this.#valueFormat = options.valueEncoding;
    this.#reverse = options.reverse;
    this.#fillCache = options.fillCache !== false;
    this.#signal = options.signal ?? null;
    try {
      this.#range = codec.range(options);
      this.#inner = this.#openInner(this.#range);
    } catch (err) {
      pin?.release();
      throw err;
    }
  }

  /** @internal */
  async _next(): Promise<LevelEntry | undefined> {
    const r = await engine(this.#open().next());
    this.#checkSignal();
    return r.done ? undefined : this.#entry(r.value[0], r.value[1]);
  }

  /** @internal */
  async _nextv(size: number): Promise<LevelEntry[]> {
    const rows = await engine(this.#open().nextBatch(size));
    this.#checkSignal();
    const out: LevelEntry[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = this.#entry(rows[i]![0], rows[i]![1]);
    return out;
  }

  /** @internal at most `limit - count` entries (abstract-level counts them afterwards) */
  async _all(): Promise<LevelEntry[]> {
    const self = this as unknown as { count: number; limit: number };
    let left = self.limit - self.count;
    const out: LevelEntry[] = [];
    const inner = this.#open();
    while (left > 0) {
      const rows = await engine(inner.nextBatch(Math.min(ALL_CHUNK, left)));
      this.#checkSignal();
      for (const [k, v] of rows) out.push(this.#entry(k, v));
      if (rows.length === 0) break;
      left -= rows.length;
    }
    return out;
  }

  /** @internal `target` is an encoded key (with any sublevel prefix) */
  _seek(target: unknown): void {
    const key = this.#codec.bound(target);
    const { lower, upper } = this.#range;
    const next: EngineRange = this.#reverse
      ? { lower, upper: tighterUpper(upper, key) }
      : { lower: tighterLower(lower, key), upper };
    this.#inner?.close();
    this.#inner = this.#openInner(next);
  }

  /** @internal */
  async _close(): Promise<void> {
    this.#inner?.close();
    this.#inner = undefined;
    this.#pin?.release();
  }

  #open(): KvIterator {
    if (this.#inner === undefined) throw snapshotGone();
    return this.#inner;
  }

  #openInner(range: EngineRange): KvIterator | undefined {
    if (this.#pin === undefined) return undefined;
    const options: IteratorOptions = {
      snapshot: this.#pin.snapshot,
      reverse: this.#reverse,
      keysOnly: !this.#values,
      fillCache: this.#fillCache,
    };
    return this.#store.iterator(rangeToEngine(range, options));
  }

  #entry(key: Buffer, value: Buffer): LevelEntry {
    return [
      this.#keys ? this.#codec.decode(key, this.#keyFormat) : undefined,
      this.#values ? fromEngine(value, this.#valueFormat) : undefined,
    ];
  }

  #checkSignal(): void {
    if (this.#signal?.aborted) throw abortError();
  }
}

/** Reads of an iterator whose snapshot was closed before it was created (abstract-level
 * normally refuses them first). */
function snapshotGone(): KvEngineLevelError {
  return new KvEngineLevelError(
    "Snapshot is not open: cannot use snapshot after close()",
    "LEVEL_SNAPSHOT_NOT_OPEN",
  );
}

/** The lower bound after a forward seek to `key`: `key` inclusive, unless `lower` is higher. */
function tighterLower(lower: Bound | undefined, key: Uint8Array): Bound {
  if (lower === undefined) return { key, inclusive: true };
  const c = Buffer.compare(key, lower.key);
  return c > 0 ? { key, inclusive: true } : lower;
}

/** The upper bound after a reverse seek to `key`: `key` inclusive, unless `upper` is lower. */
function tighterUpper(upper: Bound | undefined, key: Uint8Array): Bound {
  if (upper === undefined) return { key, inclusive: true };
  const c = Buffer.compare(key, upper.key);
  return c < 0 ? { key, inclusive: true } : upper;
}
