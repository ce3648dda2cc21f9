/**
 * ReadView: what one read sees: the active memtable, the immutable memtables waiting to
 * be flushed (newest first), and a version (the table files per level). The store swaps
 * its current view whenever one of them changes; a get, an iterator or a snapshot keeps
 * the view it started with, so a flush or compaction finishing meanwhile changes nothing
 * it reads (RocksDB calls this a SuperVersion).
 *
 * Views pin their version and their memtables with a reference each: the version's files
 * are deleted only when no version that lists them is referenced, and a memtable's arena
 * is reused only when no view lists it (and the store has let go of it after its flush).
 */
import type { Memtable } from "../memtable/memtable.js";
import type { Version } from "../version/version.js";

export class ReadView {
  private refs = 1;

  /** Takes one reference on `version` and each memtable for the view's own reference. */
  constructor(
    readonly mem: Memtable,
    readonly imms: readonly Memtable[],
    readonly version: Version,
  ) {
    version.ref();
    mem.ref();
    for (const imm of imms) imm.ref();
  }

  ref(): this {
    if (this.refs <= 0) throw new Error("ReadView.ref after release");
    this.refs++;
    return this;
  }

  unref(): void {
    if (this.refs <= 0) throw new Error("ReadView.unref without a reference");
    if (--this.refs === 0) {
      this.version.unref();
      this.mem.unref();
      for (const imm of this.imms) imm.unref();
    }
  }
}
