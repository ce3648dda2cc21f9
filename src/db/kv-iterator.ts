/**
 * KvIterator: the async iterator `db.iterator()` returns. It reads one consistent view of
 * the store (the one current when it was created, or its snapshot's), yields
 * `[key, value]` pairs (fresh Buffers), and releases the view on `close()`, on `break`
 * out of `for await`, on reaching the end, or on an error.
 *
 * The engine's read path is synchronous once the tables it needs are open, so only the
 * first `next()` may wait (to open tables); `nextBatch` and `all` avoid a promise per row.
 */
import { type BytesLike, checkKey, toBytes } from "../batch/bytes.js";
import { KvError } from "../errors.js";
import type { DbIterator } from "./db-iterator.js";

export type Entry = [key: Buffer, value: Buffer];

export class KvIterator implements AsyncIterableIterator<Entry> {
  private inner: DbIterator | undefined;
  private opening: Promise<DbIterator> | undefined;
  private closed = false;
  /** A seek made before the first `next`, applied once the sources are open. */
  private pendingSeek: Uint8Array | undefined;

  /** `open` builds the DbIterator (opening tables as needed); it runs on first use. */
  constructor(
    private readonly open: () => Promise<DbIterator>,
    private readonly release: () => void,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next entry, or `done` at the end (after which the iterator is closed). */
  async next(): Promise<IteratorResult<Entry, undefined>> {
    const it = this.inner ?? (await this.prepare());
    if (it === undefined) return { done: true, value: undefined };
    try {
      if (!it.step()) {
        this.close();
        return { done: true, value: undefined };
      }
      return { done: false, value: [it.key, it.value] };
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** Up to `n` entries (fewer only at the end); one promise for the whole batch. */
  async nextBatch(n: number): Promise<Entry[]> {
    const it = this.inner ?? (await this.prepare());
    const out: Entry[] = [];
    if (it === undefined) return out;
    try {
      while (out.length < n && it.step()) out.push([it.key, it.value]);
      if (out.length < n) this.close();
      return out;
    } catch (err) {
      this.close();
      throw err;
    }
  }

  /** Every remaining entry, then closes. */
  async all(): Promise<Entry[]> {
    return this.nextBatch(Number.POSITIVE_INFINITY);
  }

  /** Called by `break` / `return` in `for await`: closes the iterator. */
  async return(): Promise<IteratorResult<Entry, undefined>> {
    this.close();
    return { done: true, value: undefined };
  }

  /**
   * Repositions the iterator on the same view: the next entry is the first key >= target
   * (reverse: <= target) within the iterator's bounds, whatever came before; `limit` keeps
   * counting entries returned. Throws CLOSED once the iterator is closed (it closes itself
   * at its end), INVALID_ARGUMENT for a bad key.
   */
  seek(target: BytesLike): void {
    checkKey(target);
    if (this.closed) throw new KvError("CLOSED", "seek on a closed iterator");
    const bytes = Uint8Array.from(toBytes(target));
    if (this.inner !== undefined) this.inner.seek(bytes);
    else this.pendingSeek = bytes;
  }

  /** Releases the view (and its pinned files). Idempotent; later `next()` returns done. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.inner?.close();
    this.inner = undefined;
    this.release();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private async prepare(): Promise<DbIterator | undefined> {
    if (this.closed) return undefined;
    this.opening ??= this.open();
    let it: DbIterator;
    try {
      it = await this.opening;
    } catch (err) {
      this.close();
      throw err;
    }
    if (this.closed) {
      it.close();
      return undefined;
    }
    if (this.inner === undefined) {
      this.inner = it;
      const target = this.pendingSeek;
      this.pendingSeek = undefined;
      if (target !== undefined) it.seek(target);
    }
    return this.inner;
  }
}
