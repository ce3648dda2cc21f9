/**
 * A raw HTTP/2 client connection for abuse tests: frames written by hand over a TCP
 * socket (so a test can send what no well-behaved library would: floods, resets, endless
 * header blocks, huge windows) and the server's frames parsed just enough to see GOAWAY
 * and RST_STREAM. Header blocks are encoded with the server's own HPACK encoder (literals
 * without indexing), which any HPACK decoder accepts.
 */
import { connect, type Socket } from "node:net";
import { encodeHeaderBlock } from "../../src/grpc/http2/hpack-encoder.js";

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export function h2frame(
  type: number,
  flags: number,
  stream: number,
  payload: Buffer = Buffer.alloc(0),
): Buffer {
  const out = Buffer.alloc(9 + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(stream, 5);
  payload.copy(out, 9);
  return out;
}

export function requestBlock(path: string, extra: [string, string][] = []): Buffer {
  return encodeHeaderBlock([
    [":method", "POST"],
    [":scheme", "http"],
    [":path", path],
    [":authority", "localhost"],
    ["content-type", "application/grpc"],
    ["te", "trailers"],
    ...extra,
  ]);
}

export class RawH2 {
  readonly socket: Socket;
  goaway: number | undefined;
  resets = 0;
  closed = false;
  private pending = Buffer.alloc(0);
  /** Resolves once connected and the server's SETTINGS arrived (and were acknowledged). */
  readonly ready: Promise<void>;
  private onSettings: (() => void) | undefined;

  constructor(port: number, settings: [number, number][] = []) {
    this.socket = connect(port, "127.0.0.1");
    this.socket.on("error", () => {});
    this.socket.on("close", () => {
      this.closed = true;
    });
    this.socket.on("data", (chunk: Buffer) => this.onData(chunk));
    const p = Buffer.alloc(settings.length * 6);
    settings.forEach(([id, v], i) => {
      p.writeUInt16BE(id, i * 6);
      p.writeUInt32BE(v, i * 6 + 2);
    });
    this.ready = new Promise((resolve) => {
      this.onSettings = resolve;
    });
    this.socket.write(Buffer.concat([PREFACE, h2frame(4, 0, 0, p)]));
  }

  write(...frames: Buffer[]): boolean {
    return this.socket.write(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
  }

  /** Stops reading (the kernel's buffers fill, then the server's socket blocks). */
  stopReading(): void {
    this.socket.pause();
  }

  destroy(): void {
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 9) {
      const len = this.pending.readUIntBE(0, 3);
      if (this.pending.length < 9 + len) break;
      const type = this.pending[3]!;
      if (type === 7) this.goaway = this.pending.readUInt32BE(13);
      if (type === 3) this.resets++;
      if (type === 4 && (this.pending[4]! & 1) === 0) {
        this.socket.write(h2frame(4, 1, 0));
        this.onSettings?.();
        this.onSettings = undefined;
      }
      this.pending = this.pending.subarray(9 + len);
    }
  }
}
