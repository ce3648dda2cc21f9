/**
 * KeyCodec: how abstract-level keys become engine keys, and back.
 *
 * abstract-level allows the empty key; the engine does not. So every key is stored behind
 * a fixed prefix (default one 0x00 byte): key k is engine key prefix ‖ k. Byte order is
 * kept (prefix ‖ a < prefix ‖ b iff a < b), the empty key becomes the prefix itself, and
 * the adapter's keys stay apart from engine keys that do not start with the prefix (such
 * as keys written through the server or CLI, unless they start with a 0x00 byte). Ranges
 * without a bound get the prefix (lower) and its successor (upper) as bounds.
 *
 * With an empty prefix keys are stored as they are (sharing the engine's keyspace, e.g.
 * with the server and CLI), and an empty key is rejected with LEVEL_INVALID_KEY.
 */
import type { IteratorOptions } from "../index.js";
import { KvEngineLevelError } from "./errors.js";

/** The data formats the adapter stores natively (abstract-level transcodes the rest). */
export type Format = "utf8" | "buffer" | "view";

/** Keys and values as abstract-level hands them to the private API. */
export type Encoded = string | Uint8Array;

/** One end of a key range, in engine keys. */
export interface Bound {
  readonly key: Uint8Array;
  readonly inclusive: boolean;
}

/** Range options as abstract-level hands them to the private API (already encoded). */
export interface RangeOptions {
  gt?: unknown;
  gte?: unknown;
  lt?: unknown;
  lte?: unknown;
}

export interface EngineRange {
  lower: Bound | undefined;
  upper: Bound | undefined;
}

export class KeyCodec {
  readonly prefix: Buffer;
  /** The smallest key above every key with the prefix; undefined if there is none. */
  private readonly end: Buffer | undefined;

  constructor(prefix: string | Uint8Array) {
    if (typeof prefix === "string") this.prefix = Buffer.from(prefix, "utf8");
    else if (prefix instanceof Uint8Array) this.prefix = Buffer.from(prefix);
    else throw new TypeError("keyPrefix must be a string or a Uint8Array");
    this.end = successor(this.prefix);
  }

  /** The engine key for an encoded abstract-level key. */
  encode(key: Encoded): Uint8Array | string {
    const p = this.prefix.length;
    if (typeof key === "string") {
      if (p === 0) return checkNotEmpty(key);
      const n = Buffer.byteLength(key, "utf8");
      const out = Buffer.allocUnsafe(p + n);
      this.prefix.copy(out, 0);
      out.write(key, p, n, "utf8");
      return out;
    }
    const bytes = asBytes(key);
    if (p === 0) return checkNotEmpty(bytes);
    const out = Buffer.allocUnsafe(p + bytes.length);
    this.prefix.copy(out, 0);
    out.set(bytes, p);
    return out;
  }

  /** An engine key (a fresh Buffer from the engine) as an abstract-level key of `format`. */
  decode(key: Buffer, format: Format): Encoded {
    return fromEngine(key, format, this.prefix.length);
  }

  /** Engine bounds for encoded range options; gte and lte win over gt and lt. */
  range(options: RangeOptions): EngineRange {
    let lower: Bound | undefined;
    let upper: Bound | undefined;
    if (options.gte !== undefined) lower = { key: this.bound(options.gte), inclusive: true };
    else if (options.gt !== undefined) lower = { key: this.bound(options.gt), inclusive: false };
    else if (this.prefix.length > 0) lower = { key: this.prefix, inclusive: true };
    if (options.lte !== undefined) upper = { key: this.bound(options.lte), inclusive: true };
    else if (options.lt !== undefined) upper = { key: this.bound(options.lt), inclusive: false };
    else if (this.end !== undefined) upper = { key: this.end, inclusive: false };
    return { lower, upper };
  }

  /** The engine key of a seek target or range bound (which may be empty). */
  bound(value: unknown): Uint8Array {
    const bytes =
      typeof value === "string"
        ? Buffer.from(value, "utf8")
        : ArrayBuffer.isView(value)
          ? asBytes(value)
          : Buffer.from(String(value), "utf8");
    if (this.prefix.length === 0) return bytes;
    return Buffer.concat([this.prefix, bytes], this.prefix.length + bytes.length);
  }
}

/** Engine iterator options for a range. */
export function rangeToEngine(range: EngineRange, out: IteratorOptions): IteratorOptions {
  const { lower, upper } = range;
  if (lower !== undefined) {
    if (lower.inclusive) out.gte = lower.key;
    else out.gt = lower.key;
  }
  if (upper !== undefined) {
    if (upper.inclusive) out.lte = upper.key;
    else out.lt = upper.key;
  }
  return out;
}

/** A value (or key, after `skip` prefix bytes) from the engine in the requested format. */
export function fromEngine(bytes: Buffer, format: Format, skip = 0): Encoded {
  switch (format) {
    case "utf8":
      return bytes.toString("utf8", skip);
    case "view":
      return new Uint8Array(bytes.buffer, bytes.byteOffset + skip, bytes.length - skip);
    default:
      return skip === 0 ? bytes : bytes.subarray(skip);
  }
}

/** An encoded value as something the engine takes (strings and Uint8Arrays). */
export function valueToEngine(value: Encoded): Uint8Array | string {
  return typeof value === "string" ? value : asBytes(value);
}

function asBytes(view: ArrayBufferView): Uint8Array {
  return view instanceof Uint8Array
    ? view
    : new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

function checkNotEmpty<T extends string | Uint8Array>(key: T): T {
  if (key.length === 0) {
    throw new KvEngineLevelError(
      "Key cannot be empty when keyPrefix is empty (the engine has no empty key)",
      "LEVEL_INVALID_KEY",
    );
  }
  return key;
}

/** The smallest byte string greater than every string starting with `prefix`. */
function successor(prefix: Buffer): Buffer | undefined {
  let n = prefix.length;
  while (n > 0 && prefix[n - 1] === 0xff) n--;
  if (n === 0) return undefined;
  const out = Buffer.from(prefix.subarray(0, n));
  out[n - 1] = out[n - 1]! + 1;
  return out;
}
