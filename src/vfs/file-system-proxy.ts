/**
 * ProxyFileSystem: a worker thread's FileSystem whose every operation is performed by the
 * main thread's FileSystemHost (file-system-channel.ts). Each call blocks the thread until
 * the host replies, so the synchronous operations (read, append) stay synchronous and
 * the asynchronous ones resolve already settled. Errors come back as Errors with the
 * original's name, message, code, syscall and path (file-system-channel.ts), thrown (or
 * rejected) by the same call that failed on the main thread.
 *
 * `post` sends the host's user a message of the thread's own (e.g. a job's result) in the
 * same stream, so the host sees it after every operation that preceded it.
 */

import { type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import type { FileLock, FileSystem, ReadableFile, WritableFile } from "./file-system.js";
import {
  deserializeFileError,
  type FileReply,
  type FileRequest,
  SIGNAL_CLOSED,
  SIGNAL_TO_HOST,
  SIGNAL_TO_PROXY,
  type ToHost,
} from "./file-system-channel.js";

export class ProxyFileSystem implements FileSystem {
  private readonly signals: Int32Array;
  private requests = 0;

  /**
   * The proxy over `port` and `signals` (from a ThreadFileSystemSpec of kind "proxy").
   * REQUIRES one proxy per channel, on a thread other than the host's.
   */
  constructor(
    private readonly port: MessagePort,
    signals: SharedArrayBuffer,
  ) {
    this.signals = new Int32Array(signals);
    const closed = this.signals;
    process.on("exit", () => {
      Atomics.store(closed, SIGNAL_CLOSED, 1);
      Atomics.notify(closed, SIGNAL_TO_HOST);
    });
  }

  /** Sends the host's user `message` (structured-clonable); does not wait. */
  post(message: unknown): void {
    this.send({ kind: "message", message });
  }

  private send(message: ToHost): void {
    this.port.postMessage(message);
    Atomics.add(this.signals, SIGNAL_TO_HOST, 1);
    Atomics.notify(this.signals, SIGNAL_TO_HOST);
  }

  /** Performs `request` on the host; returns its value or throws its error. */
  call(request: FileRequest): unknown {
    this.send({ kind: "fs", request });
    const want = ++this.requests;
    for (;;) {
      const replies = Atomics.load(this.signals, SIGNAL_TO_PROXY);
      if (replies >= want) break;
      Atomics.wait(this.signals, SIGNAL_TO_PROXY, replies);
    }
    const reply = receiveMessageOnPort(this.port)?.message as FileReply | undefined;
    if (reply === undefined) throw new Error("file-system channel: reply missing");
    if (!reply.ok) throw deserializeFileError(reply.error);
    return reply.value;
  }

  private opened(value: unknown): { id: number; size: number } {
    return value as { id: number; size: number };
  }

  async openReadable(path: string): Promise<ReadableFile> {
    return this.openReadableSync(path);
  }

  openReadableSync(path: string): ReadableFile {
    const { id, size } = this.opened(this.call({ op: "openReadable", path }));
    return new ProxyReadableFile(this, id, path, size);
  }

  async createWritable(path: string): Promise<WritableFile> {
    const { id, size } = this.opened(this.call({ op: "createWritable", path }));
    return new ProxyWritableFile(this, id, path, size);
  }

  async openWritable(path: string, length?: number): Promise<WritableFile> {
    const { id, size } = this.opened(this.call({ op: "openWritable", path, length }));
    return new ProxyWritableFile(this, id, path, size);
  }

  async rename(from: string, to: string): Promise<void> {
    this.call({ op: "rename", path: from, to });
  }

  async remove(path: string): Promise<void> {
    this.call({ op: "remove", path });
  }

  async link(from: string, to: string): Promise<void> {
    this.call({ op: "link", path: from, to });
  }

  async list(dir: string): Promise<string[]> {
    return this.call({ op: "list", path: dir }) as string[];
  }

  async removeDir(path: string): Promise<void> {
    this.call({ op: "removeDir", path });
  }

  async mkdir(dir: string): Promise<void> {
    this.call({ op: "mkdir", path: dir });
  }

  async exists(path: string): Promise<boolean> {
    return this.call({ op: "exists", path }) as boolean;
  }

  async fileSize(path: string): Promise<number> {
    return this.call({ op: "fileSize", path }) as number;
  }

  async syncDir(dir: string): Promise<void> {
    this.call({ op: "syncDir", path: dir });
  }

  async lock(path: string): Promise<FileLock> {
    const id = this.call({ op: "lock", path }) as number;
    return {
      path,
      release: async () => {
        this.call({ op: "release", id });
      },
    };
  }
}

class ProxyReadableFile implements ReadableFile {
  constructor(
    private readonly fs: ProxyFileSystem,
    private readonly id: number,
    readonly path: string,
    readonly size: number,
  ) {}

  read(dst: Uint8Array, position: number): number {
    const bytes = this.fs.call({
      op: "read",
      id: this.id,
      position,
      length: dst.length,
    }) as Uint8Array;
    dst.set(bytes);
    return bytes.length;
  }

  async close(): Promise<void> {
    this.fs.call({ op: "close", id: this.id });
  }
}

class ProxyWritableFile implements WritableFile {
  constructor(
    private readonly fs: ProxyFileSystem,
    private readonly id: number,
    readonly path: string,
    public size: number,
  ) {}

  append(data: Uint8Array): void {
    // A copy of exactly the bytes: a view would carry its whole buffer across.
    this.size = this.fs.call({ op: "append", id: this.id, data: data.slice() }) as number;
  }

  preallocate(length: number): void {
    this.fs.call({ op: "preallocate", id: this.id, length });
  }

  async truncate(length: number): Promise<void> {
    this.size = this.fs.call({ op: "truncate", id: this.id, length }) as number;
  }

  async datasync(): Promise<void> {
    this.fs.call({ op: "datasync", id: this.id });
  }

  datasyncSync(): void {
    this.fs.call({ op: "datasyncSync", id: this.id });
  }

  async sync(): Promise<void> {
    this.fs.call({ op: "sync", id: this.id });
  }

  async close(): Promise<void> {
    this.fs.call({ op: "close", id: this.id });
  }
}
