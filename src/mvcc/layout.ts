/**
 * The MVCC key space inside the shared KvStore (docs/format/mvcc.md, which this writer
 * follows; do not change the prefixes or encodings: they are stored on disk).
 *
 *   latest   0x02 ‖ key                      -> mod:varint record      (live keys only)
 *   history  0x03 ‖ esc(key) 0x00 0x01 ‖ rev  -> record                  (every version)
 *   changes  0x04 ‖ rev ‖ key                -> record                  (every change)
 *   meta     0x00 "mvcc/" name               -> fixed64 / a changes key
 *
 * `rev` is 8 bytes big-endian (so byte order is revision order); `esc` doubles every 0x00
 * byte as 0x00 0xFF, and the 0x00 0x01 terminator makes the encoding order-preserving
 * when a revision follows it. Keys `0x00 ‖ name` outside "mvcc/" and `0x01 ‖ key` (pre-MVCC
 * user keys) belong to others.
 */

export const LATEST_PREFIX = 0x02;
export const HISTORY_PREFIX = 0x03;
export const CHANGES_PREFIX = 0x04;
/** Bytes of an encoded revision. */
export const REV_BYTES = 8;

function metaKey(name: string): Uint8Array {
  return Uint8Array.from(Buffer.from(`\0mvcc/${name}`, "latin1"));
}

/** The store's revision (fixed64): written with every write that changes keys. */
export const REVISION_KEY: Uint8Array = metaKey("rev");
/** The compaction revision last scheduled (fixed64). */
export const COMPACT_SCHEDULED_KEY: Uint8Array = metaKey("compact");
/** The compaction revision last finished physically (fixed64). */
export const COMPACT_FINISHED_KEY: Uint8Array = metaKey("compacted");
/** The changes key a running physical compaction processed last (absent: none yet). */
export const COMPACT_CURSOR_KEY: Uint8Array = metaKey("compact-cursor");

const TERMINATOR_HIGH = 0x01;
const ESCAPED_ZERO = 0xff;

/** Writes `rev` as 8 bytes big-endian at `at`. REQUIRES: a safe non-negative integer. */
export function putRevision(out: Uint8Array, at: number, rev: number): void {
  const hi = Math.floor(rev / 0x1_0000_0000);
  const lo = rev >>> 0;
  out[at] = hi >>> 24;
  out[at + 1] = (hi >>> 16) & 0xff;
  out[at + 2] = (hi >>> 8) & 0xff;
  out[at + 3] = hi & 0xff;
  out[at + 4] = lo >>> 24;
  out[at + 5] = (lo >>> 16) & 0xff;
  out[at + 6] = (lo >>> 8) & 0xff;
  out[at + 7] = lo & 0xff;
}

/** The revision stored as 8 bytes big-endian at `at`. */
export function getRevision(src: Uint8Array, at: number): number {
  const hi = ((src[at]! << 24) | (src[at + 1]! << 16) | (src[at + 2]! << 8) | src[at + 3]!) >>> 0;
  const lo =
    ((src[at + 4]! << 24) | (src[at + 5]! << 16) | (src[at + 6]! << 8) | src[at + 7]!) >>> 0;
  return hi * 0x1_0000_0000 + lo;
}

/** `0x02 ‖ key`. */
export function latestKey(key: Uint8Array): Uint8Array {
  const out = Buffer.allocUnsafe(1 + key.length);
  out[0] = LATEST_PREFIX;
  out.set(key, 1);
  return out;
}

/** The user key of a latest key (a view). */
export function keyOfLatest(stored: Uint8Array): Uint8Array {
  return stored.subarray(1);
}

function zeros(key: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < key.length; i++) if (key[i] === 0) n++;
  return n;
}

/**
 * `0x03 ‖ esc(key) 0x00 0x01` followed by `rev` when given: the start of `key`'s history
 * (no revision) or one version of it.
 */
export function historyKey(key: Uint8Array, rev?: number): Uint8Array {
  const escLength = key.length + zeros(key);
  const out = Buffer.allocUnsafe(1 + escLength + 2 + (rev === undefined ? 0 : REV_BYTES));
  out[0] = HISTORY_PREFIX;
  let at = 1;
  for (let i = 0; i < key.length; i++) {
    const b = key[i]!;
    out[at++] = b;
    if (b === 0) out[at++] = ESCAPED_ZERO;
  }
  out[at++] = 0;
  out[at++] = TERMINATOR_HIGH;
  if (rev !== undefined) putRevision(out, at, rev);
  return out;
}

/** The user key of a history key (a copy), decoded from its escaped form. */
export function keyOfHistory(stored: Uint8Array): Uint8Array {
  const end = stored.length - REV_BYTES - 2;
  const out = Buffer.allocUnsafe(end - 1);
  let n = 0;
  for (let i = 1; i < end; i++) {
    const b = stored[i]!;
    out[n++] = b;
    if (b === 0) i++;
  }
  return out.subarray(0, n);
}

/** The revision of a history or changes key. */
export function revisionOfHistory(stored: Uint8Array): number {
  return getRevision(stored, stored.length - REV_BYTES);
}

/** `0x04 ‖ rev ‖ key` (key omitted: the start of revision `rev`'s changes). */
export function changesKey(rev: number, key?: Uint8Array): Uint8Array {
  const out = Buffer.allocUnsafe(1 + REV_BYTES + (key?.length ?? 0));
  out[0] = CHANGES_PREFIX;
  putRevision(out, 1, rev);
  if (key !== undefined) out.set(key, 1 + REV_BYTES);
  return out;
}

export function revisionOfChange(stored: Uint8Array): number {
  return getRevision(stored, 1);
}

/** The user key of a changes key (a view). */
export function keyOfChange(stored: Uint8Array): Uint8Array {
  return stored.subarray(1 + REV_BYTES);
}

/** The single byte after `prefix`: the exclusive end of its key space. */
export function prefixEnd(prefix: number): Uint8Array {
  return Uint8Array.of(prefix + 1);
}
