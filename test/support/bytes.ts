/** Text and bytes in tests: keys and values are bytes, assertions read better as text. */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The UTF-8 bytes of `s`. */
export function bytes(s: string): Uint8Array {
  return encoder.encode(s);
}

/** `b` decoded as UTF-8. */
export function text(b: Uint8Array): string {
  return decoder.decode(b);
}

/** `b` as one character per byte (byte-exact for any bytes); undefined stays undefined. */
export function latin1(b: Uint8Array): string;
export function latin1(b: Uint8Array | undefined): string | undefined;
export function latin1(b: Uint8Array | undefined): string | undefined {
  return b === undefined
    ? undefined
    : Buffer.from(b.buffer, b.byteOffset, b.length).toString("latin1");
}
