/** etcd's key ranges: [key, end), an empty end meaning `key` alone, "\0" every key >= key. */

/** True iff `k` is in the range [key, end). */
export function inRange(k: Uint8Array, key: Uint8Array, end: Uint8Array): boolean {
  if (end.length === 0) return Buffer.compare(k, key) === 0;
  if (end.length === 1 && end[0] === 0) return Buffer.compare(k, key) >= 0;
  return Buffer.compare(k, key) >= 0 && Buffer.compare(k, end) < 0;
}
