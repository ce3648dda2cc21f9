/**
 * A FileSystem wrapper that gives the simulated disk a latency in virtual time: each
 * `datasync`, `sync` and `syncDir` waits a drawn number of virtual milliseconds before it
 * reaches the wrapped file system, so that a node's Ready cycle spans virtual time (ticks
 * and messages arrive while its disk works) and a crash can strike while written data is
 * not yet durable. After `kill()` (the node crashed) waiting calls never complete: the
 * crashed incarnation's continuations never run.
 */
import type {
  FileLock,
  FileSystem,
  ReadableFile,
  WritableFile,
} from "../../../src/vfs/file-system.js";
import type { Scheduler } from "./scheduler.js";

export class LatencyFileSystem implements FileSystem {
  #dead = false;
  /** Syncs waiting for their latency right now. */
  waiting = 0;
  /** Syncs that reached the file system (counted when they start waiting). */
  syncs = 0;

  constructor(
    readonly inner: FileSystem,
    private readonly scheduler: Scheduler,
    /** The latency of the next sync, in virtual ms. */
    private readonly latency: () => number,
  ) {}

  /** The incarnation using this file system crashed: pending and future syncs never complete. */
  kill(): void {
    this.#dead = true;
  }

  get dead(): boolean {
    return this.#dead;
  }

  /** @internal Waits the disk's latency (forever once killed). */
  async wait(): Promise<void> {
    this.syncs++;
    this.waiting++;
    await new Promise<void>((resolve) => {
      this.scheduler.after(this.latency(), () => {
        if (!this.#dead) resolve();
      });
    });
    this.waiting--;
  }

  openReadable(path: string): Promise<ReadableFile> {
    return this.inner.openReadable(path);
  }

  openReadableSync(path: string): ReadableFile {
    return this.inner.openReadableSync(path);
  }

  async createWritable(path: string): Promise<WritableFile> {
    return new LatencyWritableFile(this, await this.inner.createWritable(path));
  }

  async openWritable(path: string, length?: number): Promise<WritableFile> {
    return new LatencyWritableFile(this, await this.inner.openWritable(path, length));
  }

  rename(from: string, to: string): Promise<void> {
    return this.inner.rename(from, to);
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

  async syncDir(dir: string): Promise<void> {
    await this.wait();
    await this.inner.syncDir(dir);
  }

  lock(path: string): Promise<FileLock> {
    return this.inner.lock(path);
  }
}

class LatencyWritableFile implements WritableFile {
  constructor(
    private readonly fs: LatencyFileSystem,
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
    await this.fs.wait();
    await this.inner.datasync();
  }

  async sync(): Promise<void> {
    await this.fs.wait();
    await this.inner.sync();
  }

  /** Cannot wait in virtual time (it blocks): syncs at once. */
  datasyncSync(): void {
    this.inner.datasyncSync();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
