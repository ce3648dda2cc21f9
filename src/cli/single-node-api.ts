/**
 * What `kv-engine serve` serves on a single node (no --initial-cluster): kv.v1 and etcd's
 * KV API over the same keys. A store with revisions (docs/format/mvcc.md) gets both over
 * one MvccStore and one write queue: a kv.v1 put is a revisioned put. A new (empty) store
 * is given revisions when it is first served. A store written before revisions existed
 * keeps serving kv.v1 as it was, and refuses the etcd API with a message saying how to
 * copy it into a store with revisions (`kv-engine upgrade`).
 */
import { WriteBatch } from "../batch/write-batch.js";
import type { KvBackend } from "../db/kv-backend.js";
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { type AutoCompactionPolicy, AutoCompactionRunner } from "../etcd/auto-compaction.js";
import type { EtcdKvBackend } from "../etcd/etcd-backend.js";
import type { EtcdLeaseBackend } from "../etcd/lease-service.js";
import { LocalEtcdBackend } from "../etcd/local-backend.js";
import { WatchHub } from "../etcd/watch-hub.js";
import type { EtcdWatchBackend } from "../etcd/watch-service.js";
import { LeaseTable } from "../lease/lease-table.js";
import { MvccKvBackend } from "../mvcc/mvcc-kv-backend.js";
import { MvccStore } from "../mvcc/mvcc-store.js";
import { isRevisioned, markRevisioned } from "../mvcc/revisioned.js";
import { SerialWrites } from "../mvcc/serial-writes.js";

export interface SingleNodeApi {
  /** kv.v1's backend. */
  readonly kv: KvBackend;
  /** etcd's KV backend. */
  readonly etcd: EtcdKvBackend;
  /** etcd's Watch backend, iff the store has revisions. */
  readonly watch: EtcdWatchBackend | undefined;
  /** etcd's Lease backend, iff the store has revisions. */
  readonly lease: EtcdLeaseBackend | undefined;
  /** True iff the store has revisions (else the etcd API refuses every call). */
  readonly revisioned: boolean;
  /** The multi-version store, iff the store has revisions (etcd's HashKV). */
  readonly mvcc: MvccStore | undefined;
  /** Stops the auto-compaction and the multi-version store (not the KvStore). */
  close(): Promise<void>;
}

/** True iff `store` holds no key at all. */
async function isEmpty(store: KvStore): Promise<boolean> {
  const it = store.iterator({ limit: 1 });
  try {
    return (await it.nextBatch(1)).length === 0;
  } finally {
    it.close();
  }
}

/** An etcd backend that refuses every call (a store without revisions). */
function refusing(dir: string): EtcdKvBackend {
  const refuse = (): Promise<never> =>
    Promise.reject(
      new KvError(
        "FAILED_PRECONDITION",
        `${dir} was written before kv-engine kept revisions, so it serves kv.v1 only: ` +
          `copy it into a new directory with 'kv-engine upgrade --data-dir ${dir} --to NEW_DIR' and serve that`,
      ),
    );
  return {
    hasLeader: () => true,
    range: refuse,
    put: refuse,
    deleteRange: refuse,
    txn: refuse,
    compact: refuse,
  };
}

export async function singleNodeApi(
  store: KvStore,
  dir: string,
  autoCompaction: AutoCompactionPolicy | undefined,
  onCompaction?: (revision: number, error: unknown) => void,
): Promise<SingleNodeApi> {
  if (!(await isRevisioned(store)) && (await isEmpty(store))) {
    await store.write(markRevisioned(new WriteBatch()), { sync: true });
  }
  if (!(await isRevisioned(store))) {
    return {
      kv: store,
      etcd: refusing(dir),
      watch: undefined,
      lease: undefined,
      revisioned: false,
      mvcc: undefined,
      close: async () => {},
    };
  }
  const mvcc = await MvccStore.open(store);
  // A full disk fails a write and the store recovers once space is freed: so does the
  // multi-version store, in the next write's turn, and the lease table is read again
  // (the failed writes may have changed it in memory only).
  const leases = await LeaseTable.load(mvcc);
  const writes = new SerialWrites(mvcc, async () => {
    if (!mvcc.failed) return true;
    const ok = await mvcc.recover();
    if (ok) leases.assign(await LeaseTable.load(mvcc));
    return ok;
  });
  const runner =
    autoCompaction === undefined
      ? undefined
      : new AutoCompactionRunner(autoCompaction, {
          revision: () => mvcc.revision,
          leads: () => true,
          compact: async (revision) => {
            await writes.exclusive((m) => m.compact(revision));
          },
          ...(onCompaction === undefined ? {} : { onCompaction }),
        });
  const hub = new WatchHub(() => mvcc);
  const ids = { clusterId: 0n, memberId: 0n, raftTerm: 0n };
  const etcd = new LocalEtcdBackend(mvcc, { writes, ids, leases });
  return {
    kv: new MvccKvBackend(store, mvcc, writes),
    etcd,
    watch: { hub, hasLeader: () => true, ids: () => ids },
    lease: etcd,
    revisioned: true,
    mvcc,
    close: async () => {
      runner?.stop();
      etcd.close();
      hub.close();
      await mvcc.close();
    },
  };
}
