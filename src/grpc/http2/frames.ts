/**
 * HTTP/2 wire constants (RFC 9113): frame types, flags, error codes, settings, the client
 * connection preface, and the 9-octet frame header.
 *
 * Frame header: length (24 bits), type (8), flags (8), reserved bit + stream id (31), all
 * big-endian.
 */
export const FRAME_HEADER_BYTES = 9;

export const DATA = 0x0;
export const HEADERS = 0x1;
export const PRIORITY = 0x2;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PUSH_PROMISE = 0x5;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
export const CONTINUATION = 0x9;

export const FLAG_END_STREAM = 0x1;
export const FLAG_ACK = 0x1;
export const FLAG_END_HEADERS = 0x4;
export const FLAG_PADDED = 0x8;
export const FLAG_PRIORITY = 0x20;

/** Error codes of RST_STREAM and GOAWAY (RFC 9113, section 7). */
export const ErrorCode = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

/** Flow-control windows start at this size (RFC 9113, 6.9.2). */
export const DEFAULT_WINDOW_SIZE = 65_535;
/** The largest window (2^31 - 1). */
export const MAX_WINDOW_SIZE = 0x7fff_ffff;
/** The frame size every endpoint accepts, and the least SETTINGS_MAX_FRAME_SIZE. */
export const DEFAULT_MAX_FRAME_SIZE = 16_384;
/** The largest SETTINGS_MAX_FRAME_SIZE (2^24 - 1). */
export const MAX_MAX_FRAME_SIZE = 0xff_ffff;
/** The largest stream id (2^31 - 1). */
export const MAX_STREAM_ID = 0x7fff_ffff;

/** What a client sends first (RFC 9113, 3.4), before its SETTINGS frame. */
export const CLIENT_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

/** Writes a frame header at `buf[at]`; returns the offset after it. */
export function writeFrameHeader(
  buf: Uint8Array,
  at: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): number {
  buf[at] = length >>> 16;
  buf[at + 1] = (length >>> 8) & 0xff;
  buf[at + 2] = length & 0xff;
  buf[at + 3] = type;
  buf[at + 4] = flags;
  buf[at + 5] = (streamId >>> 24) & 0x7f;
  buf[at + 6] = (streamId >>> 16) & 0xff;
  buf[at + 7] = (streamId >>> 8) & 0xff;
  buf[at + 8] = streamId & 0xff;
  return at + FRAME_HEADER_BYTES;
}

/** The name of an error code, for messages ("ENHANCE_YOUR_CALM", or the number). */
export function errorCodeName(code: number): string {
  for (const [name, value] of Object.entries(ErrorCode)) if (value === code) return name;
  return `0x${code.toString(16)}`;
}
