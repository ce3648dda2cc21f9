/**
 * FaultInjectingFileSystem: wraps any FileSystem (and every file it opens), counts each
 * operation and fails the ones an injector chooses; modelled on Pebble's errorfs.
 *
 * Protocol, before every operation (listed in FileOpKind):
 * 1. the operation gets the next index (0-based, over all kinds) and its kind's count grows;
 * 2. it is appended to `log` when `keepLog` is set;
 * 3. `onOp(op, index)` runs (e.g. to crash-clone a MemoryFileSystem exactly before op N);
 * 4. `injector(op, index)` decides: `true` fails it with an InjectedFaultError (code "EIO"),
 *    an Error fails it with that error, `false`/`undefined` lets it through.
 * A failed operation is not performed at all (a failed append writes nothing). Synchronous
 * operations (read, append, preallocate) throw; asynchronous ones reject.
 * `FileLock.release` is passed through without being counted.
 */

import type { FileLock, FileSystem, ReadableFile, WritableFile } from "./file-system.js";
import { MemoryFileSystem } from "./memory-file-system.js";

export type FileOpKind =
  | "openReadable"
  | "createWritable"
  | "openWritable"
  | "rename"
  | "link"
  | "remove"
  | "removeDir"
  | "list"
  | "mkdir"
  | "exists"
  | "fileSize"
  | "syncDir"
  | "lock"
  | "read"
  | "append"
  | "preallocate"
  | "truncate"
  | "datasync"
  | "sync"
  | "close";

export const FILE_OP_KINDS: readonly FileOpKind[] = [
  "openReadable",
  "createWritable",
  "openWritable",
  "rename",
  "link",
  "remove",
  "removeDir",
  "list",
  "mkdir",
  "exists",
  "fileSize",
  "syncDir",
  "lock",
  "read",
  "append",
  "preallocate",
  "truncate",
  "datasync",
  "sync",
  "close",
];

/** One operation about to be performed. */
export interface FileOp {
  readonly kind: FileOpKind;
  /** The file or directory operated on (for rename: the source). */
  readonly path: string;
  /** rename and link only: the destination. */
  readonly to?: string;
  /** read: the position; append: the file's logical size (where the bytes go). */
  readonly offset?: number;
  /**
   * read: dst.length; append: data.length; preallocate, truncate: the target length;
   * openWritable: the requested length, when given.
   */
  readonly length?: number;
}

/** Decides whether an operation fails: true or an Error fails it. */
export type Injector = (op: FileOp, index: number) => Error | undefined | boolean;

/** Observes each operation before the injector runs. */
export type OpHook = (op: FileOp, index: number) => void;

export interface FaultInjectingOptions {
  injector?: Injector;
  onOp?: OpHook;
  /**
   * When an injected failure hits datasync/sync and the wrapped file system is a
   * MemoryFileSystem, drop that file's unsynced writes (as a kernel may drop dirty pages
   * after a failed fsync). Default false.
   */
  dropUnsyncedOnSyncFailure?: boolean;
  /** Record every operation in `log`. Default false. */
  keepLog?: boolean;
}

/** The error of an operation failed by an injector that returned `true`. */
export class InjectedFaultError extends Error {
  readonly code = "EIO";
  readonly op: FileOp;

  constructor(op: FileOp) {
    super(`EIO: injected fault, ${op.kind} '${op.path}'`);
    this.name = "InjectedFaultError";
    this.op = op;
  }
}

/** What a wrapped file calls before each operation; throws when the operation is to fail. */
interface Gate {
  check(op: FileOp): void;
  /** For datasync/sync of `file`: drops its unsynced writes on failure if configured. */
  checkSync(op: FileOp, file: WritableFile): void;
}

function zeroCounts(): Record<FileOpKind, number> {
  const counts = {} as Record<FileOpKind, number>;
  for (const kind of FILE_OP_KINDS) counts[kind] = 0;
  return counts;
}

export class FaultInjectingFileSystem implements FileSystem {
  /** Operations seen so far, per kind (failed ones included). */
  readonly counts: Record<FileOpKind, number> = zeroCounts();
  /** Operations seen so far, in order; filled only with `keepLog`. */
  readonly log: FileOp[] = [];
  private total = 0;
  private injector: Injector | undefined;
  private onOp: OpHook | undefined;
  private readonly keepLog: boolean;
  private readonly dropUnsyncedOnSyncFailure: boolean;
  private readonly gate: Gate = {
    check: (op) => this.check(op),
    checkSync: (op, file) => this.checkSync(op, file),
  };

  constructor(
    readonly inner: FileSystem,
    options: FaultInjectingOptions = {},
  ) {
    this.injector = options.injector;
    this.onOp = options.onOp;
    this.keepLog = options.keepLog ?? false;
    this.dropUnsyncedOnSyncFailure = options.dropUnsyncedOnSyncFailure ?? false;
  }

  /** An injector failing only the n-th (0-based) operation that matches `predicate`. */
  static failNth(n: number, predicate: (op: FileOp) => boolean = () => true): Injector {
    let seen = 0;
    return (op) => predicate(op) && seen++ === n;
  }

  /** An injector failing every operation that matches `predicate`. */
  static failWhere(predicate: (op: FileOp) => boolean): Injector {
    return (op) => predicate(op);
  }

  /** Operations seen so far, all kinds. */
  get opCount(): number {
    return this.total;
  }

  count(kind: FileOpKind): number {
    return this.counts[kind];
  }

  setInjector(injector: Injector | undefined): void {
    this.injector = injector;
  }

  setOnOp(onOp: OpHook | undefined): void {
    this.onOp = onOp;
  }

  /** Runs the protocol for `op`; returns the error to fail it with, if any. */
  private intercept(op: FileOp): Error | undefined {
    const index = this.total++;
    this.counts[op.kind]++;
    if (this.keepLog) this.log.push(op);
    this.onOp?.(op, index);
    const verdict = this.injector?.(op, index);
    if (verdict instanceof Error) return verdict;
    return verdict === true ? new InjectedFaultError(op) : undefined;
  }

  /** Throws if `op` is to fail. */
  private check(op: FileOp): void {
    const err = this.intercept(op);
    if (err !== undefined) throw err;
  }

  /** Like `check` for datasync/sync of `file`, dropping its unsynced writes if configured. */
  private checkSync(op: FileOp, file: WritableFile): void {
    const err = this.intercept(op);
    if (err === undefined) return;
    if (this.dropUnsyncedOnSyncFailure && this.inner instanceof MemoryFileSystem) {
      this.inner.dropUnsyncedWrites(file);
    }
    throw err;
  }

  async openReadable(path: string): Promise<ReadableFile> {
    this.check({ kind: "openReadable", path });
    return new FaultReadableFile(this.gate, await this.inner.openReadable(path));
  }

  openReadableSync(path: string): ReadableFile {
    this.check({ kind: "openReadable", path });
    return new FaultReadableFile(this.gate, this.inner.openReadableSync(path));
  }

  async createWritable(path: string): Promise<WritableFile> {
    this.check({ kind: "createWritable", path });
    return new FaultWritableFile(this.gate, await this.inner.createWritable(path));
  }

  async openWritable(path: string, length?: number): Promise<WritableFile> {
    this.check(
      length === undefined
        ? { kind: "openWritable", path }
        : { kind: "openWritable", path, length },
    );
    return new FaultWritableFile(this.gate, await this.inner.openWritable(path, length));
  }

  async rename(from: string, to: string): Promise<void> {
    this.check({ kind: "rename", path: from, to });
    await this.inner.rename(from, to);
  }

  async link(from: string, to: string): Promise<void> {
    this.check({ kind: "link", path: from, to });
    await this.inner.link(from, to);
  }

  async remove(path: string): Promise<void> {
    this.check({ kind: "remove", path });
    await this.inner.remove(path);
  }

  async removeDir(path: string): Promise<void> {
    this.check({ kind: "removeDir", path });
    await this.inner.removeDir(path);
  }

  async list(dir: string): Promise<string[]> {
    this.check({ kind: "list", path: dir });
    return this.inner.list(dir);
  }

  async mkdir(dir: string): Promise<void> {
    this.check({ kind: "mkdir", path: dir });
    await this.inner.mkdir(dir);
  }

  async exists(path: string): Promise<boolean> {
    this.check({ kind: "exists", path });
    return this.inner.exists(path);
  }

  async fileSize(path: string): Promise<number> {
    this.check({ kind: "fileSize", path });
    return this.inner.fileSize(path);
  }

  async syncDir(dir: string): Promise<void> {
    this.check({ kind: "syncDir", path: dir });
    await this.inner.syncDir(dir);
  }

  async lock(path: string): Promise<FileLock> {
    this.check({ kind: "lock", path });
    return this.inner.lock(path);
  }
}

class FaultReadableFile implements ReadableFile {
  constructor(
    private readonly gate: Gate,
    private readonly inner: ReadableFile,
  ) {}

  get path(): string {
    return this.inner.path;
  }

  get size(): number {
    return this.inner.size;
  }

  read(dst: Uint8Array, position: number): number {
    this.gate.check({ kind: "read", path: this.path, offset: position, length: dst.length });
    return this.inner.read(dst, position);
  }

  async close(): Promise<void> {
    this.gate.check({ kind: "close", path: this.path });
    await this.inner.close();
  }
}

class FaultWritableFile implements WritableFile {
  constructor(
    private readonly gate: Gate,
    private readonly inner: WritableFile,
  ) {}

  get path(): string {
    return this.inner.path;
  }

  get size(): number {
    return this.inner.size;
  }

  append(data: Uint8Array): void {
    this.gate.check({ kind: "append", path: this.path, offset: this.size, length: data.length });
    this.inner.append(data);
  }

  preallocate(length: number): void {
    this.gate.check({ kind: "preallocate", path: this.path, length });
    this.inner.preallocate(length);
  }

  async truncate(length: number): Promise<void> {
    this.gate.check({ kind: "truncate", path: this.path, length });
    await this.inner.truncate(length);
  }

  async datasync(): Promise<void> {
    this.gate.checkSync({ kind: "datasync", path: this.path }, this.inner);
    await this.inner.datasync();
  }

  /** Counted and injected as a "datasync" operation, like its async twin. */
  datasyncSync(): void {
    this.gate.checkSync({ kind: "datasync", path: this.path }, this.inner);
    this.inner.datasyncSync();
  }

  async sync(): Promise<void> {
    this.gate.checkSync({ kind: "sync", path: this.path }, this.inner);
    await this.inner.sync();
  }

  async close(): Promise<void> {
    this.gate.check({ kind: "close", path: this.path });
    await this.inner.close();
  }
}
