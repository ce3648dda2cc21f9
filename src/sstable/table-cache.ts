/**
 * TableCache: the open TableReaders of a data directory, at most `maxOpenFiles` resident,
 * least recently used evicted first. All readers share one BlockCache.
 *
 * Use:
 * - `get(n)`: the resident reader of table n, or undefined; synchronous (the get path).
 * - `open(n)`: the reader, opening the file when it is not resident (FileSystem opens are
 *   asynchronous); concurrent opens of one table share one open.
 * - `acquire(n)` / `release(reader)` (or `ref` / `unref`): hold a reader across awaits or
 *   for an iterator's life. `pinnedIterator(reader)` holds it until the iterator is closed.
 * - `evict(n)`: the table's file is being deleted: forget the reader and its cached blocks.
 *
 * Lifetime: an evicted reader is closed only once nobody holds it (refs 0), and not before
 * the next turn of the event loop (setImmediate), so the reader `open()` resolves to stays
 * usable in the synchronous continuation of the `await`, even if other opens completing
 * meanwhile evict it. Anything kept longer must be held with `ref`/`acquire`.
 */
import { ioError, KvError } from "../errors.js";
import type { InternalIterator } from "../key/internal-iterator.js";
import { LruCache } from "../util/lru-cache.js";
import { type FileSystem, joinPath, type ReadableFile } from "../vfs/file-system.js";
import type { BlockCache } from "./block-cache.js";
import { tableFileName } from "./table-file-name.js";
import { type TableIteratorOptions, TableReader } from "./table-reader.js";

export interface TableCacheOptions {
  /** Most readers (open files) kept resident; at least 1. */
  maxOpenFiles: number;
  /** Block cache shared by every reader (none: every data block access reads the file). */
  blockCache?: BlockCache | undefined;
  /** Check data block checksums on reads (default true). */
  verifyChecksums?: boolean | undefined;
}

export interface TableCacheStats {
  /** `get`/`open`/`acquire` calls that found the reader resident. */
  hits: number;
  /** Files opened. */
  opens: number;
  /** Readers evicted for room or by `evict`. */
  evictions: number;
  /** Readers closed. */
  closes: number;
}

interface Entry {
  readonly fileNumber: number;
  readonly reader: TableReader;
  refs: number;
  /** In the LRU (counts against maxOpenFiles); false once evicted. */
  resident: boolean;
  closing: boolean;
}

/**
 * The error for a table that cannot be opened. The version lists every table it reads, and
 * a file is deleted only once no version lists it: a missing table is damage to the store
 * (CORRUPTION), not an I/O failure.
 */
function openError(err: unknown, path: string): KvError {
  if ((err as NodeJS.ErrnoException | undefined)?.code === "ENOENT") {
    return new KvError("CORRUPTION", `table file ${path} is missing (the manifest lists it)`, {
      file: path,
      cause: err,
    });
  }
  return ioError("open table", err, path);
}

export class TableCache {
  private readonly lru: LruCache<number, Entry>;
  /** Every reader not yet closed: resident ones and evicted ones still held. */
  private readonly live = new Map<TableReader, Entry>();
  private readonly opening = new Map<number, Promise<TableReader>>();
  /** Evicted, unheld entries waiting for the deferred close. */
  private readonly toClose = new Set<Entry>();
  private closeScheduled = false;
  private readonly closing = new Set<Promise<void>>();
  private closeError: unknown;
  private closed = false;
  readonly stats: TableCacheStats = { hits: 0, opens: 0, evictions: 0, closes: 0 };
  /** Filter counters of the readers already closed (see `filterStats`). */
  private readonly retiredFilter = { checked: 0, useful: 0 };

  constructor(
    private readonly fs: FileSystem,
    private readonly dir: string,
    private readonly options: TableCacheOptions,
  ) {
    const max = options.maxOpenFiles;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new KvError("INVALID_ARGUMENT", `maxOpenFiles must be an integer >= 1, got ${max}`);
    }
    this.lru = new LruCache<number, Entry>(
      max,
      () => 1,
      (_n, entry) => this.onEvict(entry),
    );
  }

  /** Readers resident in the cache (at most maxOpenFiles). */
  get residentCount(): number {
    return this.lru.count;
  }

  /** Readers whose file is open: resident ones plus evicted ones still held. */
  get openCount(): number {
    return this.live.size;
  }

  /** The resident reader of table n (now most recently used), or undefined. */
  get(fileNumber: number): TableReader | undefined {
    const entry = this.lru.get(fileNumber);
    if (entry === undefined) return undefined;
    this.stats.hits++;
    return entry.reader;
  }

  /** The reader of table n, opened (and made resident) if needed. See the class comment. */
  open(fileNumber: number): Promise<TableReader> {
    if (this.closed) return Promise.reject(this.closedError());
    const hit = this.get(fileNumber);
    if (hit !== undefined) return Promise.resolve(hit);
    let pending = this.opening.get(fileNumber);
    if (pending === undefined) {
      pending = this.load(fileNumber).finally(() => this.opening.delete(fileNumber));
      this.opening.set(fileNumber, pending);
    }
    return pending;
  }

  /**
   * `open`, synchronously: the resident reader, or the table opened now on this thread
   * (for synchronous gets). An asynchronous open of the same table in flight keeps
   * going; whichever reader becomes resident first is the one both end up using.
   */
  openSync(fileNumber: number): TableReader {
    if (this.closed) throw this.closedError();
    const hit = this.get(fileNumber);
    if (hit !== undefined) return hit;
    // A loop of synchronous gets never lets the scheduled close run: close the evicted
    // readers nobody holds before opening another file, or the descriptors pile up
    // (EMFILE) once the tables outnumber maxOpenFiles. The synchronous get path uses a
    // reader only until its next table, so none of them is in use here.
    if (this.toClose.size > 0) this.closeUnheld();
    const path = joinPath(this.dir, tableFileName(fileNumber));
    let file: ReadableFile;
    try {
      file = this.fs.openReadableSync(path);
    } catch (err) {
      throw openError(err, path);
    }
    let reader: TableReader;
    try {
      reader = this.readerOf(file, fileNumber);
    } catch (err) {
      void file.close().catch(() => {});
      throw err;
    }
    return this.makeResident(fileNumber, reader);
  }

  /** open + ref: the reader stays open until `release`. */
  async acquire(fileNumber: number): Promise<TableReader> {
    for (;;) {
      const reader = await this.open(fileNumber);
      const entry = this.live.get(reader);
      if (entry !== undefined) {
        entry.refs++;
        return reader;
      }
      // Closed between the open and this continuation (not expected): open again.
    }
  }

  /** Undoes one `acquire`. */
  release(reader: TableReader): void {
    this.unref(reader);
  }

  /** Holds a reader this cache returned: it stays open until the matching `unref`. */
  ref(reader: TableReader): void {
    const entry = this.live.get(reader);
    if (entry === undefined) throw new Error(`${reader.file.path}: reader is closed or not cached`);
    entry.refs++;
  }

  unref(reader: TableReader): void {
    const entry = this.live.get(reader);
    if (entry === undefined || entry.refs === 0) {
      throw new Error(`${reader.file.path}: unref without a matching ref`);
    }
    entry.refs--;
    if (entry.refs === 0 && !entry.resident) this.scheduleClose(entry);
  }

  /** An iterator over the reader that holds it (ref) until the iterator is closed. */
  pinnedIterator(reader: TableReader, options: TableIteratorOptions = {}): InternalIterator {
    this.ref(reader);
    return reader.iterator(options, () => this.unref(reader));
  }

  /**
   * Forgets table n because its file is being deleted: the resident reader leaves the
   * cache (closed once unheld) and its blocks leave the block cache. An open in progress
   * is not affected.
   */
  evict(fileNumber: number): void {
    const entry = this.lru.peek(fileNumber);
    if (entry === undefined) return;
    entry.reader.evictCachedBlocks();
    this.lru.delete(fileNumber);
  }

  /**
   * Resolves once every evicted reader nobody holds is closed (so the space of a deleted
   * table file is free). Readers still held close when released. Never rejects.
   */
  async evictedClosed(): Promise<void> {
    if (this.closeScheduled) await new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.allSettled([...this.closing]);
  }

  /**
   * Evicts every reader and waits for the unheld ones to close (held ones close when
   * released). Later opens fail with CLOSED. Rejects with the first close error, if any.
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.opening.values()]);
    this.lru.clear();
    this.closeUnheld();
    await Promise.all([...this.closing]);
    if (this.closeError !== undefined) throw this.closeError;
  }

  private async load(fileNumber: number): Promise<TableReader> {
    const path = joinPath(this.dir, tableFileName(fileNumber));
    let file: ReadableFile;
    try {
      file = await this.fs.openReadable(path);
    } catch (err) {
      throw openError(err, path);
    }
    let reader: TableReader;
    try {
      reader = this.readerOf(file, fileNumber);
    } catch (err) {
      await file.close().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await reader.close().catch(() => {});
      throw this.closedError();
    }
    return this.makeResident(fileNumber, reader);
  }

  private readerOf(file: ReadableFile, fileNumber: number): TableReader {
    const reader = TableReader.open(file, fileNumber, {
      blockCache: this.options.blockCache,
      verifyChecksums: this.options.verifyChecksums,
    });
    this.stats.opens++;
    return reader;
  }

  /**
   * Puts a freshly opened reader in the cache, unless a reader of the same table became
   * resident meanwhile (a synchronous open overtook an asynchronous one): then that one
   * is returned and the fresh one closed.
   */
  private makeResident(fileNumber: number, reader: TableReader): TableReader {
    const existing = this.lru.get(fileNumber);
    if (existing !== undefined) {
      void reader.close().catch(() => {});
      return existing.reader;
    }
    const entry: Entry = { fileNumber, reader, refs: 0, resident: true, closing: false };
    this.live.set(reader, entry);
    this.lru.set(fileNumber, entry);
    return reader;
  }

  private onEvict(entry: Entry): void {
    entry.resident = false;
    this.stats.evictions++;
    if (entry.refs === 0) this.scheduleClose(entry);
  }

  private scheduleClose(entry: Entry): void {
    this.toClose.add(entry);
    if (this.closeScheduled) return;
    this.closeScheduled = true;
    setImmediate(() => this.closeUnheld());
  }

  /** Closes the evicted entries nobody took a ref on since they were scheduled. */
  private closeUnheld(): void {
    this.closeScheduled = false;
    for (const entry of this.toClose) {
      if (entry.refs > 0 || entry.resident || entry.closing) continue;
      entry.closing = true;
      this.live.delete(entry.reader);
      this.retiredFilter.checked += entry.reader.stats.filterChecked;
      this.retiredFilter.useful += entry.reader.stats.filterUseful;
      this.stats.closes++;
      const p: Promise<void> = entry.reader
        .close()
        .catch((err: unknown) => {
          this.closeError ??= err;
        })
        .finally(() => this.closing.delete(p));
      this.closing.add(p);
    }
    this.toClose.clear();
  }

  /**
   * Bloom filter counters over every reader this cache opened: lookups that consulted a
   * filter, and those the filter answered "absent" (no block read).
   */
  filterStats(): { checked: number; useful: number } {
    let { checked, useful } = this.retiredFilter;
    for (const reader of this.live.keys()) {
      checked += reader.stats.filterChecked;
      useful += reader.stats.filterUseful;
    }
    return { checked, useful };
  }

  private closedError(): KvError {
    return new KvError("CLOSED", "table cache is closed");
  }
}
