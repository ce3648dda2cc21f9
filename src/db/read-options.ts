/**
 * The options of the read calls (`get`, `getSync`, `iterator`, `scan`) and their checks:
 * each is checked in full before anything is read, and bad input is INVALID_ARGUMENT.
 */
import type { BytesLike } from "../batch/bytes.js";
import { KvError } from "../errors.js";
import type { DbIteratorOptions } from "./db-iterator.js";
import { Snapshot } from "./snapshot.js";

export interface ReadOptions {
  /** Read as of this snapshot (default: the latest committed state). */
  snapshot?: Snapshot;
  /** The backend seam's read consistency (kv-backend.ts): a local store is always current, so it changes nothing. */
  serializable?: boolean;
}

/** Options of `db.iterator()`. Bounds are keys (bytes or UTF-8 strings). */
export interface IteratorOptions {
  gt?: BytesLike;
  gte?: BytesLike;
  lt?: BytesLike;
  lte?: BytesLike;
  /** Iterate from the largest key down. */
  reverse?: boolean;
  /** At most this many entries (default: no limit). */
  limit?: number;
  /** Read as of this snapshot (default: the state when the iterator is created). */
  snapshot?: Snapshot;
  /** Yield empty values (saves copying them). */
  keysOnly?: boolean;
  /** Put blocks read by this iterator into the block cache (default true). */
  fillCache?: boolean;
}

/** The snapshot option, checked: undefined, or a Snapshot not yet released. */
export function checkSnapshot(snapshot: unknown): Snapshot | undefined {
  if (snapshot === undefined) return undefined;
  if (!(snapshot instanceof Snapshot)) {
    throw new KvError("INVALID_ARGUMENT", "snapshot must come from db.snapshot()");
  }
  snapshot.check();
  return snapshot;
}

/** A key bound as bytes (strings as UTF-8); undefined stays undefined. */
export function boundBytes(v: unknown, name: string): Uint8Array | undefined {
  if (v === undefined) return undefined;
  if (v instanceof Uint8Array) return v;
  if (typeof v === "string") return Buffer.from(v, "utf8");
  throw new KvError("INVALID_ARGUMENT", `${name} must be a Uint8Array or a string`);
}

/**
 * The DbIterator options of `options`: bounds as bytes (gt wins over gte, lt over lte),
 * a limit of -1 for none. Snapshot and fillCache are the caller's.
 */
export function dbIteratorOptions(options: IteratorOptions): DbIteratorOptions {
  if (typeof options !== "object" || options === null) {
    throw new KvError("INVALID_ARGUMENT", "iterator options must be an object");
  }
  const out: DbIteratorOptions = {};
  const gt = boundBytes(options.gt, "gt");
  const gte = boundBytes(options.gte, "gte");
  const lt = boundBytes(options.lt, "lt");
  const lte = boundBytes(options.lte, "lte");
  if (gt !== undefined) out.gt = gt;
  else if (gte !== undefined) out.gte = gte;
  if (lt !== undefined) out.lt = lt;
  else if (lte !== undefined) out.lte = lte;
  if (options.reverse !== undefined) out.reverse = options.reverse === true;
  if (options.keysOnly !== undefined) out.keysOnly = options.keysOnly === true;
  if (options.limit !== undefined) {
    const l = options.limit;
    if (typeof l !== "number" || Number.isNaN(l)) {
      throw new KvError("INVALID_ARGUMENT", "limit must be a number");
    }
    out.limit = l < 0 || l === Number.POSITIVE_INFINITY ? -1 : Math.floor(l);
  }
  return out;
}
