/**
 * KvEngineLevelChainedBatch: `db.batch()` without arguments. Each put/del is encoded into
 * one engine WriteBatch right away; write() commits it with one engine write: one log
 * record, all or nothing, also after a crash.
 */
import { AbstractChainedBatch } from "abstract-level";
import { type KvStore, WriteBatch } from "../index.js";
import { engine } from "./errors.js";
import { type Encoded, type KeyCodec, valueToEngine } from "./key-codec.js";
import { writeOptions } from "./write-options.js";

/** abstract-level's AbstractChainedBatch as its implementation defines it. */
const BatchBase = AbstractChainedBatch as unknown as new (db: object) => object;

export class KvEngineLevelChainedBatch extends BatchBase {
  readonly #batch = new WriteBatch();
  readonly #store: KvStore;
  readonly #codec: KeyCodec;

  /** @internal created by KvEngineLevel#_chainedBatch() */
  constructor(db: object, store: KvStore, codec: KeyCodec) {
    super(db);
    this.#store = store;
    this.#codec = codec;
  }

  /** @internal */
  _put(key: Encoded, value: Encoded): void {
    this.#batch.put(this.#codec.encode(key), valueToEngine(value));
  }

  /** @internal */
  _del(key: Encoded): void {
    this.#batch.delete(this.#codec.encode(key));
  }

  /** @internal */
  _clear(): void {
    this.#batch.clear();
  }

  /** @internal */
  async _write(options: { sync?: unknown }): Promise<void> {
    await engine(this.#store.write(this.#batch, writeOptions(options)));
  }

  /** @internal */
  async _close(): Promise<void> {
    this.#batch.clear();
  }
}
