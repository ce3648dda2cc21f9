/**
 * FileSystemHost: the main thread's end of a file-system channel (file-system-channel.ts).
 * It serves a worker thread's file-system requests on a FileSystem of this thread and
 * hands its user the thread's other messages, in the order the thread posted them.
 *
 * Blocking: `nextMessage` blocks this thread (Atomics.wait) whenever it waits for the
 * worker, which is what keeps the two threads in lockstep (see the channel's contract), and
 * yields to the event loop only while it awaits a request on its FileSystem. Use it for
 * test file systems, never for the real one (which threads rebuild instead).
 *
 * Legal call order: `nextMessage` calls one at a time (await each), then `close`.
 */

import { MessageChannel, type MessagePort, receiveMessageOnPort } from "node:worker_threads";
import type { FileLock, FileSystem, ReadableFile, WritableFile } from "./file-system.js";
import {
  type FileReply,
  type FileRequest,
  SIGNAL_CLOSED,
  SIGNAL_SLOTS,
  SIGNAL_TO_HOST,
  SIGNAL_TO_PROXY,
  serializeFileError,
  type ThreadFileSystemSpec,
  type ToHost,
} from "./file-system-channel.js";

/** How long `nextMessage` waits for a silent thread before it gives up. */
const SILENCE_LIMIT_MS = 120_000;
/** Atomics.wait slices while waiting (the CLOSED flag is checked between them). */
const WAIT_SLICE_MS = 1000;

/** Thrown by `nextMessage` when the thread exited or stayed silent too long. */
export class FileSystemChannelClosedError extends Error {
  override readonly name = "FileSystemChannelClosedError";
}

export class FileSystemHost {
  /** Give this to the thread (and its port in the transfer list). */
  readonly spec: ThreadFileSystemSpec;
  private readonly port: MessagePort;
  private readonly signals: Int32Array;
  private readonly handles = new Map<number, ReadableFile | WritableFile | FileLock>();
  private nextId = 1;
  private received = 0;
  private replies = 0;
  private closed = false;

  constructor(private readonly fs: FileSystem) {
    const { port1, port2 } = new MessageChannel();
    const signals = new SharedArrayBuffer(SIGNAL_SLOTS * 4);
    this.port = port1;
    this.signals = new Int32Array(signals);
    this.spec = { kind: "proxy", port: port2, signals };
  }

  /** The port to list in the transfer list of the message or workerData carrying `spec`. */
  get transfer(): MessagePort {
    return (this.spec as { port: MessagePort }).port;
  }

  /**
   * Serves the thread's file-system requests until it posts a message of its own, and
   * returns that message. Throws FileSystemChannelClosedError when the thread exited (or
   * `close` was called) first.
   */
  async nextMessage(): Promise<unknown> {
    for (;;) {
      const message = this.receive();
      if (message.kind === "message") return message.message;
      const reply = await this.serve(message.request);
      if (this.closed) throw new FileSystemChannelClosedError("file-system channel closed");
      this.port.postMessage(reply);
      this.replies++;
      Atomics.store(this.signals, SIGNAL_TO_PROXY, this.replies);
      Atomics.notify(this.signals, SIGNAL_TO_PROXY);
    }
  }

  /**
   * Stops serving: a pending or later `nextMessage` throws. Files the thread left open stay
   * as they are (no operation is made on them, as for a thread that died), only forgotten.
   */
  close(): void {
    this.closed = true;
    this.port.close();
    this.handles.clear();
  }

  /** The thread's next message; blocks this thread until there is one. */
  private receive(): ToHost {
    let silentFor = 0;
    for (;;) {
      if (this.closed) throw new FileSystemChannelClosedError("file-system channel closed");
      const posted = Atomics.load(this.signals, SIGNAL_TO_HOST);
      if (posted > this.received) {
        // The thread increments the counter after posting: the message is queued.
        const m = receiveMessageOnPort(this.port);
        if (m !== undefined) {
          this.received++;
          return m.message as ToHost;
        }
      }
      if (Atomics.load(this.signals, SIGNAL_CLOSED) !== 0) {
        throw new FileSystemChannelClosedError("the worker thread exited");
      }
      if (silentFor >= SILENCE_LIMIT_MS) {
        throw new FileSystemChannelClosedError(
          `the worker thread sent nothing for ${SILENCE_LIMIT_MS / 1000} s`,
        );
      }
      if (Atomics.wait(this.signals, SIGNAL_TO_HOST, posted, WAIT_SLICE_MS) === "timed-out") {
        silentFor += WAIT_SLICE_MS;
      }
    }
  }

  /** Performs `request` on the file system; never throws (a failure is the reply). */
  private async serve(request: FileRequest): Promise<FileReply> {
    try {
      return { ok: true, value: await this.perform(request) };
    } catch (err) {
      return { ok: false, error: serializeFileError(err) };
    }
  }

  private open(handle: ReadableFile | WritableFile): { id: number; size: number } {
    const id = this.nextId++;
    this.handles.set(id, handle);
    return { id, size: handle.size };
  }

  private handle<T extends ReadableFile | WritableFile | FileLock>(id: number): T {
    const h = this.handles.get(id);
    if (h === undefined) throw new Error(`file-system channel: no open file #${id}`);
    return h as T;
  }

  private async perform(r: FileRequest): Promise<unknown> {
    const fs = this.fs;
    switch (r.op) {
      case "openReadable":
        return this.open(await fs.openReadable(r.path));
      case "createWritable":
        return this.open(await fs.createWritable(r.path));
      case "openWritable":
        return this.open(await fs.openWritable(r.path, r.length));
      case "rename":
        return fs.rename(r.path, r.to);
      case "remove":
        return fs.remove(r.path);
      case "link":
        return fs.link(r.path, r.to);
      case "list":
        return fs.list(r.path);
      case "removeDir":
        return fs.removeDir(r.path);
      case "mkdir":
        return fs.mkdir(r.path);
      case "exists":
        return fs.exists(r.path);
      case "fileSize":
        return fs.fileSize(r.path);
      case "syncDir":
        return fs.syncDir(r.path);
      case "lock": {
        const lock = await fs.lock(r.path);
        const id = this.nextId++;
        this.handles.set(id, lock);
        return id;
      }
      case "read": {
        const dst = new Uint8Array(r.length);
        const n = this.handle<ReadableFile>(r.id).read(dst, r.position);
        return n === dst.length ? dst : dst.slice(0, n);
      }
      case "append": {
        const file = this.handle<WritableFile>(r.id);
        file.append(r.data);
        return file.size;
      }
      case "preallocate":
        return this.handle<WritableFile>(r.id).preallocate(r.length);
      case "truncate": {
        const file = this.handle<WritableFile>(r.id);
        await file.truncate(r.length);
        return file.size;
      }
      case "datasync":
        return this.handle<WritableFile>(r.id).datasync();
      case "datasyncSync":
        return this.handle<WritableFile>(r.id).datasyncSync();
      case "sync":
        return this.handle<WritableFile>(r.id).sync();
      case "close":
        // Forgotten once closed: a failed close leaves the handle as it leaves the file.
        await this.handle<ReadableFile | WritableFile>(r.id).close();
        this.handles.delete(r.id);
        return undefined;
      case "release":
        await this.handle<FileLock>(r.id).release();
        this.handles.delete(r.id);
        return undefined;
    }
  }
}
