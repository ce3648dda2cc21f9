/**
 * etcd's HashKV over the multi-version store: a 32-bit hash of the history a member keeps
 * up to a revision, equal on every member that applied the same requests (the same keys,
 * values, revisions and leases). Hashed, in order: every key as of the compacted revision
 * (when there is one: what the compaction kept), then every change after it up to the
 * revision (put: the new version; delete: the key and its revision). What compaction
 * removed is not hashed, so members compacted to the same revision compare equal, as in
 * etcd. The hash is the first 4 bytes of a SHA-256 over that sequence (etcd: CRC-32 over
 * its bbolt keys; the values differ from etcd's, only equality between members matters).
 */
import { createHash, type Hash } from "node:crypto";
import { KvError } from "../errors.js";
import type { MvccEvent } from "../mvcc/changes.js";
import type { KeyValue, MvccReadView } from "../mvcc/types.js";

/** What HashKV reads: MvccStore. */
export interface HashableMvcc {
  /** Reads below it fail (COMPACTED). */
  readonly compactRevision: number;
  /** The revision visible now. */
  readonly revision: number;
  read(): MvccReadView;
  /** The changes of revisions [from, to]; throws COMPACTED when from is compacted. */
  changes(from: number, to?: number): AsyncGenerator<MvccEvent, void, undefined>;
}

export interface KvHash {
  readonly hash: number;
  /** The revision hashed up to (the current one when 0 was asked). */
  readonly revision: number;
  /** The store's revision when hashed (what etcd's answer header carries). */
  readonly current: number;
  readonly compactRevision: number;
}

const ALL = Uint8Array.of(0);
const PAGE = 1000;

function feed(h: Hash, tag: string, kv: KeyValue): void {
  h.update(
    `${tag} ${kv.createRevision} ${kv.modRevision} ${kv.version} ${kv.lease} ${kv.key.length} `,
  );
  h.update(kv.key);
  h.update(` ${kv.value.length} `);
  h.update(kv.value);
  h.update("\n");
}

/**
 * The hash of `mvcc` up to `revision` (0 or negative: the current revision). Throws
 * KvError FUTURE_REVISION above the current revision, COMPACTED below the compacted one
 * (also when a compaction ran while hashing).
 */
export async function hashKv(mvcc: HashableMvcc, revision: number): Promise<KvHash> {
  const view = mvcc.read();
  const h = createHash("sha256");
  let rev: number;
  let compacted: number;
  const current = view.revision;
  try {
    rev = revision <= 0 ? view.revision : revision;
    compacted = view.compactRevision;
    if (rev > view.revision) {
      throw new KvError("FUTURE_REVISION", `revision ${rev} is after the current ${view.revision}`);
    }
    if (rev < compacted) {
      throw new KvError("COMPACTED", `revision ${rev} is below the compacted ${compacted}`);
    }
    if (compacted > 0) {
      let key = ALL;
      for (;;) {
        const page = await view.range(key, ALL, { limit: PAGE, revision: compacted });
        for (const kv of page.kvs) feed(h, "kv", kv);
        const last = page.kvs[page.kvs.length - 1];
        if (last === undefined || page.kvs.length < PAGE) break;
        key = Buffer.concat([last.key, ALL]);
      }
    }
  } finally {
    view.release();
  }
  if (rev > compacted) {
    for await (const e of mvcc.changes(compacted + 1, rev)) feed(h, e.type, e.kv);
  }
  if (mvcc.compactRevision !== compacted) {
    throw new KvError("COMPACTED", "a compaction ran while hashing: ask again");
  }
  return { hash: h.digest().readUInt32BE(0), revision: rev, current, compactRevision: compacted };
}
