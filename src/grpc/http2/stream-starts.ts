/**
 * When a server connection's new streams go to the layer above (Http2Handler.onStream):
 * at once while the handler works on fewer than `maxConcurrentStreams` of this
 * connection's streams and the server-wide Admission (admission.ts) admits one; otherwise
 * the stream waits, without being started, keeping what arrives meanwhile (at most the
 * stream's window) to hand over on start. A stream reset while it waits is dropped.
 *
 * Rapid reset (CVE-2023-44487): streams whose work has not settled count, reset or not;
 * once 4 x `maxConcurrentStreams` streams have waited for this connection's own limit
 * during one busy spell, `open` returns false and the connection is to be closed
 * (ENHANCE_YOUR_CALM).
 *
 * Legal call order, per stream: `open` once; then, once per stream started (by `open` or
 * `startWaiting`), `settled()` when its work settled.
 */
import type { Admission, AdmissionMember } from "./admission.js";
import type { Http2Handler } from "./connection-options.js";
import type { RequestHead } from "./request-head.js";
import type { Http2Stream, StreamListener } from "./stream.js";

/**
 * A stream whose request waits for the handler to have room: it keeps what arrives
 * meanwhile to hand over on start. A reset drops it from its connection's waiting streams.
 */
class Waiting implements StreamListener {
  private data: Buffer[] = [];
  private ended = false;
  /** Date.now() when the HEADERS arrived. */
  readonly arrivedAt = Date.now();

  constructor(
    private readonly starts: StreamStarts,
    readonly stream: Http2Stream,
    readonly head: RequestHead | undefined,
    readonly endStream: boolean,
  ) {
    stream.listener = this;
  }

  onData(data: Buffer | undefined, endStream: boolean): void {
    if (data !== undefined) this.data.push(data);
    if (endStream) this.ended = true;
  }

  onReset(): void {
    this.data = [];
    this.starts.unwait(this);
  }

  onWritable(): void {}

  /** Replays what arrived to the stream's listener (set by the handler's onStream). */
  replay(): void {
    const data = this.data;
    this.data = [];
    const last = data.length - 1;
    for (let i = 0; i <= last; i++) this.stream.listener.onData(data[i]!, this.ended && i === last);
    if (this.ended && data.length === 0 && !this.endStream)
      this.stream.listener.onData(undefined, true);
  }
}

export class StreamStarts implements AdmissionMember {
  /** Streams the handler works on (see Http2Handler.onStream). */
  busy = 0;
  /** Streams waiting to be started, oldest first (none of them reset). */
  private readonly waiting: Waiting[] = [];
  /** Streams that waited for this connection's own limit during this busy spell. */
  private spellWaits = 0;

  constructor(
    private readonly maxConcurrentStreams: number,
    /** Shared by the server's connections. */
    private readonly admission: Admission,
    private readonly handler: Http2Handler,
    /** True once the connection takes no more work (closing). */
    private readonly closing: () => boolean,
  ) {}

  /**
   * A new stream: started now, or set to wait. Returns false when too many streams waited
   * during this busy spell (the connection is to be closed; the stream is not kept).
   */
  open(stream: Http2Stream, head: RequestHead | undefined, endStream: boolean): boolean {
    if (this.busy >= this.maxConcurrentStreams) {
      // Open streams are at most maxConcurrentStreams: past that, the streams that waited
      // were reset while their calls ran.
      if (++this.spellWaits > 4 * this.maxConcurrentStreams) return false;
      this.waiting.push(new Waiting(this, stream, head, endStream));
      return true;
    }
    if (this.waiting.length > 0 || !this.admission.admits(this.busy)) {
      this.waiting.push(new Waiting(this, stream, head, endStream));
      this.admission.wait(this);
      return true;
    }
    this.start(stream, head, endStream, Date.now());
    return true;
  }

  /** The handler settled one stream's work: waiting streams may start. */
  settled(): void {
    this.busy--;
    // The slot goes to the connection whose turn it is (this one, if it is its turn).
    this.admission.released();
    const max = this.maxConcurrentStreams;
    while (this.waiting.length > 0 && this.busy < max && this.admission.admits(this.busy))
      this.startWaiting();
    if (this.waiting.length > 0 && this.busy < max) this.admission.wait(this);
    if (this.busy < max) this.spellWaits = 0;
  }

  /** For Admission: starts the stream that waited longest, if this connection's limit allows. */
  startWaiting(): boolean {
    if (this.closing() || this.busy >= this.maxConcurrentStreams) return false;
    const w = this.waiting.shift();
    if (w === undefined) return false;
    this.start(w.stream, w.head, w.endStream, w.arrivedAt);
    if (!w.stream.closed) w.replay();
    return true;
  }

  /** For Admission. */
  get hasWaiting(): boolean {
    return this.waiting.length > 0;
  }

  /** For Waiting: its stream was reset before it started. */
  unwait(w: Waiting): void {
    const i = this.waiting.indexOf(w);
    if (i >= 0) this.waiting.splice(i, 1);
  }

  /** The connection closed: no waiting stream will start. */
  dropWaiting(): void {
    this.waiting.length = 0;
  }

  private start(
    stream: Http2Stream,
    head: RequestHead | undefined,
    endStream: boolean,
    arrivedAt: number,
  ): void {
    this.busy++;
    this.admission.acquired();
    this.handler.onStream(stream, head, endStream, arrivedAt);
  }
}
