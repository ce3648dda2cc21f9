/**
 * One HTTP/2 stream of a server connection (a request and its response), as the layer
 * above sees it: the request's body arrives through the `listener`; the response is sent
 * with `sendHeaders`, `sendData` and `sendTrailers`, in that order, or cut short with
 * `reset`. States (RFC 9113, 5.1): open, half-closed (remote) once the client's
 * END_STREAM arrived, closed once both sides ended or either reset it.
 *
 * Flow control: `sendData` queues what the windows (the stream's and the connection's)
 * do not allow yet; `sendBlocked` is true while anything is queued or the socket's buffer
 * is full, and the listener's `onWritable` runs when that clears. The receive window is
 * replenished by `consumed(n)`: the layer above calls it once it has taken n bytes of
 * body, which is how a reader that stops reading stops the client.
 */
import type { Socket } from "node:net";

/**
 * What a stream needs of its connection (connection.ts implements it): the frames it
 * sends, the windows it shares, and the socket it is served over.
 */
export interface StreamHost {
  /** The connection's socket (for the peer's address). */
  readonly socket: Socket;
  /** True while the socket's buffer is full or much output waits (see connection.ts). */
  readonly socketBlocked: boolean;
  /** The stream receive window the server grants (SETTINGS_INITIAL_WINDOW_SIZE). */
  readonly streamWindowTarget: number;
  /** `stream` was told it is blocked: tell it (onWritable) when that changes. */
  wantWritable(stream: Http2Stream): void;
  /** Sends a header block as HEADERS (+ CONTINUATION). */
  sendHeaderBlock(id: number, block: Buffer, endStream: boolean): void;
  /** Sends DATA frames of `data[at..]` while the windows allow; returns how far it got. */
  sendDataFrames(stream: Http2Stream, data: Uint8Array, at: number): number;
  /** `stream` has queued data waiting for a window. */
  blockedOnWindow(stream: Http2Stream): void;
  sendReset(id: number, code: number): void;
  sendWindowUpdate(id: number, increment: number): void;
  /** The stream is closed on both sides: forget it. */
  closeStream(stream: Http2Stream): void;
  /** The layer above settled one stream's work (see Http2Handler.onStream). */
  settled(): void;
}

/** What the layer above is told about a stream. */
export interface StreamListener {
  /** Body bytes (a view valid for as long as the caller keeps it), and/or the end of the body. */
  onData(data: Buffer | undefined, endStream: boolean): void;
  /** The stream was reset by the client (its error code), or its connection went away. */
  onReset(code: number): void;
  /** `sendBlocked` became false. */
  onWritable(): void;
}

const NO_LISTENER: StreamListener = {
  onData() {},
  onReset() {},
  onWritable() {},
};

type Queued = { data: Uint8Array; at: number } | { trailers: Buffer };

export class Http2Stream {
  listener: StreamListener = NO_LISTENER;
  /** The client sent END_STREAM (or reset). */
  remoteClosed = false;
  /** The server sent END_STREAM (or reset). */
  localClosed = false;
  /** Closed: removed from the connection; nothing more is sent or received. */
  closed = false;
  headersSent = false;
  /** Send window (may go negative after a SETTINGS change). */
  sendWindow: number;
  /** Receive window: body bytes the client may still send. */
  receiveWindow: number;
  /** Body bytes consumed and not yet returned with a WINDOW_UPDATE. */
  private unacked = 0;
  private queue: Queued[] = [];
  /** Body bytes in `queue`. */
  queuedBytes = 0;
  /** sendBlocked was reported true to someone who will want onWritable. */
  wantsWritable = false;

  constructor(
    readonly connection: StreamHost,
    readonly id: number,
    sendWindow: number,
    receiveWindow: number,
  ) {
    this.sendWindow = sendWindow;
    this.receiveWindow = receiveWindow;
  }

  /** True while body bytes wait for flow control, or the socket's buffer is full. */
  get sendBlocked(): boolean {
    const blocked = this.queuedBytes > 0 || this.connection.socketBlocked;
    if (blocked) {
      this.wantsWritable = true;
      this.connection.wantWritable(this);
    }
    return blocked;
  }

  /** Response headers (a complete HPACK block); `endStream` for a trailers-only response. */
  sendHeaders(block: Buffer, endStream = false): void {
    if (this.localClosed) return;
    this.headersSent = true;
    this.connection.sendHeaderBlock(this.id, block, endStream);
    if (endStream) this.endedLocally();
  }

  /** Body bytes; queued while the windows are closed. The bytes must not change afterwards. */
  sendData(data: Uint8Array): void {
    if (this.localClosed || data.length === 0) return;
    if (this.queue.length === 0) {
      const sent = this.connection.sendDataFrames(this, data, 0);
      if (sent === data.length) return;
      this.queue.push({ data, at: sent });
      this.queuedBytes += data.length - sent;
      this.connection.blockedOnWindow(this);
      return;
    }
    this.queue.push({ data, at: 0 });
    this.queuedBytes += data.length;
  }

  /** Trailers (a complete HPACK block) with END_STREAM, after the body queued before them. */
  sendTrailers(block: Buffer): void {
    if (this.localClosed) return;
    if (this.queue.length === 0) {
      this.connection.sendHeaderBlock(this.id, block, true);
      this.endedLocally();
    } else {
      this.queue.push({ trailers: block });
      this.localClosed = true; // nothing more may be queued after the trailers
    }
  }

  /** Sends RST_STREAM with `code` (dropping anything queued) and closes the stream. */
  reset(code: number): void {
    if (this.closed) return;
    this.queue = [];
    this.queuedBytes = 0;
    this.remoteClosed = true;
    this.localClosed = true;
    this.connection.sendReset(this.id, code);
    this.connection.closeStream(this);
  }

  /** The layer above has taken `n` body bytes: they may be sent again (WINDOW_UPDATE). */
  consumed(n: number): void {
    if (this.closed || this.remoteClosed || n <= 0) return;
    this.unacked += n;
    const target = this.connection.streamWindowTarget;
    if (this.unacked >= target / 2) {
      this.receiveWindow += this.unacked;
      this.connection.sendWindowUpdate(this.id, this.unacked);
      this.unacked = 0;
    }
  }

  /**
   * For the connection: sends what the windows now allow of the queue. Returns true when
   * the queue is empty.
   */
  drainQueue(): boolean {
    while (this.queue.length > 0) {
      const head = this.queue[0]!;
      if ("trailers" in head) {
        this.queue.shift();
        this.connection.sendHeaderBlock(this.id, head.trailers, true);
        this.endedLocally();
        return true;
      }
      const sent = this.connection.sendDataFrames(this, head.data, head.at);
      this.queuedBytes -= sent - head.at;
      head.at = sent;
      if (sent < head.data.length) return false;
      this.queue.shift();
    }
    return true;
  }

  /** For the connection: the stream is gone (client reset, connection closed). */
  gone(code: number): void {
    if (this.closed) return;
    this.queue = [];
    this.queuedBytes = 0;
    this.remoteClosed = true;
    this.localClosed = true;
    this.closed = true;
    this.listener.onReset(code);
  }

  private endedLocally(): void {
    this.localClosed = true;
    if (this.remoteClosed) {
      this.connection.closeStream(this);
    } else {
      // A complete response before the whole request: ask the client to stop sending
      // (RFC 9113, 8.1), without an error.
      this.remoteClosed = true;
      this.connection.sendReset(this.id, 0);
      this.connection.closeStream(this);
    }
  }
}
