/**
 * The changes since a revision (docs/format/mvcc.md, "Changes"): one iterator over the
 * changes entries, which are in revision order and, within a revision, in key order.
 */
import type { KvStore } from "../db/kv-store.js";
import type { Snapshot } from "../db/snapshot.js";
import { CHANGES_PREFIX, changesKey, keyOfChange, prefixEnd, revisionOfChange } from "./layout.js";
import { decodeRecord } from "./record.js";
import type { KeyValue } from "./types.js";

/**
 * One change, as etcd's mvccpb.Event: a put's new version, or a deletion, whose `kv` holds
 * the key and `modRevision` = the deleting revision (other numbers 0, value empty).
 */
export interface MvccEvent {
  readonly type: "put" | "delete";
  readonly kv: KeyValue;
  readonly revision: number;
}

const ROWS = 256;
const EMPTY = new Uint8Array(0);

/**
 * The events with revision in [from, min(to, the pinned revision)], in order, from the
 * snapshot `pin` takes when the first event is asked for; released at the end or on
 * return().
 */
export async function* changesOf(
  store: KvStore,
  pin: () => { snapshot: Snapshot; revision: number },
  from: number,
  upTo: number,
): AsyncGenerator<MvccEvent, void, undefined> {
  const { snapshot, revision } = pin();
  const to = Math.min(upTo, revision);
  const it = store.iterator({
    snapshot,
    gte: changesKey(Math.max(from, 0)),
    lt: to >= Number.MAX_SAFE_INTEGER ? prefixEnd(CHANGES_PREFIX) : changesKey(to + 1),
  });
  try {
    for (;;) {
      const rows = await it.nextBatch(ROWS);
      for (const [k, v] of rows) {
        const revision = revisionOfChange(k);
        const key = keyOfChange(k);
        const kv = decodeRecord(key, revision, v);
        if (kv !== undefined) yield { type: "put", kv, revision };
        else {
          yield {
            type: "delete",
            kv: {
              key,
              createRevision: 0,
              modRevision: revision,
              version: 0,
              value: EMPTY,
              lease: 0n,
            },
            revision,
          };
        }
      }
      if (rows.length < ROWS) return;
    }
  } finally {
    it.close();
    snapshot.release();
  }
}
