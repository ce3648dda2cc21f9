import { KvError } from "../errors.js";

/** What the public API accepts as a key or value: bytes, or a string taken as UTF-8. */
export type BytesLike = Uint8Array | string;

/** Byte length of a BytesLike; throws INVALID_ARGUMENT for anything else. */
export function byteLengthOf(input: unknown, what: "key" | "value"): number {
  if (input instanceof Uint8Array) return input.length;
  if (typeof input === "string") return Buffer.byteLength(input, "utf8");
  throw new KvError(
    "INVALID_ARGUMENT",
    `${what} must be a Uint8Array or a string, got ${input === null ? "null" : typeof input}`,
  );
}

/** Byte length of a key; throws INVALID_ARGUMENT unless it is bytes or a string, not empty. */
export function keyLengthOf(key: unknown): number {
  const n = byteLengthOf(key, "key");
  if (n === 0) throw new KvError("INVALID_ARGUMENT", "key must not be empty");
  return n;
}

/** Checks a key: throws INVALID_ARGUMENT unless it is bytes or a string, not empty. */
export function checkKey(key: unknown): void {
  keyLengthOf(key);
}

/**
 * Checks a compare-and-swap's arguments as a backend takes them: a valid key, and
 * `expected` and `next` each a Uint8Array or undefined. Throws KvError INVALID_ARGUMENT.
 */
export function checkCasArguments(key: unknown, expected: unknown, next: unknown): void {
  checkKey(key);
  for (const [v, what] of [
    [expected, "expected"],
    [next, "next"],
  ] as const) {
    if (v !== undefined && !(v instanceof Uint8Array)) {
      throw new KvError("INVALID_ARGUMENT", `${what} must be a Uint8Array or undefined`);
    }
  }
}

/** Writes a BytesLike of known byte length `n` into dst at offset; returns the new offset. */
export function writeBytes(dst: Buffer, offset: number, input: BytesLike, n: number): number {
  if (typeof input === "string") dst.write(input, offset, n, "utf8");
  else dst.set(input, offset);
  return offset + n;
}

/** A BytesLike as a Uint8Array (strings encoded as UTF-8). */
export function toBytes(input: BytesLike): Uint8Array {
  return typeof input === "string" ? Buffer.from(input, "utf8") : input;
}
