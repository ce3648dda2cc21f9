/**
 * The receive side of an HTTP/2 client connection (RFC 9113): the socket's chunks cut
 * into frames, and header blocks put together from HEADERS and its CONTINUATIONs.
 *
 * Contract:
 * - `push(chunk)` hands each complete frame to the sink, in order, as it arrives: a
 *   header block (HEADERS + CONTINUATION, padding and priority removed) as one
 *   `headerBlock` call, every other frame as `frame` with its payload `buf[from, to)`
 *   (a view of the socket's chunk: valid only during the call).
 * - A frame that spans chunks is put together (one copy) once its last byte arrived.
 * - Framing errors (HEADERS on stream 0, CONTINUATION out of place, padding beyond the
 *   frame) go to `protocolError` with PROTOCOL_ERROR, a frame longer than the
 *   MAX_FRAME_SIZE this client advertised (RFC 9113 §4.2; neither client raises it from
 *   the default 16,384) with FRAME_SIZE_ERROR, as soon as its header arrives, so a peer
 *   cannot make it buffer up to the 16 MiB a frame header can declare. The reader then
 *   stops, as it does after `stop()`.
 */
import * as h2 from "./frames.js";

const FH = h2.FRAME_HEADER_BYTES;

/** What a client acts on in a server's SETTINGS frame; a setting the frame lacks is absent. */
export interface ServerSettings {
  initialWindow?: number;
  maxFrame?: number;
  maxConcurrent?: number;
}

/** A connection error found in a SETTINGS frame: its error code and why. */
export interface SettingsError {
  readonly code: number;
  readonly what: string;
}

/**
 * Reads the payload `buf[from, to)` of a SETTINGS frame (not an ACK) and checks the
 * values RFC 9113 6.5.2 bounds; the last occurrence of a setting wins. HEADER_TABLE_SIZE
 * is ignored (the clients' encoder uses no dynamic table), as are unknown settings.
 */
export function readServerSettings(
  buf: Buffer,
  from: number,
  to: number,
): ServerSettings | SettingsError {
  if ((to - from) % 6 !== 0) {
    return { code: h2.ErrorCode.PROTOCOL_ERROR, what: "SETTINGS of the wrong size" };
  }
  const out: ServerSettings = {};
  for (let p = from; p < to; p += 6) {
    const value = buf.readUInt32BE(p + 2);
    switch (buf.readUInt16BE(p)) {
      case h2.SETTINGS_INITIAL_WINDOW_SIZE:
        if (value > h2.MAX_WINDOW_SIZE) {
          return { code: h2.ErrorCode.FLOW_CONTROL_ERROR, what: "INITIAL_WINDOW_SIZE too large" };
        }
        out.initialWindow = value;
        break;
      case h2.SETTINGS_MAX_FRAME_SIZE:
        if (value < h2.DEFAULT_MAX_FRAME_SIZE || value > h2.MAX_MAX_FRAME_SIZE) {
          return { code: h2.ErrorCode.PROTOCOL_ERROR, what: "MAX_FRAME_SIZE out of range" };
        }
        out.maxFrame = value;
        break;
      case h2.SETTINGS_MAX_CONCURRENT_STREAMS:
        out.maxConcurrent = value;
        break;
      default:
        break;
    }
  }
  return out;
}

export function isSettingsError(s: ServerSettings | SettingsError): s is SettingsError {
  return "code" in s;
}

export interface FrameSink {
  frame(buf: Buffer, from: number, to: number, type: number, flags: number, id: number): void;
  headerBlock(id: number, block: Buffer, from: number, to: number, endStream: boolean): void;
  /** A connection error: `code` is PROTOCOL_ERROR or FRAME_SIZE_ERROR. */
  protocolError(what: string, code: number): void;
}

export class FrameReader {
  private stopped = false;
  /** Unparsed input: chunks that together hold less than one frame. */
  private rest: Buffer[] = [];
  private restBytes = 0;
  /** A header block awaiting CONTINUATION. */
  private contStream = 0;
  private contChunks: Buffer[] = [];
  private contEndStream = false;

  constructor(
    private readonly sink: FrameSink,
    /** The MAX_FRAME_SIZE this endpoint advertised: longer frames are a connection error. */
    private readonly maxFrameSize: number = h2.DEFAULT_MAX_FRAME_SIZE,
  ) {}

  /** No more frames are delivered (the connection is done). */
  stop(): void {
    this.stopped = true;
    this.rest = [];
    this.contChunks = [];
  }

  push(chunk: Buffer): void {
    if (this.stopped) return;
    let buf = chunk;
    if (this.restBytes > 0) {
      // The rest of a frame that began in an earlier chunk: wait until it is complete.
      this.rest.push(chunk);
      this.restBytes += chunk.length;
      if (this.restBytes < FH) return;
      if (this.rest[0]!.length < FH) this.rest = [Buffer.concat(this.rest, this.restBytes)];
      const declared = this.rest[0]!.readUIntBE(0, 3);
      if (declared > this.maxFrameSize) {
        this.tooLong(declared);
        return;
      }
      if (this.restBytes < FH + declared) return;
      buf = this.rest.length === 1 ? this.rest[0]! : Buffer.concat(this.rest, this.restBytes);
      this.rest = [];
      this.restBytes = 0;
    }
    let at = 0;
    const end = buf.length;
    while (end - at >= FH && !this.stopped) {
      const length = (buf[at]! << 16) | (buf[at + 1]! << 8) | buf[at + 2]!;
      if (length > this.maxFrameSize) {
        this.tooLong(length);
        return;
      }
      if (end - at - FH < length) break;
      const type = buf[at + 3]!;
      const flags = buf[at + 4]!;
      const id = buf.readUInt32BE(at + 5) & 0x7fff_ffff;
      const from = at + FH;
      at = from + length;
      this.dispatch(buf, from, at, type, flags, id);
    }
    if (at < end && !this.stopped) {
      this.rest.push(buf.subarray(at));
      this.restBytes = end - at;
    }
  }

  private dispatch(
    buf: Buffer,
    from: number,
    to: number,
    type: number,
    flags: number,
    id: number,
  ): void {
    if (this.contStream !== 0 && type !== h2.CONTINUATION) {
      this.error("a header block without its CONTINUATION");
      return;
    }
    if (type === h2.HEADERS) {
      if (id === 0) {
        this.error("HEADERS on stream 0");
        return;
      }
      let start = from;
      let end = to;
      if ((flags & h2.FLAG_PADDED) !== 0) {
        end -= buf[start]!;
        start++;
      }
      if ((flags & h2.FLAG_PRIORITY) !== 0) start += 5;
      if (start > end) {
        this.error("HEADERS padding exceeds the frame");
        return;
      }
      const endStream = (flags & h2.FLAG_END_STREAM) !== 0;
      if ((flags & h2.FLAG_END_HEADERS) !== 0)
        this.sink.headerBlock(id, buf, start, end, endStream);
      else {
        this.contStream = id;
        this.contChunks = [Buffer.from(buf.subarray(start, end))];
        this.contEndStream = endStream;
      }
      return;
    }
    if (type === h2.CONTINUATION) {
      if (this.contStream === 0 || id !== this.contStream) {
        this.error("CONTINUATION out of place");
        return;
      }
      this.contChunks.push(Buffer.from(buf.subarray(from, to)));
      if ((flags & h2.FLAG_END_HEADERS) !== 0) {
        const block = Buffer.concat(this.contChunks);
        this.contStream = 0;
        this.contChunks = [];
        this.sink.headerBlock(id, block, 0, block.length, this.contEndStream);
      }
      return;
    }
    this.sink.frame(buf, from, to, type, flags, id);
  }

  private error(what: string): void {
    this.stop();
    this.sink.protocolError(what, h2.ErrorCode.PROTOCOL_ERROR);
  }

  private tooLong(length: number): void {
    this.stop();
    this.sink.protocolError(
      `a frame of ${length} bytes, over the MAX_FRAME_SIZE of ${this.maxFrameSize}`,
      h2.ErrorCode.FRAME_SIZE_ERROR,
    );
  }
}
