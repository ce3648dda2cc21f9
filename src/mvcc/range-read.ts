/**
 * Range reads over the store (docs/format/mvcc.md, "Reads"): at the newest revision from
 * the latest entries, at an older one from the history, in both cases one iterator over
 * the keys of the range; changes not yet visible (`pending`, a write's own and the
 * overlay's) decide the keys they hold. The iterator is created before the first await,
 * so the store state read and `pending` are taken at the same moment.
 */
import type { KvStore } from "../db/kv-store.js";
import type { Snapshot } from "../db/snapshot.js";
import {
  HISTORY_PREFIX,
  historyKey,
  keyOfHistory,
  keyOfLatest,
  LATEST_PREFIX,
  latestKey,
  prefixEnd,
  REV_BYTES,
  revisionOfHistory,
} from "./layout.js";
import type { PendingChange } from "./overlay.js";
import { keyId } from "./overlay.js";
import { decodeLatest, decodeRecord } from "./record.js";
import type { KeyValue, RangeOptions } from "./types.js";

/** Rows read per iterator batch. */
const ROWS = 256;

function cmp(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}

/** True iff `k` is in etcd's range [key, end) (end empty: key alone; [0]: key onwards). */
export function inRange(k: Uint8Array, key: Uint8Array, end: Uint8Array): boolean {
  if (end.length === 0) return cmp(k, key) === 0;
  if (end.length === 1 && end[0] === 0) return cmp(k, key) >= 0;
  return cmp(k, key) >= 0 && cmp(k, end) < 0;
}

function toEnd(end: Uint8Array): boolean {
  return end.length === 1 && end[0] === 0;
}

/** What one range read is asked. */
export interface RangeQuery {
  readonly key: Uint8Array;
  readonly end: Uint8Array;
  /** The revision read. */
  readonly rev: number;
  /** Read the latest entries (valid iff no stored version is newer than `rev`). */
  readonly latest: boolean;
  readonly limit: number;
  readonly countOnly: boolean;
  /** Keys decided by changes not in the store: the newest change at or below `rev`. */
  readonly pending?: ReadonlyMap<string, PendingChange>;
  /**
   * The count is known (page-counts.ts): read only the first `limit` keys (the returned
   * count is then meaningless). REQUIRES: `limit` > 0, no `pending`, not `countOnly`.
   */
  readonly countKnown?: boolean;
}

/** The live keys of the range at `rev`: the first `limit` (0: all) and their count. */
export interface RangeRows {
  readonly kvs: KeyValue[];
  readonly count: number;
}

/** Options of `rangeQuery` from a range call's `RangeOptions`. */
export function queryLimit(options: RangeOptions): { limit: number; countOnly: boolean } {
  const limit = options.limit !== undefined && options.limit > 0 ? options.limit : 0;
  return { limit, countOnly: options.countOnly === true };
}

/**
 * Reads `q` from `store` (as of `snapshot` when given, else its current state). Starts the
 * store read synchronously.
 */
export function readRange(
  store: KvStore,
  snapshot: Snapshot | undefined,
  q: RangeQuery,
): Promise<RangeRows> {
  const source = q.latest ? latestRows(store, snapshot, q) : historyRows(store, snapshot, q);
  return source.then((stored) => mergePending(stored, q));
}

/** What the store holds, before the pending changes are merged in. */
interface Stored {
  /** Live keys not in `pending`, in key order: the first `limit` of them. */
  readonly kvs: KeyValue[];
  /** How many live keys not in `pending` there are. */
  readonly count: number;
}

function keep(q: RangeQuery, out: KeyValue[], kv: KeyValue): boolean {
  if (q.pending !== undefined && q.pending.size > 0 && q.pending.has(keyId(kv.key))) return false;
  if (!q.countOnly && (q.limit === 0 || out.length < q.limit)) out.push(kv);
  return true;
}

function readOptions(snapshot: Snapshot | undefined): { snapshot?: Snapshot } {
  return snapshot === undefined ? {} : { snapshot };
}

async function latestRows(
  store: KvStore,
  snapshot: Snapshot | undefined,
  q: RangeQuery,
): Promise<Stored> {
  const kvs: KeyValue[] = [];
  let count = 0;
  if (q.end.length === 0) {
    const v = await store.get(latestKey(q.key), readOptions(snapshot));
    if (v !== undefined && keep(q, kvs, decodeLatest(Uint8Array.from(q.key), v))) count++;
    return { kvs, count };
  }
  // The kvs returned first, then the rest counted from keys alone (every latest entry is
  // live), both from one snapshot.
  const pinned = snapshot ?? store.snapshot();
  const lt = toEnd(q.end) ? prefixEnd(LATEST_PREFIX) : latestKey(q.end);
  const pending = q.pending !== undefined && q.pending.size > 0 ? q.pending : undefined;
  const decided = (k: Uint8Array) => pending?.has(keyId(keyOfLatest(k))) === true;
  let last: Uint8Array | undefined;
  try {
    if (!q.countOnly) {
      const it = store.iterator({ snapshot: pinned, gte: latestKey(q.key), lt });
      try {
        rows: for (;;) {
          const rows = await it.nextBatch(ROWS);
          for (const [k, v] of rows) {
            if (decided(k)) continue;
            count++;
            kvs.push(decodeLatest(keyOfLatest(k), v));
            if (kvs.length === q.limit) {
              if (q.countKnown === true) return { kvs, count };
              last = k;
              break rows;
            }
          }
          if (rows.length < ROWS) return { kvs, count };
        }
      } finally {
        it.close();
      }
    }
    const from = last === undefined ? { gte: latestKey(q.key) } : { gt: last };
    const it = store.iterator({ snapshot: pinned, ...from, lt, keysOnly: true });
    try {
      for (;;) {
        const rows = await it.nextBatch(ROWS);
        for (const [k] of rows) if (!decided(k)) count++;
        if (rows.length < ROWS) return { kvs, count };
      }
    } finally {
      it.close();
    }
  } finally {
    if (snapshot === undefined) pinned.release();
  }
}

/** The first key after every version of `key` in the history. */
function historyEnd(key: Uint8Array): Uint8Array {
  const start = historyKey(key);
  const last = start.length - 1;
  start[last] = start[last]! + 1;
  return start;
}

/** True iff history keys `a` and `b` are of the same user key. */
function samePrefix(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = a.length - REV_BYTES - 1; i >= 0; i--) if (a[i] !== b[i]) return false;
  return true;
}

async function historyRows(
  store: KvStore,
  snapshot: Snapshot | undefined,
  q: RangeQuery,
): Promise<Stored> {
  const kvs: KeyValue[] = [];
  let count = 0;
  const it = store.iterator({
    ...readOptions(snapshot),
    gte: historyKey(q.key),
    lt:
      q.end.length === 0
        ? historyEnd(q.key)
        : toEnd(q.end)
          ? prefixEnd(HISTORY_PREFIX)
          : historyKey(q.end),
  });
  // The versions of one key are consecutive, oldest first: the last at or below `rev`
  // decides the key.
  let groupKey: Uint8Array | undefined;
  let best: [Uint8Array, Uint8Array] | undefined;
  const settle = () => {
    if (best === undefined) return;
    const [k, v] = best;
    best = undefined;
    const kv = decodeRecord(keyOfHistory(k), revisionOfHistory(k), v);
    if (kv !== undefined && keep(q, kvs, kv)) count++;
  };
  try {
    for (;;) {
      const rows = await it.nextBatch(ROWS);
      for (const row of rows) {
        const k = row[0];
        if (groupKey === undefined || !samePrefix(groupKey, k)) {
          settle();
          if (q.countKnown === true && kvs.length === q.limit) return { kvs, count };
          groupKey = k;
        }
        if (revisionOfHistory(k) <= q.rev) best = row;
      }
      if (rows.length < ROWS) break;
    }
    settle();
    return { kvs, count };
  } finally {
    it.close();
  }
}

function mergePending(stored: Stored, q: RangeQuery): RangeRows {
  const pending = q.pending;
  if (pending === undefined || pending.size === 0) return stored;
  const extra: KeyValue[] = [];
  for (const c of pending.values()) {
    if (c.kv !== undefined && inRange(c.key, q.key, q.end)) extra.push(c.kv);
  }
  const count = stored.count + extra.length;
  if (q.countOnly) return { kvs: [], count };
  extra.sort((a, b) => cmp(a.key, b.key));
  const kvs: KeyValue[] = [];
  let i = 0;
  let j = 0;
  const a = stored.kvs;
  while ((q.limit === 0 || kvs.length < q.limit) && (i < a.length || j < extra.length)) {
    if (j >= extra.length || (i < a.length && cmp(a[i]!.key, extra[j]!.key) < 0)) kvs.push(a[i++]!);
    else kvs.push(extra[j++]!);
  }
  return { kvs, count };
}
