/**
 * ReadView: what one read sees: the active memtable, the immutable memtables waiting to
 * be flushed (newest first), and a version (the table files per level). The store swaps
 * its current view whenever one of them changes; a get, an iterator or a snapshot keeps
 * the view it started with, so a flush or compaction finishing meanwhile changes nothing
 * it reads (RocksDB calls this a SuperVersion).
 *
 * Views pin their version with a reference; the version's files are deleted only when no
 * version that lists them is referenced. The memtables are kept alive by the garbage
 * collector for as long as a view holds them.
 */
import type { Memtable } from "../memtable/memtable.js";
import type { Version } from "../version/version.js";

export class ReadView {
  private refs = 1;

  /** Takes one reference on `version` for the view's own initial reference. */
  constructor(
    readonly mem: Memtable,
    readonly imms: readonly Memtable[],
    readonly version: Version,
  ) {
    version.ref();
  }

  ref(): this {
    if (this.refs <= 0) throw new Error("ReadView.ref after release");
    this.refs++;
    return this;
  }

  unref(): void {
    if (this.refs <= 0) throw new Error("ReadView.unref without a reference");
    if (--this.refs === 0) this.version.unref();
  }
}
