/**
 * gRPC's length-prefixed messages (the body of a call, in each direction): a 1-octet
 * compressed flag, a 4-octet big-endian length, then the message.
 *
 * `MessageDeframer` takes a request body in pieces, as it arrives, and hands out whole
 * messages (views of the received bytes when a message lies in one piece). It refuses a
 * message whose declared length exceeds `maxBytes` as soon as the prefix is in (before
 * buffering it), and a compressed one: this server negotiates no compression.
 */
export const PREFIX_BYTES = 5;

export type DeframeError = { kind: "too-large"; length: number } | { kind: "compressed" };

export class MessageDeframer {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);
  private prefixHave = 0;
  /** Length of the message being gathered, or -1 while reading a prefix. */
  private length = -1;
  private parts: Buffer[] = [];
  private have = 0;

  constructor(private readonly maxBytes: number) {}

  /** True when the body so far ends between messages. */
  get atBoundary(): boolean {
    return this.prefixHave === 0 && this.length < 0;
  }

  /** Feeds `data`; calls `onMessage` for each message completed. Stops at the first error. */
  push(data: Buffer, onMessage: (message: Buffer) => void): DeframeError | undefined {
    let at = 0;
    const end = data.length;
    while (at < end) {
      if (this.length < 0) {
        // Fast path: a whole prefix, and maybe the whole message, in this piece.
        if (this.prefixHave === 0 && end - at >= PREFIX_BYTES) {
          const flag = data[at]!;
          const length = data.readUInt32BE(at + 1);
          const error = this.check(flag, length);
          if (error !== undefined) return error;
          at += PREFIX_BYTES;
          if (end - at >= length) {
            onMessage(data.subarray(at, at + length));
            at += length;
            continue;
          }
          this.length = length;
        } else {
          const n = Math.min(PREFIX_BYTES - this.prefixHave, end - at);
          data.copy(this.prefix, this.prefixHave, at, at + n);
          this.prefixHave += n;
          at += n;
          if (this.prefixHave < PREFIX_BYTES) return undefined;
          this.prefixHave = 0;
          const length = this.prefix.readUInt32BE(1);
          const error = this.check(this.prefix[0]!, length);
          if (error !== undefined) return error;
          if (length === 0) {
            onMessage(Buffer.alloc(0));
            continue;
          }
          this.length = length;
        }
      }
      const n = Math.min(this.length - this.have, end - at);
      this.parts.push(data.subarray(at, at + n));
      this.have += n;
      at += n;
      if (this.have === this.length) {
        const message =
          this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.have);
        this.parts = [];
        this.have = 0;
        this.length = -1;
        onMessage(message);
      }
    }
    return undefined;
  }

  private check(flag: number, length: number): DeframeError | undefined {
    if (flag !== 0) return { kind: "compressed" };
    if (length > this.maxBytes) return { kind: "too-large", length };
    return undefined;
  }
}

/** Messages up to this size are sent as one buffer (prefix and message copied together). */
const JOIN_LIMIT = 4096;

/** The framed message: one buffer, or the prefix and the message itself when it is large. */
export function frameMessage(message: Uint8Array): Uint8Array[] {
  const length = message.length;
  if (length <= JOIN_LIMIT) {
    const out = Buffer.allocUnsafe(PREFIX_BYTES + length);
    out[0] = 0;
    out.writeUInt32BE(length, 1);
    out.set(message, PREFIX_BYTES);
    return [out];
  }
  const prefix = Buffer.allocUnsafe(PREFIX_BYTES);
  prefix[0] = 0;
  prefix.writeUInt32BE(length, 1);
  return [prefix, message];
}
