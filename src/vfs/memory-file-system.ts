/**
 * MemoryFileSystem: an in-memory FileSystem that can be crash-cloned, modelled on Pebble's
 * crash-clonable MemFS and LevelDB's fault-injection Env.
 *
 * Model:
 * - Inodes. A directory maps names to inodes; a file inode holds its live bytes. Renaming
 *   moves the inode, so open handles keep working across rename and remove (like POSIX).
 * - Paths: every path, absolute or relative, lives in one tree; empty and "." segments are
 *   ignored and ".." is an ordinary name (the contract says paths are not resolved). The
 *   root always exists; other directories exist only after `mkdir`. Errors carry a node-like
 *   `code` (ENOENT, ENOTDIR, EISDIR, EEXIST, ENOTEMPTY, EINVAL, EBADF), `syscall` and `path`.
 * - Durability. A file inode keeps its `synced` bytes (its content as of its last
 *   datasync/sync) and the ordered list of changes since (writes, zero-fills from
 *   preallocate, truncations). A directory keeps a snapshot of its entries as of its last
 *   `syncDir`; create, rename, remove and mkdir change only the live entries. A rename
 *   between two directories touches each directory's entries separately.
 * - `datasync`/`sync` make durable exactly the changes made before the call; they resolve
 *   after yielding to the event loop's microtask queue.
 * - Reads see the live content at read time, up to the live end of the file (not the size
 *   at open).
 * - `crashClone` builds the state after a power loss (see CrashCloneOptions).
 * - Async mutations (rename, remove, mkdir, syncDir, truncate, ...) take effect when called,
 *   then yield before resolving.
 */

import type { FileLock, FileSystem, ReadableFile, WritableFile } from "./file-system.js";
import { LockHeldError } from "./file-system.js";

/** Sector size used to tear retained writes in `crashClone`. */
export const SECTOR_SIZE = 512;

export interface CrashCloneOptions {
  /**
   * Probability (0..1) that each unsynced change (write, zero-fill, truncation) survives the
   * crash, decided independently per change. 0: only synced data survives; 1: everything.
   */
  unsyncedRetention: number;
  /** Seed of the PRNG deciding retention and tearing. Default 0. Same seed, same result. */
  seed?: number;
  /**
   * Probability that a retained write spanning a 512-byte sector boundary is torn: only a
   * prefix ending at one of those boundaries survives. Applies only when 0 < retention < 1.
   * Default 0.25.
   */
  tornWriteProbability?: number;
  /**
   * Models ext4 data=ordered (see docs/design.md, "Log preallocation"): a file's growth
   * survives as a prefix. Writes and zero-fills that extend the file are kept in order until
   * the first one dropped or torn, and none after it; changes inside the current end
   * (overwrites, truncations) are still kept independently. Default false: every change is
   * decided independently, which can leave a zero hole before a surviving later append.
   */
  appendsSurviveAsPrefix?: boolean;
}

const ERROR_TEXT: Record<string, string> = {
  ENOENT: "no such file or directory",
  EEXIST: "file already exists",
  ENOTDIR: "not a directory",
  EISDIR: "illegal operation on a directory",
  ENOTEMPTY: "directory not empty",
  EINVAL: "invalid argument",
  EBADF: "bad file descriptor (file is closed)",
};

type FsErrorCode = "ENOENT" | "EEXIST" | "ENOTDIR" | "EISDIR" | "ENOTEMPTY" | "EINVAL" | "EBADF";

/** A node-like error: `CODE: text, syscall 'path'`, with code, syscall and path set. */
function fsError(code: FsErrorCode, syscall: string, path: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(
    `${code}: ${ERROR_TEXT[code]}, ${syscall} '${path}'`,
  );
  err.code = code;
  err.syscall = syscall;
  err.path = path;
  return err;
}

function checkLength(length: number, what: string): void {
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`${what}: length must be a non-negative safe integer, got ${length}`);
  }
}

/** Yields to the microtask queue so callers of async operations really wait. */
function yieldNow(): Promise<void> {
  return new Promise<void>((resolve) => queueMicrotask(resolve));
}

/** mulberry32: a small, fast, seeded PRNG returning floats in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A growable byte array. Invariant: backing bytes at and past `length` are zero. */
class ByteArray {
  private buf: Uint8Array;
  length = 0;

  constructor(capacity = 0) {
    this.buf = new Uint8Array(capacity);
  }

  static of(bytes: Uint8Array): ByteArray {
    const b = new ByteArray(bytes.length);
    b.buf.set(bytes);
    b.length = bytes.length;
    return b;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(n, this.buf.length * 2, 64));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
  }

  write(offset: number, src: Uint8Array): void {
    this.reserve(offset + src.length);
    this.buf.set(src, offset);
    this.length = Math.max(this.length, offset + src.length);
  }

  zero(offset: number, length: number): void {
    this.reserve(offset + length);
    this.buf.fill(0, offset, offset + length);
    this.length = Math.max(this.length, offset + length);
  }

  truncate(length: number): void {
    if (length < this.length) this.buf.fill(0, length, this.length);
    else this.reserve(length);
    this.length = length;
  }

  /** Copies up to dst.length bytes at `position`; returns the count (short only at end). */
  read(dst: Uint8Array, position: number): number {
    if (position >= this.length) return 0;
    const n = Math.min(dst.length, this.length - position);
    dst.set(this.buf.subarray(position, position + n));
    return n;
  }

  clone(): ByteArray {
    return ByteArray.of(this.bytes());
  }

  /** A view of the content (not a copy). */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

/** An unsynced change to a file, in the order it was made. */
type Change =
  | { readonly kind: "write"; readonly offset: number; readonly bytes: Uint8Array }
  | { readonly kind: "zero"; readonly offset: number; readonly length: number }
  | { readonly kind: "truncate"; readonly length: number };

/** A change that writes bytes (data or zeros) at an offset. */
type Extent = Exclude<Change, { kind: "truncate" }>;

/** The end offset of a write or zero-fill. */
function changeEnd(change: Extent): number {
  return change.offset + (change.kind === "write" ? change.bytes.length : change.length);
}

function applyChange(target: ByteArray, change: Change): void {
  switch (change.kind) {
    case "write":
      target.write(change.offset, change.bytes);
      break;
    case "zero":
      target.zero(change.offset, change.length);
      break;
    case "truncate":
      target.truncate(change.length);
      break;
  }
}

class FileInode {
  readonly kind = "file";
  /** Live content, what reads see. */
  content: ByteArray;
  /** Content as of the last datasync/sync. */
  synced: ByteArray;
  /** Changes since the last datasync/sync, oldest first. */
  pending: Change[] = [];

  constructor(content: ByteArray = new ByteArray()) {
    this.content = content;
    this.synced = content.clone();
  }

  change(change: Change): void {
    applyChange(this.content, change);
    this.pending.push(change);
  }

  /** Makes every pending change durable (cost proportional to the pending changes). */
  sync(): void {
    for (const change of this.pending) applyChange(this.synced, change);
    this.pending = [];
  }

  /** Forgets the pending changes: the live content reverts to the synced content. */
  dropUnsynced(): void {
    this.content = this.synced.clone();
    this.pending = [];
  }

  /** Replaces the content, live and durable alike. */
  replace(bytes: Uint8Array): void {
    this.content = ByteArray.of(bytes);
    this.synced = ByteArray.of(bytes);
    this.pending = [];
  }
}

class DirInode {
  readonly kind = "dir";
  /** Live entries. */
  entries = new Map<string, Inode>();
  /** Entries as of the last syncDir. */
  synced = new Map<string, Inode>();
}

type Inode = FileInode | DirInode;

function components(path: string): string[] {
  return path.split("/").filter((c) => c !== "" && c !== ".");
}

class MemoryReadableFile implements ReadableFile {
  private closed = false;

  constructor(
    readonly path: string,
    private readonly inode: FileInode,
    readonly size: number,
  ) {}

  /** Reads the live content at read time (bounded by the live length, not `size`). */
  read(dst: Uint8Array, position: number): number {
    if (this.closed) throw fsError("EBADF", "read", this.path);
    return this.inode.content.read(dst, position);
  }

  async close(): Promise<void> {
    this.closed = true;
    await yieldNow();
  }
}

class MemoryWritableFile implements WritableFile {
  private closed = false;
  private logicalSize: number;

  constructor(
    readonly owner: MemoryFileSystem,
    readonly path: string,
    readonly inode: FileInode,
    size: number,
  ) {
    this.logicalSize = size;
  }

  get size(): number {
    return this.logicalSize;
  }

  private check(syscall: string): void {
    if (this.closed) throw fsError("EBADF", syscall, this.path);
  }

  append(data: Uint8Array): void {
    this.check("write");
    if (data.length === 0) return;
    this.inode.change({ kind: "write", offset: this.logicalSize, bytes: data.slice() });
    this.logicalSize += data.length;
  }

  preallocate(length: number): void {
    checkLength(length, "preallocate");
    this.check("write");
    const end = this.inode.content.length;
    if (length > end) this.inode.change({ kind: "zero", offset: end, length: length - end });
  }

  async truncate(length: number): Promise<void> {
    checkLength(length, "truncate");
    this.check("ftruncate");
    this.inode.change({ kind: "truncate", length });
    this.logicalSize = length;
    await yieldNow();
  }

  async datasync(): Promise<void> {
    this.check("fdatasync");
    this.inode.sync();
    await yieldNow();
  }

  datasyncSync(): void {
    this.check("fdatasync");
    this.inode.sync();
  }

  async sync(): Promise<void> {
    this.check("fsync");
    this.inode.sync();
    await yieldNow();
  }

  async close(): Promise<void> {
    this.closed = true;
    await yieldNow();
  }
}

class MemoryFileLock implements FileLock {
  private released = false;

  constructor(
    readonly path: string,
    private readonly onRelease: () => void,
  ) {}

  async release(): Promise<void> {
    if (!this.released) {
      this.released = true;
      this.onRelease();
    }
    await yieldNow();
  }
}

export class MemoryFileSystem implements FileSystem {
  private root = new DirInode();
  /** Held locks, keyed by normalized path. */
  private readonly locks = new Map<string, MemoryFileLock>();

  // ---- path resolution ----

  /** The inode at path; throws ENOENT or ENOTDIR. */
  private lookup(path: string, syscall: string): Inode {
    let node: Inode = this.root;
    for (const name of components(path)) {
      if (node.kind !== "dir") throw fsError("ENOTDIR", syscall, path);
      const next = node.entries.get(name);
      if (next === undefined) throw fsError("ENOENT", syscall, path);
      node = next;
    }
    return node;
  }

  private lookupFile(path: string, syscall: string): FileInode {
    const node = this.lookup(path, syscall);
    if (node.kind !== "file") throw fsError("EISDIR", syscall, path);
    return node;
  }

  private lookupDir(path: string, syscall: string): DirInode {
    const node = this.lookup(path, syscall);
    if (node.kind !== "dir") throw fsError("ENOTDIR", syscall, path);
    return node;
  }

  /** The existing parent directory of path and the last name; throws for the root. */
  private lookupParent(path: string, syscall: string): { dir: DirInode; name: string } {
    const parts = components(path);
    const name = parts.pop();
    if (name === undefined) throw fsError("EISDIR", syscall, path);
    return { dir: this.lookupDir(parts.join("/"), syscall), name };
  }

  // ---- FileSystem ----

  async openReadable(path: string): Promise<ReadableFile> {
    const inode = this.lookupFile(path, "open");
    await yieldNow();
    return new MemoryReadableFile(path, inode, inode.content.length);
  }

  openReadableSync(path: string): ReadableFile {
    const inode = this.lookupFile(path, "open");
    return new MemoryReadableFile(path, inode, inode.content.length);
  }

  /** Creates the file, or truncates the existing inode (like O_CREAT|O_TRUNC). */
  async createWritable(path: string): Promise<WritableFile> {
    const { dir, name } = this.lookupParent(path, "open");
    let inode = dir.entries.get(name);
    if (inode === undefined) {
      inode = new FileInode();
      dir.entries.set(name, inode);
    } else if (inode.kind !== "file") {
      throw fsError("EISDIR", "open", path);
    } else if (inode.content.length > 0) {
      inode.change({ kind: "truncate", length: 0 });
    }
    await yieldNow();
    return new MemoryWritableFile(this, path, inode, 0);
  }

  async openWritable(path: string, length?: number): Promise<WritableFile> {
    if (length !== undefined) checkLength(length, "openWritable");
    const inode = this.lookupFile(path, "open");
    await yieldNow();
    return new MemoryWritableFile(this, path, inode, length ?? inode.content.length);
  }

  async rename(from: string, to: string): Promise<void> {
    const src = this.lookupParent(from, "rename");
    const node = src.dir.entries.get(src.name);
    if (node === undefined) throw fsError("ENOENT", "rename", from);
    const dst = this.lookupParent(to, "rename");
    if (src.dir === dst.dir && src.name === dst.name) return yieldNow();
    const existing = dst.dir.entries.get(dst.name);
    if (node.kind === "dir") {
      if (existing?.kind === "file") throw fsError("ENOTDIR", "rename", to);
      if (existing?.kind === "dir" && existing.entries.size > 0) {
        throw fsError("ENOTEMPTY", "rename", to);
      }
      if (contains(node, dst.dir)) throw fsError("EINVAL", "rename", to);
    } else if (existing?.kind === "dir") {
      throw fsError("EISDIR", "rename", to);
    }
    src.dir.entries.delete(src.name);
    dst.dir.entries.set(dst.name, node);
    await yieldNow();
  }

  async link(from: string, to: string): Promise<void> {
    const node = this.lookupFile(from, "link");
    const dst = this.lookupParent(to, "link");
    if (dst.dir.entries.has(dst.name)) throw fsError("EEXIST", "link", to);
    dst.dir.entries.set(dst.name, node);
    await yieldNow();
  }

  async remove(path: string): Promise<void> {
    const { dir, name } = this.lookupParent(path, "unlink");
    const node = dir.entries.get(name);
    if (node === undefined) throw fsError("ENOENT", "unlink", path);
    if (node.kind === "dir") throw fsError("EISDIR", "unlink", path);
    dir.entries.delete(name);
    await yieldNow();
  }

  async removeDir(path: string): Promise<void> {
    const { dir, name } = this.lookupParent(path, "rmdir");
    const node = dir.entries.get(name);
    if (node === undefined) throw fsError("ENOENT", "rmdir", path);
    if (node.kind !== "dir") throw fsError("ENOTDIR", "rmdir", path);
    if (node.entries.size > 0) throw fsError("ENOTEMPTY", "rmdir", path);
    dir.entries.delete(name);
    await yieldNow();
  }

  async list(dir: string): Promise<string[]> {
    const names = [...this.lookupDir(dir, "scandir").entries.keys()].sort();
    await yieldNow();
    return names;
  }

  async mkdir(dir: string): Promise<void> {
    let node: DirInode = this.root;
    const parts = components(dir);
    for (let i = 0; i < parts.length; i++) {
      const name = parts[i]!;
      const next = node.entries.get(name);
      if (next === undefined) {
        const created = new DirInode();
        node.entries.set(name, created);
        node = created;
      } else if (next.kind === "dir") {
        node = next;
      } else {
        throw fsError(i === parts.length - 1 ? "EEXIST" : "ENOTDIR", "mkdir", dir);
      }
    }
    await yieldNow();
  }

  async exists(path: string): Promise<boolean> {
    let found = true;
    try {
      this.lookup(path, "stat");
    } catch {
      found = false;
    }
    await yieldNow();
    return found;
  }

  async fileSize(path: string): Promise<number> {
    const size = this.lookupFile(path, "stat").content.length;
    await yieldNow();
    return size;
  }

  async syncDir(dir: string): Promise<void> {
    const node = this.lookupDir(dir, "fsync");
    node.synced = new Map(node.entries);
    await yieldNow();
  }

  /** Creates the file if absent; the lock table is keyed by the normalized path. */
  async lock(path: string): Promise<FileLock> {
    const { dir, name } = this.lookupParent(path, "open");
    const node = dir.entries.get(name);
    if (node === undefined) dir.entries.set(name, new FileInode());
    else if (node.kind === "dir") throw fsError("EISDIR", "open", path);
    const key = components(path).join("/");
    if (this.locks.has(key)) throw new LockHeldError(path);
    const lock: MemoryFileLock = new MemoryFileLock(path, () => {
      if (this.locks.get(key) === lock) this.locks.delete(key);
    });
    this.locks.set(key, lock);
    await yieldNow();
    return lock;
  }

  // ---- crash simulation and test helpers (not part of FileSystem) ----

  /**
   * A new, independent file system holding what a power loss would leave right now:
   * - each directory has the entries of its last `syncDir` (the root: of its last
   *   `syncDir("")`/`syncDir("/")`): names created or renamed in since are gone, names
   *   removed since come back pointing at their inode; unreachable inodes are gone;
   * - each file has its synced content plus each unsynced change kept independently with
   *   probability `unsyncedRetention` (retained writes may be torn; with
   *   `appendsSurviveAsPrefix` the file's growth survives as a prefix, see options);
   * - no open files, no locks. Every byte of the clone is durable.
   */
  crashClone(options: CrashCloneOptions): MemoryFileSystem {
    const retention = options.unsyncedRetention;
    if (!(retention >= 0 && retention <= 1)) {
      throw new RangeError(`unsyncedRetention must be within [0, 1], got ${retention}`);
    }
    const tornProbability = options.tornWriteProbability ?? 0.25;
    if (!(tornProbability >= 0 && tornProbability <= 1)) {
      throw new RangeError(`tornWriteProbability must be within [0, 1], got ${tornProbability}`);
    }
    const random = mulberry32(options.seed ?? 0);
    const partial = retention > 0 && retention < 1;
    const keep = (): boolean => retention >= 1 || (retention > 0 && random() < retention);

    /** The part of a retained write that reaches the disk: all of it, or a torn prefix. */
    const survivor = (change: Extent): Extent => {
      if (!partial || random() >= tornProbability) return change;
      const end = changeEnd(change);
      const first = (Math.floor(change.offset / SECTOR_SIZE) + 1) * SECTOR_SIZE;
      if (first >= end) return change;
      const boundaries = Math.floor((end - 1 - first) / SECTOR_SIZE) + 1;
      const cut = first + Math.floor(random() * boundaries) * SECTOR_SIZE;
      const kept = cut - change.offset;
      return change.kind === "write"
        ? { kind: "write", offset: change.offset, bytes: change.bytes.subarray(0, kept) }
        : { kind: "zero", offset: change.offset, length: kept };
    };

    const copies = new Map<Inode, Inode>();
    const prefixGrowth = options.appendsSurviveAsPrefix ?? false;
    const copyFile = (file: FileInode): FileInode => {
      const content = file.synced.clone();
      let growthStopped = false;
      for (const change of file.pending) {
        if (change.kind === "truncate") {
          if (keep()) applyChange(content, change);
        } else if (!prefixGrowth || changeEnd(change) <= content.length) {
          if (keep()) applyChange(content, survivor(change));
        } else if (!growthStopped) {
          const kept = keep() ? survivor(change) : undefined;
          if (kept !== undefined) applyChange(content, kept);
          growthStopped = kept === undefined || changeEnd(kept) < changeEnd(change);
        }
      }
      return new FileInode(content);
    };
    const copyDir = (dir: DirInode): DirInode => {
      const copy = new DirInode();
      copies.set(dir, copy);
      for (const name of [...dir.synced.keys()].sort()) {
        const child = dir.synced.get(name)!;
        const childCopy =
          copies.get(child) ?? (child.kind === "dir" ? copyDir(child) : copyFile(child));
        copies.set(child, childCopy);
        copy.entries.set(name, childCopy);
      }
      copy.synced = new Map(copy.entries);
      return copy;
    };

    const clone = new MemoryFileSystem();
    clone.root = copyDir(this.root);
    return clone;
  }

  /**
   * Forgets the unsynced changes of a file (given by path or by a WritableFile this file
   * system opened): its live content reverts to its synced content, as when a kernel drops
   * dirty pages after a failed fsync. Open handles keep their `size`.
   */
  dropUnsyncedWrites(target: string | WritableFile): void {
    if (typeof target === "string") {
      this.lookupFile(target, "fsync").dropUnsynced();
    } else if (target instanceof MemoryWritableFile && target.owner === this) {
      target.inode.dropUnsynced();
    } else {
      throw new TypeError(`${target.path} was not opened by this MemoryFileSystem`);
    }
  }

  /** A copy of the live content of a file. */
  readFile(path: string): Uint8Array {
    return this.lookupFile(path, "open").content.bytes().slice();
  }

  /**
   * Writes a whole file as durable fixture data: the content becomes live and synced, and the
   * name becomes durable in its parent directory (the parent's own name is not synced). An
   * existing file is replaced in place (same inode; its pending changes are discarded).
   */
  writeFile(path: string, bytes: Uint8Array): void {
    const { dir, name } = this.lookupParent(path, "open");
    let node = dir.entries.get(name);
    if (node?.kind === "dir") throw fsError("EISDIR", "open", path);
    if (node === undefined) {
      node = new FileInode();
      dir.entries.set(name, node);
    }
    node.replace(bytes);
    dir.synced.set(name, node);
  }

  /** Copies of the live content of every file, keyed by path ("a/b", no leading slash). */
  snapshotFiles(): Map<string, Uint8Array> {
    const out = new Map<string, Uint8Array>();
    const walk = (dir: DirInode, prefix: string): void => {
      for (const name of [...dir.entries.keys()].sort()) {
        const node = dir.entries.get(name)!;
        const path = prefix === "" ? name : `${prefix}/${name}`;
        if (node.kind === "dir") walk(node, path);
        else out.set(path, node.content.bytes().slice());
      }
    };
    walk(this.root, "");
    return out;
  }
}

/** True iff `target` is `dir` or lies below it in the live tree. */
function contains(dir: DirInode, target: DirInode): boolean {
  if (dir === target) return true;
  for (const child of dir.entries.values()) {
    if (child.kind === "dir" && contains(child, target)) return true;
  }
  return false;
}
