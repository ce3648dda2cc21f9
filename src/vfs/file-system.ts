/**
 * The file-system interface: everything the engine does with files goes through it.
 * Only the files under src/vfs/ may import node:fs (a lint test enforces this).
 *
 * Implementations:
 * - RealFileSystem (real-file-system.ts): node:fs, files 0600, directories 0700.
 * - MemoryFileSystem (memory-file-system.ts): in memory, can be crash-cloned.
 * - FaultInjectingFileSystem (fault-injecting-file-system.ts): wraps another one, fails
 *   chosen operations, counts every operation.
 *
 * Contract notes:
 * - Paths are plain strings joined with "/" (use `joinPath`); implementations do not
 *   resolve "..".
 * - Data-path calls (`append`, `read`) are synchronous: they touch the page cache only and
 *   a thread-pool round trip would cost more than the copy. Calls that wait for the
 *   device (`datasync`, `sync`, `syncDir`) and metadata calls are asynchronous.
 * - Errors are thrown as they come from the operating system (or from the fault injector);
 *   the engine wraps them into KvError IO_ERROR with the path.
 * - A created, renamed or removed name is durable only after `syncDir` of its parent;
 *   file contents are durable only after `datasync`/`sync` of that file.
 */

/** A file opened for positioned reads. */
export interface ReadableFile {
  readonly path: string;
  /** Size of the file when it was opened. */
  readonly size: number;
  /**
   * Reads up to dst.length bytes at `position` into dst; returns the count read, which is
   * smaller than dst.length only at end of file.
   */
  read(dst: Uint8Array, position: number): number;
  close(): Promise<void>;
}

/** A file opened for writing at its end. */
export interface WritableFile {
  readonly path: string;
  /** Logical size: the offset the next `append` writes at. */
  readonly size: number;
  /** Writes all of data at offset `size` and advances `size`. */
  append(data: Uint8Array): void;
  /**
   * Ensures the file physically extends to at least `length` bytes, writing zeros past the
   * physical end. `size` does not change: later appends overwrite the zeros. Overwriting
   * already-allocated blocks lets fdatasync skip the metadata journal commit that a
   * growing file needs (see docs/design.md, "Log preallocation").
   */
  preallocate(length: number): void;
  /** Cuts the file to `length` bytes (logical and physical) and sets `size` to it. */
  truncate(length: number): Promise<void>;
  /** fdatasync: contents (and the size, if it changed) are durable when this resolves. */
  datasync(): Promise<void>;
  /**
   * fdatasync on the calling thread: blocks the event loop until the device is done.
   * Cheaper than `datasync` by one thread-pool round trip; the commit path uses it only
   * for a lone writer (see src/db/commit-queue.ts).
   */
  datasyncSync(): void;
  /** fsync: contents and all metadata are durable when this resolves. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** A held exclusive lock on a file; released by `release()` or by the process dying. */
export interface FileLock {
  readonly path: string;
  release(): Promise<void>;
}

export interface FileSystem {
  /** Opens an existing file for reading. */
  openReadable(path: string): Promise<ReadableFile>;
  /**
   * `openReadable`, synchronously (blocks the thread for one open and one stat): for
   * synchronous reads (`db.getSync`) that find a table not open yet.
   */
  openReadableSync(path: string): ReadableFile;
  /** Creates a new file (mode 0600), or truncates an existing one, for writing. */
  createWritable(path: string): Promise<WritableFile>;
  /**
   * Opens an existing file for writing with `size` = `length` (default: the current
   * file size). Bytes past `length` remain until overwritten or truncated.
   */
  openWritable(path: string, length?: number): Promise<WritableFile>;
  /** Atomically renames `from` to `to`, replacing `to` if it exists. */
  rename(from: string, to: string): Promise<void>;
  /** Removes a file. Throws if absent. */
  remove(path: string): Promise<void>;
  /**
   * Makes `to` a new name (hard link) of the existing file `from`; throws if `to` exists
   * or the two are on different devices (the caller may then copy). Like a create, the new
   * name is durable only after `syncDir` of its directory.
   */
  link(from: string, to: string): Promise<void>;
  /**
   * Removes an empty directory. Throws if absent, not a directory, or not empty. Like a
   * remove, durable only after `syncDir` of its parent.
   */
  removeDir(path: string): Promise<void>;
  /** Names (not paths) of the entries of a directory, sorted. */
  list(dir: string): Promise<string[]>;
  /** Creates a directory and its missing parents (mode 0700). No error if it exists. */
  mkdir(dir: string): Promise<void>;
  /** True iff a file or directory exists at path. */
  exists(path: string): Promise<boolean>;
  /** Size of a file in bytes. */
  fileSize(path: string): Promise<number>;
  /** fsync of a directory: names created, renamed or removed in it become durable. */
  syncDir(dir: string): Promise<void>;
  /**
   * Takes an exclusive lock on `path` (creating the file if absent) without waiting.
   * Throws an error with code "ELOCKED" when another holder has it, in this process
   * or another. The real implementation uses a kernel lock (OFD lock on Linux), released by kill -9.
   */
  lock(path: string): Promise<FileLock>;
}

/** Joins path segments with "/". */
export function joinPath(...parts: string[]): string {
  return parts.join("/").replace(/\/+/g, "/");
}

/** The parent directory of a path ("." when it has no slash). */
export function dirName(path: string): string {
  const i = path.lastIndexOf("/");
  if (i < 0) return ".";
  if (i === 0) return "/";
  return path.slice(0, i);
}

/** The last segment of a path. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** The error thrown by `lock` when the lock is held elsewhere. */
export class LockHeldError extends Error {
  readonly code = "ELOCKED";
  constructor(path: string) {
    super(`lock on ${path} is held by another handle or process`);
  }
}
