/**
 * The limits that keep an abusive client of a server connection from costing more than
 * it is allowed (see connection.ts's module comment for what each one ends):
 * - PINGs, and SETTINGS frames, that each come within `minPingIntervalMs` of the
 *   previous one with no HEADERS or DATA in between (received, or DATA sent: a client
 *   downloading a stream pings as it updates its window): more than `maxPingStrikes` of
 *   either kind;
 * - frames that do nothing (empty DATA without END_STREAM, empty CONTINUATION, PRIORITY,
 *   unknown types): more than `maxInvalidFrames` over the connection's life.
 *
 * Each method that counts returns false when the limit is passed: the connection then
 * ends with ENHANCE_YOUR_CALM.
 */
import type { Http2ConnectionOptions } from "./connection-options.js";

export class AbuseLimits {
  private pingStrikes = 0;
  private lastPingAt = -Infinity;
  private settingsStrikes = 0;
  private lastSettingsAt = -Infinity;
  private invalidFrames = 0;

  constructor(
    private readonly options: Pick<
      Http2ConnectionOptions,
      "minPingIntervalMs" | "maxPingStrikes" | "maxInvalidFrames"
    >,
  ) {}

  /** HEADERS or DATA arrived, or DATA was sent: PINGs and SETTINGS are welcome again. */
  activity(): void {
    this.pingStrikes = 0;
    this.settingsStrikes = 0;
  }

  /** A PING (not an ACK) arrived at `now` (performance.now()). */
  ping(now: number): boolean {
    if (now - this.lastPingAt < this.options.minPingIntervalMs) {
      if (++this.pingStrikes > this.options.maxPingStrikes) return false;
    }
    this.lastPingAt = now;
    return true;
  }

  /** A SETTINGS frame (not an ACK) arrived at `now` (performance.now()). */
  settings(now: number): boolean {
    if (now - this.lastSettingsAt < this.options.minPingIntervalMs) {
      if (++this.settingsStrikes > this.options.maxPingStrikes) return false;
    }
    this.lastSettingsAt = now;
    return true;
  }

  /** A frame that does nothing arrived. */
  invalid(): boolean {
    return ++this.invalidFrames <= this.options.maxInvalidFrames;
  }
}
