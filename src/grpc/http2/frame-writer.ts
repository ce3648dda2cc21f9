/**
 * The control and header frames a server connection sends, queued on its OutputQueue
 * (written once per event-loop turn): header blocks split at the client's
 * MAX_FRAME_SIZE (HEADERS + CONTINUATION, an HPACK table size update first when one is
 * pending), RST_STREAM, WINDOW_UPDATE, SETTINGS, PING and GOAWAY. DATA goes through the
 * flow control (flow-control.ts).
 */
import * as frames from "./frames.js";
import { tableSizeUpdate } from "./hpack-encoder.js";
import type { OutputQueue } from "./output-queue.js";
import type { PeerSettings } from "./peer-settings.js";

export class FrameWriter {
  constructor(
    readonly out: OutputQueue,
    private readonly peer: PeerSettings,
  ) {}

  /** Sends a header block as HEADERS (+ CONTINUATION when over the peer's frame size). */
  headerBlock(id: number, block: Buffer, endStream: boolean): void {
    let payload = block;
    if (this.peer.tableSizeUpdatePending) {
      this.peer.tableSizeUpdatePending = false;
      payload = Buffer.concat([tableSizeUpdate(), block]);
    }
    const max = this.peer.maxFrameSize;
    const end = endStream ? frames.FLAG_END_STREAM : 0;
    if (payload.length <= max) {
      this.out.frame(frames.HEADERS, end | frames.FLAG_END_HEADERS, id, payload);
      return;
    }
    this.out.frame(frames.HEADERS, end, id, payload.subarray(0, max));
    for (let at = max; at < payload.length; at += max) {
      const last = at + max >= payload.length;
      this.out.frame(
        frames.CONTINUATION,
        last ? frames.FLAG_END_HEADERS : 0,
        id,
        payload.subarray(at, Math.min(at + max, payload.length)),
      );
    }
  }

  reset(id: number, code: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(code);
    this.out.frame(frames.RST_STREAM, 0, id, p);
  }

  windowUpdate(id: number, increment: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(increment);
    this.out.frame(frames.WINDOW_UPDATE, 0, id, p);
  }

  goAway(lastId: number, code: number, debug = ""): void {
    const text = Buffer.from(debug, "utf8");
    const p = Buffer.allocUnsafe(8 + text.length);
    p.writeUInt32BE(lastId, 0);
    p.writeUInt32BE(code, 4);
    text.copy(p, 8);
    this.out.frame(frames.GOAWAY, 0, 0, p);
  }

  settings(payload: Buffer): void {
    this.out.frame(frames.SETTINGS, 0, 0, payload);
  }

  ping(payload: Buffer): void {
    this.out.frame(frames.PING, 0, 0, payload);
  }
}
