/**
 * KvEngineLevel: an abstract-level database (https://github.com/Level/abstract-level, v3)
 * on top of the engine, so that code written for `level` / `classic-level` (encodings,
 * sublevels, hooks, events, level-read-stream, ...) runs on KV Engine.
 *
 * abstract-level implements the public API (argument checks, encodings, deferred open,
 * sublevels, hooks, events); this class implements its private API (`_open`, `_get`,
 * `_batch`, `_iterator`, ...) with one KvStore:
 *
 * - keys are stored behind a prefix (see key-codec.ts), so the empty key works;
 * - reads without an explicit snapshot read the state at the call (the engine's `get` and
 *   `iterator` capture their view synchronously): `supports.implicitSnapshots`;
 * - `db.snapshot()` is an engine Snapshot: `supports.explicitSnapshots`;
 * - array and chained batches are one engine WriteBatch each: atomic;
 * - `clear()` deletes a range in chunks, each chunk atomic; see `_clear`.
 *
 * Compatibility notes, including what the conformance suite checks and what it cannot:
 * docs/compatibility.md.
 */
import {
  type AbstractBatchOperation,
  type AbstractBatchOptions,
  type AbstractChainedBatch,
  type AbstractDatabaseOptions,
  type AbstractDelOptions,
  AbstractLevel,
  type AbstractPutOptions,
} from "abstract-level";
import {
  isKvError,
  KvError,
  type KvStore,
  OPEN_OPTION_NAMES,
  type OpenOptions,
  open,
  type Snapshot,
  WriteBatch,
} from "../index.js";
import { KvEngineLevelChainedBatch } from "./chained-batch.js";
import { engine, toLevelError } from "./errors.js";
import { KvEngineLevelIterator, type PrivateIteratorOptions } from "./iterator.js";
import {
  type Encoded,
  type Format,
  fromEngine,
  KeyCodec,
  type RangeOptions,
  rangeToEngine,
  valueToEngine,
} from "./key-codec.js";
import { KvEngineSnapshot, pinOf, SnapshotPin } from "./snapshot.js";
import { writeOptions } from "./write-options.js";

/** Options of `new KvEngineLevel(location, options)`. */
export type KvEngineLevelOptions<K, V> = AbstractDatabaseOptions<K, V> &
  OpenOptions & {
    /**
     * Bytes stored before every key in the engine (default: one 0x00 byte). The prefix lets
     * the empty key (valid in abstract-level, not in the engine) be stored, and keeps this
     * database's keys apart from engine keys without it. An empty prefix ("") stores keys
     * as they are, sharing the keyspace of the engine's own API, server and CLI; then the
     * empty key is rejected (LEVEL_INVALID_KEY). Use the same prefix every time a
     * directory is opened.
     */
    keyPrefix?: string | Uint8Array;
  };

/** Write options the adapter adds to abstract-level's: the engine's durability switch. */
export interface KvEngineWriteOptions {
  /** Durable before the promise resolves (default: the store's `sync` option, true). */
  sync?: boolean;
}

/** The default key prefix: one 0x00 byte. */
export const DEFAULT_KEY_PREFIX: Uint8Array = Uint8Array.of(0);

/** Keys deleted per engine write batch by `clear()`. */
export const CLEAR_BATCH_KEYS = 1000;

type EngineFormat = string | Buffer | Uint8Array;

interface PrivateReadOptions {
  keyEncoding: Format;
  valueEncoding: Format;
  snapshot?: unknown;
}

interface PrivateWriteOptions {
  sync?: unknown;
}

interface PrivateBatchOperation {
  type: "put" | "del";
  key: Encoded;
  value?: Encoded;
}

interface PrivateClearOptions extends RangeOptions {
  reverse: boolean;
  limit: number;
  snapshot?: unknown;
  sync?: unknown;
}

const MANIFEST = {
  implicitSnapshots: true,
  explicitSnapshots: true,
  has: true,
  getSync: true,
  permanence: true,
  seek: true,
  createIfMissing: true,
  errorIfExists: true,
  encodings: { buffer: true, view: true, utf8: true },
  signals: { iterators: true },
};

export class KvEngineLevel<K = string, V = string> extends AbstractLevel<EngineFormat, K, V> {
  readonly #location: string;
  readonly #codec: KeyCodec;
  #store: KvStore | undefined;

  /**
   * A database in the directory `location`. It opens itself (abstract-level's deferred
   * open: calls made meanwhile wait); engine options (`sync`, `writeBufferSize`, `fs`, ...)
   * are passed to `open(location, options)` of the engine.
   */
  constructor(location: string, options?: KvEngineLevelOptions<K, V>) {
    if (typeof location !== "string" || location === "") {
      throw new TypeError("The first argument 'location' must be a non-empty string");
    }
    const { keyPrefix, ...rest } = options ?? {};
    const codec = new KeyCodec(keyPrefix ?? DEFAULT_KEY_PREFIX);
    super(MANIFEST, rest);
    this.#location = location;
    this.#codec = codec;
  }

  /** The directory passed to the constructor. */
  get location(): string {
    return this.#location;
  }

  /** The key prefix in use (see `keyPrefix`). */
  get keyPrefix(): Uint8Array {
    return Uint8Array.from(this.#codec.prefix);
  }

  // ---- write methods: abstract-level's, with overloads that take the `sync` option ----
  // (abstract-level passes options it does not know on to the private API)

  override put(key: K, value: V): Promise<void>;
  override put<K2 = K, V2 = V>(
    key: K2,
    value: V2,
    options: AbstractPutOptions<K2, V2> & KvEngineWriteOptions,
  ): Promise<void>;
  override put(...args: unknown[]): Promise<void> {
    return inherited.put.apply(this, args) as Promise<void>;
  }

  override del(key: K): Promise<void>;
  override del<K2 = K>(
    key: K2,
    options: AbstractDelOptions<K2> & KvEngineWriteOptions,
  ): Promise<void>;
  override del(...args: unknown[]): Promise<void> {
    return inherited.del.apply(this, args) as Promise<void>;
  }

  override batch(operations: Array<AbstractBatchOperation<typeof this, K, V>>): Promise<void>;
  override batch<K2 = K, V2 = V>(
    operations: Array<AbstractBatchOperation<typeof this, K2, V2>>,
    options: AbstractBatchOptions<K2, V2> & KvEngineWriteOptions,
  ): Promise<void>;
  override batch(): AbstractChainedBatch<typeof this, K, V>;
  override batch(...args: unknown[]): Promise<void> | AbstractChainedBatch<typeof this, K, V> {
    // Applied with the same arguments: batch() tells the chained form by arguments.length.
    return inherited.batch.apply(this, args) as
      | Promise<void>
      | AbstractChainedBatch<typeof this, K, V>;
  }

  // ---- abstract-level private API (called by AbstractLevel; not for direct use) ----

  /** @internal */
  async _open(options: OpenOptions & { passive?: unknown }): Promise<void> {
    // abstract-level hands its own options on too (and any a caller gave it); the engine
    // refuses names it does not know, so only its own are passed.
    const engineOptions: OpenOptions = {};
    for (const name of OPEN_OPTION_NAMES) {
      if (options[name] !== undefined) Object.assign(engineOptions, { [name]: options[name] });
    }
    try {
      this.#store = await open(this.#location, engineOptions);
    } catch (err) {
      if (
        engineOptions.errorIfExists === true &&
        isKvError(err, "INVALID_ARGUMENT") &&
        err.message.includes("(errorIfExists)")
      ) {
        // The engine has no code of its own for this case; callers (and the conformance
        // suite) look for "exists" in the message.
        throw new KvError("INVALID_ARGUMENT", `${this.#location} already exists (errorIfExists)`, {
          cause: err,
        });
      }
      throw toLevelError(err);
    }
  }

  /** @internal */
  async _close(): Promise<void> {
    const store = this.#store;
    this.#store = undefined;
    await engine(store?.close() ?? Promise.resolve());
  }

  /** @internal */
  async _get(key: Encoded, options: PrivateReadOptions): Promise<Encoded | undefined> {
    const store = this.#openStore();
    const value = await engine(store.get(this.#codec.encode(key), readOptions(options, store)));
    return value === undefined ? undefined : fromEngine(value as Buffer, options.valueEncoding);
  }

  /** @internal the engine's synchronous get (db.getSync) */
  _getSync(key: Encoded, options: PrivateReadOptions): Encoded | undefined {
    const store = this.#openStore();
    let value: Uint8Array | undefined;
    try {
      value = store.getSync(this.#codec.encode(key), readOptions(options, store));
    } catch (err) {
      throw toLevelError(err);
    }
    return value === undefined ? undefined : fromEngine(value as Buffer, options.valueEncoding);
  }

  /** @internal every key is read from the same state (the gets start in one tick) */
  async _getMany(keys: Encoded[], options: PrivateReadOptions): Promise<(Encoded | undefined)[]> {
    const store = this.#openStore();
    const read = readOptions(options, store);
    const mapped = keys.map((k) => this.#codec.encode(k));
    const values = await engine(Promise.all(mapped.map((k) => store.get(k, read))));
    return values.map((v) =>
      v === undefined ? undefined : fromEngine(v as Buffer, options.valueEncoding),
    );
  }

  /** @internal */
  async _has(key: Encoded, options: PrivateReadOptions): Promise<boolean> {
    const store = this.#openStore();
    const value = await engine(store.get(this.#codec.encode(key), readOptions(options, store)));
    return value !== undefined;
  }

  /** @internal */
  async _hasMany(keys: Encoded[], options: PrivateReadOptions): Promise<boolean[]> {
    const store = this.#openStore();
    const read = readOptions(options, store);
    const mapped = keys.map((k) => this.#codec.encode(k));
    const values = await engine(Promise.all(mapped.map((k) => store.get(k, read))));
    return values.map((v) => v !== undefined);
  }

  /** @internal */
  async _put(key: Encoded, value: Encoded, options: PrivateWriteOptions): Promise<void> {
    const store = this.#openStore();
    await engine(store.put(this.#codec.encode(key), valueToEngine(value), writeOptions(options)));
  }

  /** @internal */
  async _del(key: Encoded, options: PrivateWriteOptions): Promise<void> {
    const store = this.#openStore();
    await engine(store.delete(this.#codec.encode(key), writeOptions(options)));
  }

  /** @internal one engine WriteBatch: atomic */
  async _batch(operations: PrivateBatchOperation[], options: PrivateWriteOptions): Promise<void> {
    const store = this.#openStore();
    const batch = new WriteBatch();
    for (const op of operations) {
      if (op.type === "put") {
        batch.put(this.#codec.encode(op.key), valueToEngine(op.value ?? ""));
      } else {
        batch.delete(this.#codec.encode(op.key));
      }
    }
    await engine(store.write(batch, writeOptions(options)));
  }

  /** @internal */
  _chainedBatch(): KvEngineLevelChainedBatch {
    return new KvEngineLevelChainedBatch(this, this.#openStore(), this.#codec);
  }

  /** @internal */
  _iterator(options: PrivateIteratorOptions): KvEngineLevelIterator {
    const store = this.#openStore();
    // An explicit snapshot that is closed (or closing) leaves the iterator without a pin:
    // abstract-level then fails every read with LEVEL_SNAPSHOT_NOT_OPEN.
    const explicit = pinOf(options.snapshot, store);
    const pin =
      explicit === undefined ? new SnapshotPin(store, store.snapshot()) : explicit.acquire();
    return new KvEngineLevelIterator(this, options, store, this.#codec, pin);
  }

  /** @internal */
  _snapshot(options: { owner: object }): KvEngineSnapshot {
    const store = this.#openStore();
    return new KvEngineSnapshot(options, new SnapshotPin(store, store.snapshot()));
  }

  /**
   * @internal Deletes the keys of the range as seen when clear() was called (or in
   * `options.snapshot`), CLEAR_BATCH_KEYS per engine write batch. Each batch is atomic,
   * the whole is not: readers may see the range partly cleared, and a crash may leave it
   * so (a prefix of the range in iteration order gone). Batches before the last are
   * written with `sync: false`; the last one with the store's default (or `sync`), which
   * makes the earlier ones durable too. Keys written after the call are kept, unless the
   * key was also present when clear() was called (its newer value is deleted too, as in
   * LevelDB-based implementations).
   */
  async _clear(options: PrivateClearOptions): Promise<void> {
    const store = this.#openStore();
    const explicit = pinOf(options.snapshot, store);
    const iteratorOptions = rangeToEngine(this.#codec.range(options), {
      reverse: options.reverse,
      limit: options.limit,
      keysOnly: true,
      fillCache: false,
    });
    if (explicit !== undefined) iteratorOptions.snapshot = explicit.snapshot;
    // Created now, synchronously: the keys to delete are those of this moment.
    const it = store.iterator(iteratorOptions);
    try {
      const batch = new WriteBatch();
      const last = writeOptions(options);
      const notLast = { sync: false };
      let rows = await engine(it.nextBatch(CLEAR_BATCH_KEYS));
      while (rows.length > 0) {
        const next =
          rows.length < CLEAR_BATCH_KEYS ? [] : await engine(it.nextBatch(CLEAR_BATCH_KEYS));
        batch.clear();
        for (const [key] of rows) batch.delete(key);
        await engine(store.write(batch, next.length === 0 ? last : notLast));
        rows = next;
      }
    } finally {
      it.close();
    }
  }

  #openStore(): KvStore {
    const store = this.#store;
    if (store === undefined) {
      throw toLevelError(new KvError("CLOSED", `store ${this.#location} is not open`));
    }
    return store;
  }
}

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** AbstractLevel's own write methods, which the overloads above call. */
const inherited = AbstractLevel.prototype as unknown as Record<"put" | "del" | "batch", Method>;

function readOptions(options: PrivateReadOptions, store: KvStore): { snapshot?: Snapshot } {
  const pin = pinOf(options.snapshot, store);
  return pin === undefined ? {} : { snapshot: pin.snapshot };
}
