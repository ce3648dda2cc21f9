/**
 * What a server connection (connection.ts) is configured with, and what it hands the
 * layer above (gRPC): the limits each connection keeps, their defaults, and the handler
 * interface through which requests go up.
 */
import type { RequestHead } from "./request-head.js";
import type { Http2Stream } from "./stream.js";

export interface Http2ConnectionOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS, and the number of streams the handler works on at once. */
  maxConcurrentStreams: number;
  /** SETTINGS_INITIAL_WINDOW_SIZE: body bytes a stream may send ahead (>= 65535). */
  streamWindowBytes: number;
  /** Body bytes all streams of the connection may send ahead (>= 65535). */
  connectionWindowBytes: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE: decoded header bytes a request may carry. */
  maxHeaderListSize: number;
  /** Compressed bytes of one header block (HEADERS + CONTINUATION) before the connection is closed. */
  maxHeaderBlockBytes: number;
  handshakeTimeoutMs: number;
  keepaliveTimeMs: number;
  keepaliveTimeoutMs: number;
  minPingIntervalMs: number;
  maxPingStrikes: number;
  maxInvalidFrames: number;
  /** Bytes waiting in the socket's buffer beyond which a reply-seeking client is cut off. */
  maxOutputBytes: number;
}

export const DEFAULT_HTTP2_OPTIONS: Readonly<Http2ConnectionOptions> = Object.freeze({
  maxConcurrentStreams: 100,
  streamWindowBytes: 1024 * 1024,
  connectionWindowBytes: 16 * 1024 * 1024,
  maxHeaderListSize: 16 * 1024,
  maxHeaderBlockBytes: 64 * 1024,
  handshakeTimeoutMs: 10_000,
  keepaliveTimeMs: 2 * 60 * 60 * 1000,
  keepaliveTimeoutMs: 20_000,
  minPingIntervalMs: 1000,
  maxPingStrikes: 10,
  maxInvalidFrames: 1000,
  maxOutputBytes: 4 * 1024 * 1024,
});

/** What the layer above (gRPC) implements. */
export interface Http2Handler {
  /**
   * A new request. `head` is undefined when its header block exceeded maxHeaderListSize
   * (the handler should refuse it). Called only while `busy < maxConcurrentStreams` and
   * the server's Admission admits it; the handler counts a stream as busy from here until
   * its work settled (`settled()`). `arrivedAt` is when its HEADERS arrived (Date.now()
   * time), earlier than now when the stream waited for a slot.
   */
  onStream(
    stream: Http2Stream,
    head: RequestHead | undefined,
    endStream: boolean,
    arrivedAt: number,
  ): void;
  /** The connection is closed (every stream has been told, through onReset). */
  onClose(): void;
}

/** A connection error found by a part of the connection: GOAWAY with `code`, `why` logged. */
export interface ConnectionError {
  readonly code: number;
  readonly why: string;
}
