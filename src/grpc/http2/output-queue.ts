/**
 * The frames one connection has to send, gathered and written to its socket once per turn
 * of the event loop (on process.nextTick after the first frame), so that the responses of
 * all calls completed in one turn leave in one write.
 *
 * Every frame is copied into an arena, so that a flush hands the socket one buffer: a
 * corked run of many writes (one writev of many chunks) costs the process more CPU than the
 * copy. When the socket took the whole write at once (nothing left in its buffer), the
 * kernel holds the bytes and the arena is written from its start again; otherwise the
 * region handed to the socket is never written again. An arena that fills is replaced by
 * one twice its size (up to MAX_ARENA_BYTES, or the frame's size if larger), so a
 * connection that streams much grows its arena and one that sends little keeps a small one.
 */
import type { Socket } from "node:net";
import { FRAME_HEADER_BYTES, writeFrameHeader } from "./frames.js";

const MIN_ARENA_BYTES = 16 * 1024;
const MAX_ARENA_BYTES = 256 * 1024;

export class OutputQueue {
  private arena = Buffer.allocUnsafe(MIN_ARENA_BYTES);
  /** Start of the arena region not yet handed to the socket, and the end of what is written. */
  private start = 0;
  private at = 0;
  /** Regions of arenas that filled up before this flush, in order. */
  private full: Buffer[] = [];
  private scheduled = false;
  private closed = false;
  /** Bytes queued here and not yet handed to the socket. */
  pendingBytes = 0;

  constructor(
    private readonly socket: Socket,
    /** Called after each flush: `blocked` when the socket's buffer is full (write returned false). */
    private readonly onFlushed: (blocked: boolean) => void,
  ) {}

  /** Queues one frame; `payload` (if any) is its whole payload. */
  frame(type: number, flags: number, streamId: number, payload?: Uint8Array): void {
    const length = payload === undefined ? 0 : payload.length;
    this.reserve(FRAME_HEADER_BYTES + length);
    this.at = writeFrameHeader(this.arena, this.at, length, type, flags, streamId);
    if (payload !== undefined && length > 0) {
      this.arena.set(payload, this.at);
      this.at += length;
    }
    this.pendingBytes += FRAME_HEADER_BYTES + length;
    this.schedule();
  }

  /** Queues bytes that are not a frame (a client's connection preface). */
  bytes(data: Uint8Array): void {
    this.reserve(data.length);
    this.arena.set(data, this.at);
    this.at += data.length;
    this.pendingBytes += data.length;
    this.schedule();
  }

  /** Queues a frame whose payload is `prefix` followed by `body`. */
  frame2(
    type: number,
    flags: number,
    streamId: number,
    prefix: Uint8Array,
    body: Uint8Array,
  ): void {
    const length = prefix.length + body.length;
    this.reserve(FRAME_HEADER_BYTES + length);
    this.at = writeFrameHeader(this.arena, this.at, length, type, flags, streamId);
    this.arena.set(prefix, this.at);
    this.at += prefix.length;
    this.arena.set(body, this.at);
    this.at += body.length;
    this.pendingBytes += FRAME_HEADER_BYTES + length;
    this.schedule();
  }

  /** Writes everything queued now (also done on the next tick by itself). */
  flush(): void {
    this.scheduled = false;
    if (this.closed) return;
    if (this.at === this.start && this.full.length === 0) return;
    const region = this.arena.subarray(this.start, this.at);
    let out = region;
    if (this.full.length > 0) {
      this.full.push(region);
      out = Buffer.concat(this.full);
      this.full = [];
    }
    this.pendingBytes = 0;
    const ok = this.socket.write(out);
    if (this.socket.writableLength === 0) {
      // The kernel has every byte handed to the socket so far: the arena is free again.
      this.start = 0;
      this.at = 0;
    } else {
      this.start = this.at;
    }
    this.onFlushed(!ok);
  }

  /** Drops whatever is queued; later frames are dropped too. */
  close(): void {
    this.closed = true;
    this.full = [];
    this.pendingBytes = 0;
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    process.nextTick(flushQueue, this);
  }

  private reserve(bytes: number): void {
    if (this.at + bytes <= this.arena.length) return;
    if (this.at > this.start) this.full.push(this.arena.subarray(this.start, this.at));
    const grown = Math.min(MAX_ARENA_BYTES, 2 * this.arena.length);
    this.arena = Buffer.allocUnsafe(Math.max(grown, bytes));
    this.start = 0;
    this.at = 0;
  }
}

function flushQueue(q: OutputQueue): void {
  q.flush();
}
