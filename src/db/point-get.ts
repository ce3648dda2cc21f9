/**
 * The get path: the value of one key in a read view at a sequence number. The memtables
 * are checked newest first (the active one, then the immutable ones), then the candidate
 * tables in read order (level 0 newest first, then one table per deeper level); the first
 * entry for the key decides. See docs/design.md, "Read path".
 *
 * Synchronous as long as every candidate table is open (the usual case: the store opens
 * every live table at open, up to maxOpenFiles); `fromView` allocates no closure.
 */
import { KIND_PUT } from "../key/internal-key.js";
import { bloomHash } from "../sstable/bloom.js";
import type { TableCache } from "../sstable/table-cache.js";
import type { FileMetadata } from "../version/file-metadata.js";
import type { ReadView } from "./read-view.js";

/** Marker: a candidate table is not open yet (the get goes async to open it). */
export const MISSING_TABLE: unique symbol = Symbol("missing table");

const EMPTY_KEY = new Uint8Array(0);

export class PointGet {
  private readonly probe: TableProbe;

  constructor(private readonly tables: TableCache) {
    this.probe = new TableProbe(tables);
  }

  /**
   * The value (a copy), undefined when absent or deleted, or MISSING_TABLE when a
   * candidate table is not open and `openTables` is false (then finish with
   * `openingTables`). With `openTables`, a table not open is opened on this thread.
   */
  fromView(
    view: ReadView,
    key: Uint8Array,
    seq: number,
    openTables = false,
  ): Uint8Array | undefined | typeof MISSING_TABLE {
    let e = view.mem.count > 0 ? view.mem.get(key, seq) : undefined;
    if (e === undefined) {
      for (const imm of view.imms) {
        e = imm.get(key, seq);
        if (e !== undefined) break;
      }
    }
    if (e !== undefined) return e.kind === KIND_PUT ? Buffer.from(e.value) : undefined;
    const probe = this.probe;
    probe.key = key;
    probe.seq = seq;
    probe.hash = -1;
    probe.result = undefined;
    probe.openTables = openTables;
    view.version.forEachCandidate(key, probe.visit, seq);
    const result = probe.result;
    probe.key = EMPTY_KEY;
    probe.result = undefined;
    return result;
  }

  /**
   * The table part of a get whose candidate tables are not all open: walks the candidates
   * in read order, holding each reader while it is used (opening one may evict another).
   * REQUIRES: the memtables of `view` hold no entry for `key` (fromView checked them).
   */
  async openingTables(
    view: ReadView,
    key: Uint8Array,
    seq: number,
  ): Promise<Uint8Array | undefined> {
    view.ref();
    try {
      const candidates: FileMetadata[] = [];
      view.version.forEachCandidate(
        key,
        (file) => {
          candidates.push(file);
          return false;
        },
        seq,
      );
      const hash = bloomHash(key);
      for (const file of candidates) {
        const reader = await this.tables.acquire(file.number);
        try {
          const r = reader.getCopy(key, seq, hash);
          if (r !== undefined) return r.kind === KIND_PUT ? r.value : undefined;
        } finally {
          this.tables.release(reader);
        }
      }
      return undefined;
    } finally {
      view.unref();
    }
  }
}

/**
 * The table part of `fromView`: the candidate visitor and its state live in one object
 * per store, so a get allocates no closure. Not reentrant: a get runs to completion before
 * the next starts.
 */
class TableProbe {
  key: Uint8Array = EMPTY_KEY;
  seq = 0;
  /** bloomHash(key), computed at the first candidate (-1 before). */
  hash = -1;
  result: Uint8Array | undefined | typeof MISSING_TABLE = undefined;
  /** Open a table that is not open yet, synchronously (getSync), instead of giving up. */
  openTables = false;
  /** forEachCandidate's callback: true (stop) once a table decided or one is not open. */
  readonly visit: (file: FileMetadata) => boolean;

  constructor(tables: TableCache) {
    this.visit = (file) => {
      const reader = this.openTables ? tables.openSync(file.number) : tables.get(file.number);
      if (reader === undefined) {
        this.result = MISSING_TABLE;
        return true;
      }
      if (this.hash < 0) this.hash = bloomHash(this.key);
      const r = reader.getCopy(this.key, this.seq, this.hash);
      if (r === undefined) return false;
      this.result = r.kind === KIND_PUT ? r.value : undefined;
      return true;
    };
  }
}
