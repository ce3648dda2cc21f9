/**
 * RealFileSystem: the FileSystem interface on node:fs.
 *
 * - Files are created with mode 0600 and directories with 0700 (before the umask).
 * - `append` and `read` are synchronous positioned I/O (pwrite/pread) that loop until the
 *   whole buffer is transferred; everything that waits for the device (fdatasync, fsync,
 *   directory fsync, ftruncate) uses the callback API so the event loop never blocks.
 * - `lock` takes an exclusive kernel lock owned by the open file description
 *   (fs-native-extensions, loaded on first use: ./file-lock.ts; OFD lock on Linux, flock
 *   elsewhere), so it conflicts with a
 *   second `lock` in this process as well as with other processes, and the kernel releases
 *   it when the process dies (kill -9 included).
 * - `close` and `release` are idempotent.
 */

import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import { type FileLocking, fileLocking } from "./file-lock.js";
import {
  type FileLock,
  type FileSystem,
  LockHeldError,
  type ReadableFile,
  type WritableFile,
} from "./file-system.js";

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
/** `preallocate` writes zeros in chunks of at most this many bytes. */
const ZERO_CHUNK = 1024 * 1024;

let zeroChunk: Uint8Array | undefined;
/** A shared, never-written buffer of ZERO_CHUNK zeros. */
function zeros(): Uint8Array {
  zeroChunk ??= new Uint8Array(ZERO_CHUNK);
  return zeroChunk;
}

type Callback<T> = (err: NodeJS.ErrnoException | null, value: T) => void;

/** Runs a callback-style node:fs call as a promise. */
function call<T>(fn: (cb: Callback<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    fn((err, value) => {
      if (err) reject(err);
      else resolve(value);
    });
  });
}

function callVoid(fn: (cb: (err: NodeJS.ErrnoException | null) => void) => void): Promise<void> {
  return call<void>((cb) => fn((err) => cb(err, undefined)));
}

function openFd(path: string, flags: string | number, mode?: number): Promise<number> {
  return call<number>((cb) => fs.open(path, flags, mode, cb));
}

function closeFd(fd: number): Promise<void> {
  return callVoid((cb) => fs.close(fd, cb));
}

function fstatSize(fd: number): Promise<number> {
  return call<fs.Stats>((cb) => fs.fstat(fd, cb)).then((st) => st.size);
}

function closedError(path: string, what: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`EBADF: file is closed, ${what} '${path}'`);
  err.code = "EBADF";
  err.syscall = what;
  err.path = path;
  return err;
}

function checkLength(length: number, what: string): void {
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`${what}: length must be a non-negative safe integer, got ${length}`);
  }
}

class RealReadableFile implements ReadableFile {
  private fd: number;

  constructor(
    readonly path: string,
    fd: number,
    readonly size: number,
  ) {
    this.fd = fd;
  }

  read(dst: Uint8Array, position: number): number {
    if (this.fd < 0) throw closedError(this.path, "read");
    let done = 0;
    while (done < dst.length) {
      const n = fs.readSync(this.fd, dst, done, dst.length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  async close(): Promise<void> {
    const fd = this.fd;
    if (fd < 0) return;
    this.fd = -1;
    await closeFd(fd);
  }
}

class RealWritableFile implements WritableFile {
  private fd: number;
  private logicalSize: number;
  /** Bytes the file really has on disk: at least `size`, more after `preallocate`. */
  private physicalSize: number;

  constructor(
    readonly path: string,
    fd: number,
    size: number,
    physicalSize: number,
  ) {
    this.fd = fd;
    this.logicalSize = size;
    this.physicalSize = physicalSize;
  }

  get size(): number {
    return this.logicalSize;
  }

  private liveFd(what: string): number {
    if (this.fd < 0) throw closedError(this.path, what);
    return this.fd;
  }

  append(data: Uint8Array): void {
    const fd = this.liveFd("write");
    let done = 0;
    while (done < data.length) {
      done += fs.writeSync(fd, data, done, data.length - done, this.logicalSize + done);
    }
    this.logicalSize += data.length;
    if (this.logicalSize > this.physicalSize) this.physicalSize = this.logicalSize;
  }

  preallocate(length: number): void {
    checkLength(length, "preallocate");
    const fd = this.liveFd("write");
    const zero = zeros();
    while (this.physicalSize < length) {
      const n = Math.min(ZERO_CHUNK, length - this.physicalSize);
      // Each write is followed by a physicalSize update so a throw leaves it accurate.
      this.physicalSize += fs.writeSync(fd, zero, 0, n, this.physicalSize);
    }
  }

  async truncate(length: number): Promise<void> {
    checkLength(length, "truncate");
    const fd = this.liveFd("ftruncate");
    await callVoid((cb) => fs.ftruncate(fd, length, cb));
    this.logicalSize = length;
    this.physicalSize = length;
  }

  async datasync(): Promise<void> {
    const fd = this.liveFd("fdatasync");
    await callVoid((cb) => fs.fdatasync(fd, cb));
  }

  datasyncSync(): void {
    fs.fdatasyncSync(this.liveFd("fdatasync"));
  }

  async sync(): Promise<void> {
    const fd = this.liveFd("fsync");
    await callVoid((cb) => fs.fsync(fd, cb));
  }

  async close(): Promise<void> {
    const fd = this.fd;
    if (fd < 0) return;
    this.fd = -1;
    await closeFd(fd);
  }
}

class RealFileLock implements FileLock {
  private fd: number;

  constructor(
    readonly path: string,
    fd: number,
    private readonly locking: FileLocking,
  ) {
    this.fd = fd;
  }

  /** Unlocks and closes the lock file; later calls do nothing. */
  async release(): Promise<void> {
    const fd = this.fd;
    if (fd < 0) return;
    this.fd = -1;
    try {
      this.locking.unlock(fd);
    } finally {
      await closeFd(fd);
    }
  }
}

export class RealFileSystem implements FileSystem {
  async openReadable(path: string): Promise<ReadableFile> {
    const fd = await openFd(path, "r");
    try {
      return new RealReadableFile(path, fd, await fstatSize(fd));
    } catch (err) {
      await closeFd(fd).catch(() => {});
      throw err;
    }
  }

  openReadableSync(path: string): ReadableFile {
    const fd = fs.openSync(path, "r");
    try {
      return new RealReadableFile(path, fd, fs.fstatSync(fd).size);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  async createWritable(path: string): Promise<WritableFile> {
    const fd = await openFd(path, "w", FILE_MODE);
    return new RealWritableFile(path, fd, 0, 0);
  }

  async openWritable(path: string, length?: number): Promise<WritableFile> {
    if (length !== undefined) checkLength(length, "openWritable");
    const fd = await openFd(path, "r+");
    try {
      const physical = await fstatSize(fd);
      return new RealWritableFile(path, fd, length ?? physical, physical);
    } catch (err) {
      await closeFd(fd).catch(() => {});
      throw err;
    }
  }

  async rename(from: string, to: string): Promise<void> {
    await fsp.rename(from, to);
  }

  async remove(path: string): Promise<void> {
    await fsp.unlink(path);
  }

  async removeDir(path: string): Promise<void> {
    await fsp.rmdir(path);
  }

  async link(from: string, to: string): Promise<void> {
    await fsp.link(from, to);
  }

  async list(dir: string): Promise<string[]> {
    const names = await fsp.readdir(dir);
    return names.sort();
  }

  async mkdir(dir: string): Promise<void> {
    await fsp.mkdir(dir, { recursive: true, mode: DIR_MODE });
  }

  async exists(path: string): Promise<boolean> {
    try {
      await fsp.stat(path);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return false;
      throw err;
    }
  }

  async fileSize(path: string): Promise<number> {
    return (await fsp.stat(path)).size;
  }

  async syncDir(dir: string): Promise<void> {
    const fd = await openFd(dir, "r");
    try {
      await callVoid((cb) => fs.fsync(fd, cb));
    } finally {
      await closeFd(fd);
    }
  }

  async lock(path: string): Promise<FileLock> {
    const locking = await fileLocking();
    const fd = await openFd(path, fs.constants.O_RDWR | fs.constants.O_CREAT, FILE_MODE);
    let locked: boolean;
    try {
      locked = locking.tryLock(fd);
    } catch (err) {
      await closeFd(fd).catch(() => {});
      throw err;
    }
    if (!locked) {
      await closeFd(fd);
      throw new LockHeldError(path);
    }
    return new RealFileLock(path, fd, locking);
  }
}
