/**
 * The snapshots a member keeps in D/snap/<index>/ (docs/cluster.md, "Snapshots"): store
 * checkpoints (hard links to the store's tables, a copy of its live log instead of a
 * memtable flush, a fresh manifest) taken at an applied index, each with its descriptor in
 * the file SNAPSHOT, written last: a directory without
 * it is an unfinished snapshot and is removed at open. They are what this member streams
 * to a follower that needs one. The newest two are kept (and any a stream still reads);
 * older ones are removed.
 */

import { yieldToEventLoop } from "../compaction/event-loop-yield.js";
import type { CheckpointCapture } from "../db/checkpoint.js";
import type { KvStore } from "../db/kv-store.js";
import { ioError, KvError } from "../errors.js";
import { crc32cExtend } from "../util/crc32c.js";
import { parseFileName } from "../version/file-names.js";
import { writeFileAtomically } from "../vfs/atomic-write.js";
import { type FileSystem, joinPath } from "../vfs/file-system.js";
import type { NodeDir } from "./node-dir.js";
import type { SnapshotFileInfo } from "./peer-transport.js";
import {
  DESCRIPTOR_FILE,
  decodeDescriptor,
  encodeDescriptor,
  type SnapshotDescriptor,
} from "./snapshot-descriptor.js";

const READ_CHUNK = 1 << 20;
const KEEP = 2;
/**
 * A snapshot copies the store's live log (at most about one memtable of writes) rather
 * than flush the memtable, up to this size: the snapshot is taken inside the Raft cycle,
 * and a flush there held every member's cycle for 37-288 ms at the same index
 * (docs/benchmarks/2026_12_02_floors.txt). Larger logs (a store given a bigger write
 * buffer) are flushed as before.
 */
const LOG_SIZE_FOR_FLUSH = 64 << 20;

export interface LocalSnapshot {
  readonly index: number;
  readonly term: number;
  readonly path: string;
  readonly files: readonly SnapshotFileInfo[];
  readonly bytes: number;
  /** The encoded descriptor (the Raft snapshot's data). */
  readonly descriptor: Uint8Array;
}

interface Held {
  readonly snap: LocalSnapshot;
  refs: number;
  obsolete: boolean;
}

/**
 * Size and CRC-32C of a file, read in chunks, yielding to the event loop between them (a
 * snapshot's new tables can be tens of MB, read on the member's main thread).
 */
async function describeFile(fs: FileSystem, path: string, name: string): Promise<SnapshotFileInfo> {
  const file = await fs.openReadable(path);
  try {
    const buf = new Uint8Array(READ_CHUNK);
    let crc = 0;
    let at = 0;
    for (;;) {
      const n = file.read(buf, at);
      if (n === 0) break;
      crc = crc32cExtend(crc, buf, 0, n);
      at += n;
      await yieldToEventLoop();
    }
    return { name, size: at, crc32c: crc >>> 0 };
  } finally {
    await file.close();
  }
}

async function readAll(fs: FileSystem, path: string): Promise<Uint8Array> {
  const file = await fs.openReadable(path);
  try {
    const buf = new Uint8Array(file.size);
    file.read(buf, 0);
    return buf;
  } finally {
    await file.close();
  }
}

/** A snapshot whose content is fixed (LocalSnapshots.capture), its files yet to be written. */
export interface PendingSnapshot {
  /** Writes the snapshot's files and descriptor; durable when it resolves. */
  finish(): Promise<LocalSnapshot>;
}

export class LocalSnapshots {
  private readonly held = new Map<number, Held>();
  /** Table files' size and CRC, by name, for the store `crcStore` (see `describe`). */
  private readonly tableCrcs = new Map<string, SnapshotFileInfo>();
  private crcStore: KvStore | undefined;

  private constructor(private readonly dir: NodeDir) {}

  /** Loads the finished snapshots of D/snap, removing unfinished ones. */
  static async load(dir: NodeDir): Promise<LocalSnapshots> {
    const out = new LocalSnapshots(dir);
    const fs = dir.fs;
    for (const index of dir.snapshots) {
      const path = dir.snapshotPath(index);
      const descriptorPath = joinPath(path, DESCRIPTOR_FILE);
      if (!(await fs.exists(descriptorPath))) {
        await dir.removeTree(path);
        continue;
      }
      const descriptor = await readAll(fs, descriptorPath);
      const d = decodeDescriptor(descriptor);
      if (d.index !== index) {
        throw new KvError("CORRUPTION", `${descriptorPath} describes index ${d.index}`, {
          file: descriptorPath,
        });
      }
      out.add(path, d, descriptor);
    }
    return out;
  }

  private add(path: string, d: SnapshotDescriptor, descriptor: Uint8Array): LocalSnapshot {
    let bytes = 0;
    for (const f of d.files) bytes += f.size;
    const snap = { index: d.index, term: d.term, path, files: d.files, bytes, descriptor };
    this.held.set(d.index, { snap, refs: 0, obsolete: false });
    return snap;
  }

  get(index: number): LocalSnapshot | undefined {
    const h = this.held.get(index);
    return h === undefined || h.obsolete ? undefined : h.snap;
  }

  newest(): LocalSnapshot | undefined {
    let best: LocalSnapshot | undefined;
    for (const h of this.held.values()) {
      if (!h.obsolete && (best === undefined || h.snap.index > best.index)) best = h.snap;
    }
    return best;
  }

  /**
   * Takes a snapshot of `store` at applied index `index` (term `term`). REQUIRES: nothing
   * writes to the store until this resolves (the store then holds exactly the entries
   * through `index`). Durable when it resolves.
   */
  async create(store: KvStore, index: number, term: number): Promise<LocalSnapshot> {
    return (await this.capture(store, index, term)).finish();
  }

  /**
   * The first half of `create`: fixes the snapshot's content (the store's checkpoint
   * capture). REQUIRES: nothing writes to the store until this resolves; from then on the
   * store may take writes while `finish` (REQUIRED, once) writes the snapshot's files.
   */
  async capture(store: KvStore, index: number, term: number): Promise<PendingSnapshot> {
    const existing = this.get(index);
    if (existing !== undefined) return { finish: () => Promise.resolve(existing) };
    const capture = await store.captureCheckpoint({ logSizeForFlush: LOG_SIZE_FOR_FLUSH });
    return {
      finish: () => this.write(store, capture, index, term).finally(() => capture.release()),
    };
  }

  private async write(
    store: KvStore,
    capture: CheckpointCapture,
    index: number,
    term: number,
  ): Promise<LocalSnapshot> {
    const fs = this.dir.fs;
    await this.dir.ensureSnapDir();
    const path = this.dir.snapshotPath(index);
    if (await fs.exists(path)) await this.dir.removeTree(path);
    await capture.write(path);
    const files: SnapshotFileInfo[] = [];
    try {
      for (const name of await fs.list(path)) files.push(await this.describe(store, path, name));
    } catch (err) {
      throw ioError(`describe snapshot ${path}`, err, path);
    }
    // Tables compacted away since are not asked for again.
    const names = new Set(files.map((f) => f.name));
    for (const name of this.tableCrcs.keys()) if (!names.has(name)) this.tableCrcs.delete(name);
    const d: SnapshotDescriptor = { index, term, files };
    const descriptor = encodeDescriptor(d);
    await writeFileAtomically(fs, joinPath(path, DESCRIPTOR_FILE), descriptor);
    return this.add(path, d, descriptor);
  }

  /**
   * Size and CRC-32C of file `name` of snapshot directory `path`. A table file is read
   * once per store: tables never change and their numbers are never reused, so a table
   * of the same name and size as in an earlier snapshot of the same store has the same
   * CRC (without this, each snapshot read the whole store on the member's Raft cycle).
   */
  private async describe(store: KvStore, path: string, name: string): Promise<SnapshotFileInfo> {
    const fs = this.dir.fs;
    const file = joinPath(path, name);
    if (parseFileName(name)?.type !== "table") return describeFile(fs, file, name);
    if (this.crcStore !== store) {
      this.crcStore = store;
      this.tableCrcs.clear();
    }
    const known = this.tableCrcs.get(name);
    if (known !== undefined && known.size === (await fs.fileSize(file))) return known;
    const info = await describeFile(fs, file, name);
    this.tableCrcs.set(name, info);
    return info;
  }

  /** Holds snapshot `index` for reading until `release` is called. */
  acquire(index: number): LocalSnapshot | undefined {
    const h = this.held.get(index);
    if (h === undefined || h.obsolete) return undefined;
    h.refs++;
    return h.snap;
  }

  async release(index: number): Promise<void> {
    const h = this.held.get(index);
    if (h === undefined) return;
    h.refs--;
    if (h.refs === 0 && h.obsolete) await this.remove(h);
  }

  /** Reads up to `length` bytes of `file` of a held snapshot from `offset`. */
  async read(
    snap: LocalSnapshot,
    file: string,
    offset: number,
    length: number,
  ): Promise<Uint8Array> {
    if (!snap.files.some((f) => f.name === file)) {
      throw new KvError("INVALID_ARGUMENT", `snapshot ${snap.index} has no file ${file}`);
    }
    const f = await this.dir.fs.openReadable(joinPath(snap.path, file));
    try {
      const buf = Buffer.allocUnsafe(Math.max(0, Math.min(length, f.size - offset)));
      const n = buf.length === 0 ? 0 : f.read(buf, offset);
      return buf.subarray(0, n);
    } finally {
      await f.close();
    }
  }

  /**
   * Removes snapshots beyond the newest KEEP, except those at or above `keepFrom` (the Raft
   * log's snapshot) and those being read (removed once released).
   */
  async prune(keepFrom: number): Promise<void> {
    const live = [...this.held.values()]
      .filter((h) => !h.obsolete)
      .sort((a, b) => b.snap.index - a.snap.index);
    for (const h of live.slice(KEEP)) {
      if (h.snap.index >= keepFrom) continue;
      h.obsolete = true;
      if (h.refs === 0) await this.remove(h);
    }
  }

  private async remove(h: Held): Promise<void> {
    this.held.delete(h.snap.index);
    await this.dir.removeTree(h.snap.path);
  }
}
