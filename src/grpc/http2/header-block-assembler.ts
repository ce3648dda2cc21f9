/**
 * The request header blocks of a server connection: HEADERS and its CONTINUATIONs put
 * together (padding and priority removed), limited in size, and HPACK-decoded with the
 * connection's one decoder (every block is decoded, in order, to keep its table in step).
 *
 * Contract:
 * - `headers` and `continuation` take a frame's payload `buf[start, end)`; each returns
 *   the decoded block once its END_HEADERS came, undefined while it is incomplete, or a
 *   ConnectionError (HEADERS on stream 0, bad padding, CONTINUATION without a block, a
 *   block over `maxHeaderBlockBytes` compressed: ENHANCE_YOUR_CALM, bad HPACK:
 *   COMPRESSION_ERROR). After an error the connection is closing: nothing more is taken.
 * - `inProgress` is true while a block awaits CONTINUATION: any other frame then is a
 *   connection error (the caller's check).
 * - A decoded list over `maxHeaderListSize` is not an error: the block comes back
 *   `oversized` (its request is refused, the connection goes on).
 * - An empty CONTINUATION without END_HEADERS is reported to `onInvalid` (a frame that
 *   does nothing, counted by the abuse limits).
 */
import type { ConnectionError } from "./connection-options.js";
import * as frames from "./frames.js";
import { ErrorCode } from "./frames.js";
import { FAILED, HpackDecoder, OVERSIZED } from "./hpack-decoder.js";

/** A complete, decoded header block. */
export interface HeaderBlock {
  readonly streamId: number;
  /** Names and values, alternating. */
  readonly fields: string[];
  /** The decoded list exceeded maxHeaderListSize (`fields` is then incomplete). */
  readonly oversized: boolean;
  /** The HEADERS frame carried END_STREAM. */
  readonly endStream: boolean;
}

export class HeaderBlockAssembler {
  private readonly decoder = new HpackDecoder(4096);
  /** The header block being received: its stream, fragments, size, END_STREAM flag. */
  private block:
    | { streamId: number; parts: Buffer[]; bytes: number; endStream: boolean }
    | undefined;

  constructor(
    private readonly maxHeaderBlockBytes: number,
    private readonly maxHeaderListSize: number,
    private readonly onInvalid: () => void,
  ) {}

  /** True while a header block awaits its CONTINUATION. */
  get inProgress(): boolean {
    return this.block !== undefined;
  }

  headers(
    flags: number,
    id: number,
    buf: Buffer,
    start: number,
    end: number,
  ): HeaderBlock | ConnectionError | undefined {
    if (id === 0) return { code: ErrorCode.PROTOCOL_ERROR, why: "HEADERS on stream 0" };
    let fragStart = start;
    let fragEnd = end;
    if ((flags & frames.FLAG_PADDED) !== 0) {
      if (end - start < 1) return { code: ErrorCode.PROTOCOL_ERROR, why: "bad HEADERS padding" };
      const pad = buf[start]!;
      fragStart++;
      fragEnd -= pad;
    }
    if ((flags & frames.FLAG_PRIORITY) !== 0) fragStart += 5;
    if (fragEnd < fragStart) return { code: ErrorCode.PROTOCOL_ERROR, why: "bad HEADERS padding" };
    this.block = {
      streamId: id,
      parts: [],
      bytes: 0,
      endStream: (flags & frames.FLAG_END_STREAM) !== 0,
    };
    return this.addFragment(flags, buf, fragStart, fragEnd);
  }

  continuation(
    flags: number,
    id: number,
    buf: Buffer,
    start: number,
    end: number,
  ): HeaderBlock | ConnectionError | undefined {
    if (this.block === undefined || this.block.streamId !== id) {
      return { code: ErrorCode.PROTOCOL_ERROR, why: "CONTINUATION without a header block" };
    }
    if (end === start && (flags & frames.FLAG_END_HEADERS) === 0) this.onInvalid();
    return this.addFragment(flags, buf, start, end);
  }

  private addFragment(
    flags: number,
    buf: Buffer,
    start: number,
    end: number,
  ): HeaderBlock | ConnectionError | undefined {
    const block = this.block!;
    block.bytes += end - start;
    if (block.bytes > this.maxHeaderBlockBytes) {
      return {
        code: ErrorCode.ENHANCE_YOUR_CALM,
        why: `a header block over ${this.maxHeaderBlockBytes} bytes`,
      };
    }
    if ((flags & frames.FLAG_END_HEADERS) === 0) {
      // Copied: the socket's chunk is not kept while the block is incomplete.
      block.parts.push(Buffer.from(buf.subarray(start, end)));
      return undefined;
    }
    this.block = undefined;
    let bytes = buf;
    let from = start;
    let to = end;
    if (block.parts.length > 0) {
      block.parts.push(buf.subarray(start, end));
      bytes = Buffer.concat(block.parts);
      from = 0;
      to = bytes.length;
    }
    const fields: string[] = [];
    const result = this.decoder.decode(bytes, from, to, fields, this.maxHeaderListSize);
    if (result === FAILED) return { code: ErrorCode.COMPRESSION_ERROR, why: "bad HPACK" };
    return {
      streamId: block.streamId,
      fields,
      oversized: result === OVERSIZED,
      endStream: block.endStream,
    };
  }
}

/** Whether a result of the assembler is a connection error. */
export function isConnectionError(r: HeaderBlock | ConnectionError): r is ConnectionError {
  return "code" in r;
}
