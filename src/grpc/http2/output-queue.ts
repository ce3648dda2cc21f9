/**
 * The frames one connection has to send, gathered and written to its socket once per turn
 * of the event loop (on process.nextTick after the first frame), so that the responses of
 * all calls completed in one turn leave in one write.
 *
 * Frame headers and small payloads are copied into a shared arena; payloads of
 * COPY_LIMIT bytes or more are kept by reference until the flush (the caller must not
 * change them afterwards). A flush hands the socket one buffer: the arena region alone, or
 * everything queued copied together. The arena region handed to the socket is never
 * written again.
 */
import type { Socket } from "node:net";
import { FRAME_HEADER_BYTES, writeFrameHeader } from "./frames.js";

const ARENA_BYTES = 32 * 1024;
const COPY_LIMIT = 2048;

export class OutputQueue {
  private arena = Buffer.allocUnsafe(ARENA_BYTES);
  /** Start of the arena region not yet queued as a chunk, and the end of what is written. */
  private start = 0;
  private at = 0;
  private chunks: Buffer[] = [];
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
    const copy = length < COPY_LIMIT;
    this.reserve(FRAME_HEADER_BYTES + (copy ? length : 0));
    this.at = writeFrameHeader(this.arena, this.at, length, type, flags, streamId);
    if (payload !== undefined && length > 0) {
      if (copy) {
        this.arena.set(payload, this.at);
        this.at += length;
      } else {
        this.seal();
        this.chunks.push(Buffer.isBuffer(payload) ? payload : Buffer.from(payload));
      }
    }
    this.pendingBytes += FRAME_HEADER_BYTES + length;
    this.schedule();
  }

  /** Queues a frame whose payload is `prefix` (copied, small) followed by `body`. */
  frame2(
    type: number,
    flags: number,
    streamId: number,
    prefix: Uint8Array,
    body: Uint8Array,
  ): void {
    const length = prefix.length + body.length;
    const copy = body.length < COPY_LIMIT;
    this.reserve(FRAME_HEADER_BYTES + prefix.length + (copy ? body.length : 0));
    this.at = writeFrameHeader(this.arena, this.at, length, type, flags, streamId);
    this.arena.set(prefix, this.at);
    this.at += prefix.length;
    if (copy) {
      this.arena.set(body, this.at);
      this.at += body.length;
    } else {
      this.seal();
      this.chunks.push(Buffer.isBuffer(body) ? body : Buffer.from(body));
    }
    this.pendingBytes += FRAME_HEADER_BYTES + length;
    this.schedule();
  }

  /** Writes everything queued now (also done on the next tick by itself). */
  flush(): void {
    this.scheduled = false;
    if (this.closed) return;
    this.seal();
    const chunks = this.chunks;
    if (chunks.length === 0) return;
    this.chunks = [];
    this.pendingBytes = 0;
    // One contiguous buffer: a corked run of writes (one writev of many chunks) costs the
    // process more CPU than the copy does.
    const ok = this.socket.write(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    this.onFlushed(!ok);
  }

  /** Drops whatever is queued; later frames are dropped too. */
  close(): void {
    this.closed = true;
    this.chunks = [];
    this.pendingBytes = 0;
  }

  private schedule(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    process.nextTick(flushQueue, this);
  }

  /** Queues the arena's written region as a chunk. */
  private seal(): void {
    if (this.at > this.start) {
      this.chunks.push(this.arena.subarray(this.start, this.at));
      this.start = this.at;
    }
  }

  private reserve(bytes: number): void {
    if (this.at + bytes <= this.arena.length) return;
    this.seal();
    this.arena = Buffer.allocUnsafe(Math.max(ARENA_BYTES, bytes));
    this.start = 0;
    this.at = 0;
  }
}

function flushQueue(q: OutputQueue): void {
  q.flush();
}
