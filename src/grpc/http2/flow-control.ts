/**
 * Flow control of a server connection (RFC 9113, 5.2 and 6.9), both ways, and the
 * back-pressure the streams see.
 *
 * Sending (`SendFlow`): DATA leaves while the stream's window, the connection's window
 * and the client's MAX_FRAME_SIZE allow; a stream with bytes left over waits in
 * `windowBlocked` until a WINDOW_UPDATE (or a SETTINGS raising the initial window) lets
 * it go on. A stream told it is blocked (Http2Stream.sendBlocked: queued bytes, or the
 * socket's buffer full, or more than OUTPUT_HIGH_WATER bytes waiting to be written) is
 * told `onWritable` once none of that holds.
 *
 * Receiving (`ReceiveWindow`): every DATA frame counts against the connection's window,
 * whatever its stream's state; half a window consumed is given back at once with a
 * WINDOW_UPDATE on stream 0 (a stream's own window is given back as the layer above
 * consumes its body: Http2Stream.consumed).
 */
import type { Socket } from "node:net";
import * as frames from "./frames.js";
import { DEFAULT_WINDOW_SIZE } from "./frames.js";
import type { OutputQueue } from "./output-queue.js";
import type { PeerSettings } from "./peer-settings.js";
import type { Http2Stream } from "./stream.js";

/** Bytes of output waiting to be written beyond which streams are told to wait. */
const OUTPUT_HIGH_WATER = 256 * 1024;

export class SendFlow {
  /** The connection's send window (may not go past 2^31-1: the caller checks). */
  window = DEFAULT_WINDOW_SIZE;
  /** socket.write returned false and 'drain' has not come yet. */
  private socketFull = false;
  private readonly windowBlocked = new Set<Http2Stream>();
  /** Streams told they are blocked, to be told when they are not (onWritable). */
  private readonly writableWaiters = new Set<Http2Stream>();

  constructor(
    private readonly socket: Socket,
    private readonly out: OutputQueue,
    private readonly peer: PeerSettings,
  ) {}

  /**
   * True while the socket's buffer is full, or more than OUTPUT_HIGH_WATER bytes wait to
   * be written (queued in this turn of the event loop, or in the socket's buffer).
   */
  get socketBlocked(): boolean {
    return (
      this.socketFull || this.out.pendingBytes + this.socket.writableLength >= OUTPUT_HIGH_WATER
    );
  }

  /** `stream` was told it is blocked; tell it when that changes. */
  wantWritable(stream: Http2Stream): void {
    this.writableWaiters.add(stream);
  }

  /** Sends DATA frames of `data[at..]` while the windows allow; returns how far it got. */
  sendDataFrames(stream: Http2Stream, data: Uint8Array, at: number): number {
    const max = this.peer.maxFrameSize;
    while (at < data.length) {
      const n = Math.min(data.length - at, max, stream.sendWindow, this.window);
      if (n <= 0) break;
      this.out.frame(frames.DATA, 0, stream.id, data.subarray(at, at + n));
      stream.sendWindow -= n;
      this.window -= n;
      at += n;
    }
    return at;
  }

  /** A stream has queued data waiting for a window. */
  blockedOnWindow(stream: Http2Stream): void {
    this.windowBlocked.add(stream);
  }

  /** A WINDOW_UPDATE raised `stream`'s own window: it sends what it can. */
  streamWindowOpened(stream: Http2Stream): void {
    if (this.windowBlocked.has(stream) && stream.drainQueue()) {
      this.windowBlocked.delete(stream);
      this.notifyWritable(stream);
    }
  }

  /** The connection's window (or every stream's) grew: blocked streams send what they can. */
  resumeBlocked(): void {
    if (this.windowBlocked.size === 0 || this.window <= 0) return;
    for (const s of [...this.windowBlocked]) {
      if (this.window <= 0) break;
      if (s.drainQueue()) {
        this.windowBlocked.delete(s);
        this.notifyWritable(s);
      }
    }
  }

  /** The stream is gone: nothing is sent or told for it any more. */
  forget(stream: Http2Stream): void {
    this.windowBlocked.delete(stream);
    this.writableWaiters.delete(stream);
  }

  /** Every stream is gone (the connection closes). */
  forgetAll(): void {
    this.windowBlocked.clear();
  }

  /** After a flush of the output queue: `blocked` when the socket's buffer is full. */
  flushed(blocked: boolean): void {
    if (blocked) this.socketFull = true;
    else this.wakeWritable();
  }

  /** The socket's 'drain'. */
  drained(): void {
    this.socketFull = false;
    this.wakeWritable();
  }

  private notifyWritable(stream: Http2Stream): void {
    if (stream.wantsWritable && !this.socketBlocked && stream.queuedBytes === 0) {
      stream.wantsWritable = false;
      this.writableWaiters.delete(stream);
      stream.listener.onWritable();
    }
  }

  /** Tells the streams waiting for the socket that it has room again. */
  private wakeWritable(): void {
    if (this.writableWaiters.size === 0 || this.socketBlocked) return;
    for (const s of [...this.writableWaiters]) {
      if (s.closed) this.writableWaiters.delete(s);
      else this.notifyWritable(s);
    }
  }
}

/** The connection's receive window: `target` bytes granted, given back by halves. */
export class ReceiveWindow {
  private window = DEFAULT_WINDOW_SIZE;
  private unacked = 0;

  constructor(private readonly target: number) {}

  /**
   * The bytes to grant on top of the default window when the connection starts (0: none);
   * the caller sends them as a WINDOW_UPDATE on stream 0.
   */
  initialIncrement(): number {
    const extra = this.target - DEFAULT_WINDOW_SIZE;
    if (extra <= 0) return 0;
    this.window += extra;
    return extra;
  }

  /**
   * A DATA frame of `length` bytes arrived. Returns -1 when it exceeded the window (a
   * connection error), else the increment to send as a WINDOW_UPDATE now (0: none).
   */
  received(length: number): number {
    this.window -= length;
    if (this.window < 0) return -1;
    this.unacked += length;
    if (this.unacked < this.target / 2) return 0;
    const increment = this.unacked;
    this.window += increment;
    this.unacked = 0;
    return increment;
  }
}
