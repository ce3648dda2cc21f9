/**
 * GatedFileSystem: wraps a FileSystem and holds chosen `sync`/`datasync` calls (by path)
 * until the test opens the gate, so a test can keep a flush "in progress" (its table file
 * written but not yet synced) for as long as it likes. Slowness, not failure: a held sync
 * resolves normally once released, or rejects with the error given to `fail`.
 */
import type {
  FileLock,
  FileSystem,
  ReadableFile,
  WritableFile,
} from "../../src/vfs/file-system.js";

export class GatedFileSystem implements FileSystem {
  private held = false;
  private waiters: Array<{ resolve: () => void; reject: (err: unknown) => void }> = [];
  private failure: Error | undefined;
  /** Syncs waiting at the gate right now. */
  waiting = 0;
  /** Syncs that have reached the gate (waited or not). */
  arrived = 0;

  constructor(
    readonly inner: FileSystem,
    /** Which files' syncs the gate applies to. */
    readonly gated: (path: string) => boolean = (path) => path.endsWith(".sst"),
  ) {}

  /** From now on, gated syncs wait until `release` (or `fail`). */
  hold(): void {
    this.held = true;
  }

  /** Lets every waiting and future gated sync through. */
  release(): void {
    this.held = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }

  /** Fails every waiting and future gated sync with `err` (until `release`). */
  fail(err: Error): void {
    this.failure = err;
    this.held = false;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
  }

  /** @internal called by gated files before they sync. */
  async pass(path: string): Promise<void> {
    if (!this.gated(path)) return;
    this.arrived++;
    if (this.failure !== undefined) throw this.failure;
    if (!this.held) return;
    this.waiting++;
    try {
      await new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
    } finally {
      this.waiting--;
    }
  }

  openReadable(path: string): Promise<ReadableFile> {
    return this.inner.openReadable(path);
  }

  async createWritable(path: string): Promise<WritableFile> {
    return new GatedWritableFile(this, await this.inner.createWritable(path));
  }

  async openWritable(path: string, length?: number): Promise<WritableFile> {
    return new GatedWritableFile(this, await this.inner.openWritable(path, length));
  }

  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
  }

  openReadableSync(path: string): ReadableFile {
    return this.inner.openReadableSync(path);
  }

  link(from: string, to: string): Promise<void> {
    return this.inner.link(from, to);
  }

  remove(path: string): Promise<void> {
    return this.inner.remove(path);
  }

  removeDir(path: string): Promise<void> {
    return this.inner.removeDir(path);
  }

  list(dir: string): Promise<string[]> {
    return this.inner.list(dir);
  }

  mkdir(dir: string): Promise<void> {
    return this.inner.mkdir(dir);
  }

  exists(path: string): Promise<boolean> {
    return this.inner.exists(path);
  }

  fileSize(path: string): Promise<number> {
    return this.inner.fileSize(path);
  }

  syncDir(dir: string): Promise<void> {
    return this.inner.syncDir(dir);
  }

  lock(path: string): Promise<FileLock> {
    return this.inner.lock(path);
  }
}

class GatedWritableFile implements WritableFile {
  constructor(
    private readonly gate: GatedFileSystem,
    private readonly inner: WritableFile,
  ) {}

  get path(): string {
    return this.inner.path;
  }

  get size(): number {
    return this.inner.size;
  }

  append(data: Uint8Array): void {
    this.inner.append(data);
  }

  preallocate(length: number): void {
    this.inner.preallocate(length);
  }

  truncate(length: number): Promise<void> {
    return this.inner.truncate(length);
  }

  async datasync(): Promise<void> {
    await this.gate.pass(this.path);
    await this.inner.datasync();
  }

  async sync(): Promise<void> {
    await this.gate.pass(this.path);
    await this.inner.sync();
  }

  /** Not gated (it cannot wait): only the write-ahead log uses it. */
  datasyncSync(): void {
    this.inner.datasyncSync();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Resolves after `n` turns of the event loop (setImmediate), letting microtask work finish. */
export async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** True iff `p` settles within `n` turns of the event loop. */
export async function settlesWithin(p: Promise<unknown>, n = 20): Promise<boolean> {
  let settled = false;
  p.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let i = 0; i < n && !settled; i++) await ticks(1);
  return settled;
}

/** Waits (up to `n` turns of the event loop) until `cond()` holds; returns whether it did. */
export async function eventually(cond: () => boolean | Promise<boolean>, n = 50): Promise<boolean> {
  for (let i = 0; i < n; i++) {
    if (await cond()) return true;
    await ticks(1);
  }
  return cond();
}
