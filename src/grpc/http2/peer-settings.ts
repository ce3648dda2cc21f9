/**
 * SETTINGS both ways for a server connection (RFC 9113, 6.5): the client's values that
 * this side honours (frame size, initial stream window, a pending HPACK table size
 * update), and the SETTINGS frame this side sends first.
 *
 * What the server does not act on is ignored: MAX_CONCURRENT_STREAMS (it pushes nothing),
 * MAX_HEADER_LIST_SIZE (advisory), and unknown settings. HEADER_TABLE_SIZE only makes the
 * next header block start with a table size update (the encoder keeps no dynamic table).
 */
import type { ConnectionError, Http2ConnectionOptions } from "./connection-options.js";
import * as frames from "./frames.js";
import {
  DEFAULT_MAX_FRAME_SIZE,
  DEFAULT_WINDOW_SIZE,
  ErrorCode,
  MAX_MAX_FRAME_SIZE,
  MAX_WINDOW_SIZE,
} from "./frames.js";

export class PeerSettings {
  /** SETTINGS_MAX_FRAME_SIZE of the client: the largest frame this side sends. */
  maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
  /** SETTINGS_INITIAL_WINDOW_SIZE of the client: a new stream's send window. */
  initialWindow = DEFAULT_WINDOW_SIZE;
  /** The next header block sent starts with an HPACK table size update. */
  tableSizeUpdatePending = true;

  /**
   * Applies the payload `buf[start, end)` of a SETTINGS frame (not an ACK; its length a
   * multiple of 6), in order. A change of the initial window goes to `windowDelta` (which
   * moves every open stream's send window, and returns an error when one overflows).
   * Returns the first connection error, after which nothing more is applied.
   */
  apply(
    buf: Buffer,
    start: number,
    end: number,
    windowDelta: (delta: number) => ConnectionError | undefined,
  ): ConnectionError | undefined {
    for (let at = start; at < end; at += 6) {
      const setting = buf.readUInt16BE(at);
      const value = buf.readUInt32BE(at + 2);
      switch (setting) {
        case frames.SETTINGS_HEADER_TABLE_SIZE:
          this.tableSizeUpdatePending = true;
          break;
        case frames.SETTINGS_ENABLE_PUSH:
          if (value > 1) {
            return { code: ErrorCode.PROTOCOL_ERROR, why: "SETTINGS_ENABLE_PUSH not 0 or 1" };
          }
          break;
        case frames.SETTINGS_INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW_SIZE) {
            return {
              code: ErrorCode.FLOW_CONTROL_ERROR,
              why: "SETTINGS_INITIAL_WINDOW_SIZE too large",
            };
          }
          const delta = value - this.initialWindow;
          this.initialWindow = value;
          const err = windowDelta(delta);
          if (err !== undefined) return err;
          break;
        }
        case frames.SETTINGS_MAX_FRAME_SIZE:
          if (value < DEFAULT_MAX_FRAME_SIZE || value > MAX_MAX_FRAME_SIZE) {
            return { code: ErrorCode.PROTOCOL_ERROR, why: "SETTINGS_MAX_FRAME_SIZE out of range" };
          }
          this.maxFrameSize = value;
          break;
        default:
          break;
      }
    }
    return undefined;
  }
}

/** The payload of the server's SETTINGS frame: its stream limit, stream window, header list size. */
export function serverSettingsPayload(o: Http2ConnectionOptions): Buffer {
  const entries: [number, number][] = [
    [frames.SETTINGS_MAX_CONCURRENT_STREAMS, o.maxConcurrentStreams],
    [frames.SETTINGS_INITIAL_WINDOW_SIZE, o.streamWindowBytes],
    [frames.SETTINGS_MAX_HEADER_LIST_SIZE, o.maxHeaderListSize],
  ];
  const p = Buffer.allocUnsafe(entries.length * 6);
  entries.forEach(([id, value], i) => {
    p.writeUInt16BE(id, i * 6);
    p.writeUInt32BE(value, i * 6 + 2);
  });
  return p;
}
