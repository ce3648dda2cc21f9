/**
 * A HashKV-like digest of a member's MVCC state through etcd's API, until kv-engine serves
 * Maintenance.HashKV: the keys at a compacted revision `floor` (a serializable Range at it:
 * key, value, create and mod revision, version of each) and every change of every key in
 * (floor, revision] (a watch from floor + 1 with prev_kv, read until a progress
 * notification at or past `revision`). Two members whose digests differ do not hold the
 * same history; like etcd's HashKV, what is compacted away is not compared.
 *
 * Precondition: the member applied `revision` and no write comes meanwhile (a quiet,
 * converged cluster), and `floor` is at or above every compaction it applied.
 */
import { createHash } from "node:crypto";
import type { EtcdGrpcClient } from "./etcd-grpc-client.js";
import { EtcdWatchClient } from "./etcd-watch-client.js";

const ALL = new Uint8Array([0]);

export interface MemberHash {
  readonly hash: string;
  /** Keys at the floor, events after it. */
  readonly keys: number;
  readonly events: number;
}

type Kv = {
  key: Uint8Array;
  value: Uint8Array;
  createRevision: bigint;
  modRevision: bigint;
  version: bigint;
};

function feed(h: ReturnType<typeof createHash>, tag: string, kv: Kv | undefined): void {
  if (kv === undefined) {
    h.update(`${tag} none\n`);
    return;
  }
  h.update(`${tag} ${kv.createRevision} ${kv.modRevision} ${kv.version} ${kv.key.length} `);
  h.update(kv.key);
  h.update(` ${kv.value.length} `);
  h.update(kv.value);
  h.update("\n");
}

/** The digest of the member `kv` and `address` reach, over (floor, revision]. */
export async function hashKv(
  kv: EtcdGrpcClient,
  address: string,
  floor: number,
  revision: number,
  timeoutMs = 10_000,
): Promise<MemberHash> {
  const h = createHash("sha256");
  const at = await kv.range({
    key: ALL,
    rangeEnd: ALL,
    revision: BigInt(floor),
    serializable: true,
  });
  for (const x of at.kvs) feed(h, "kv", x);
  let events = 0;
  if (revision > floor) {
    const w = new EtcdWatchClient(address).open();
    try {
      w.create({ key: ALL, rangeEnd: ALL, startRevision: BigInt(floor + 1), prevKv: true });
      w.progress();
      const until = Date.now() + timeoutMs;
      for (;;) {
        const r = await w.next(Math.max(1, until - Date.now()));
        if (r.canceled) throw new Error(`hashKv: watch canceled: ${r.cancelReason}`);
        for (const e of r.events) {
          if (Number(e.kv?.modRevision ?? 0n) > revision) continue;
          events++;
          h.update(`${e.type} `);
          feed(h, "event", e.kv);
          feed(h, "prev", e.prevKv);
        }
        if (r.events.length === 0 && !r.created && r.watchId === -1n) {
          if (Number(r.header?.revision ?? 0n) >= revision) break;
          w.progress();
        }
      }
    } finally {
      w.close();
    }
  }
  return { hash: h.digest("hex").slice(0, 16), keys: at.kvs.length, events };
}
