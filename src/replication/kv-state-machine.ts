/**
 * The key-value state machine (state-machine.ts) the replicated store serves: a KvStore in
 * the member's data directory (node-dir.ts), user keys under their prefix (keys.ts), the
 * applied index and the membership under internal keys, entries applied by applier.ts,
 * snapshots taken as store checkpoints (local-snapshots.ts) and installed by switching
 * the directory's store. Reads: `get` and `iterator` over the user keys, each after any
 * install in progress.
 */
import { WriteBatch } from "../batch/write-batch.js";
import type { BackendEntry, BackendIterator } from "../db/kv-backend.js";
import { KvStore } from "../db/kv-store.js";
import type { OpenOptions } from "../db/options.js";
import type { StoreStats } from "../db/store-stats.js";
import { KvError } from "../errors.js";
import { LeaseTable } from "../lease/lease-table.js";
import { hasLegacyKeys, upgradeLegacyKeys } from "../mvcc/legacy-upgrade.js";
import { latestIterator } from "../mvcc/mvcc-kv-backend.js";
import { MvccStore } from "../mvcc/mvcc-store.js";
import { isRevisioned, markRevisioned } from "../mvcc/revisioned.js";
import type { MvccReadView } from "../mvcc/types.js";
import type { Entry } from "../raft/types.js";
import { joinPath } from "../vfs/file-system.js";
import { Applier } from "./applier.js";
import { storedKey, storedRange, userKey } from "./keys.js";
import type { LocalSnapshots, PendingSnapshot } from "./local-snapshots.js";
import type { MemberId, Membership } from "./members.js";
import { FIRST_STORE, type NodeDir, storeDirName } from "./node-dir.js";
import { readStoreState, type StoreState } from "./open-member.js";
import type { ResolvedReplicatedOptions } from "./options.js";
import type { Settlement } from "./proposals.js";
import type {
  AppliedState,
  ReceivedSnapshot,
  StateMachine,
  StateMachineHost,
} from "./state-machine.js";

/** The options a member's store is opened with (`createIfMissing` on first start only). */
function storeOpenOptions(o: ResolvedReplicatedOptions, createIfMissing: boolean): OpenOptions {
  // The store runs unsynced: after a power loss its log may have lost any unsynced part,
  // holes included, and keeps the prefix before the first damage (pointInTime); the Raft
  // log replays the rest.
  const opts: OpenOptions = {
    walRecoveryMode: "pointInTime",
    ...(o.storeOptions ?? {}),
    fs: o.fs,
    sync: false,
    createIfMissing,
  };
  if (o.onStoreEvent !== undefined) opts.onEvent = o.onStoreEvent;
  return opts;
}

/**
 * The multi-version store over a member's `store`, iff it holds revisions. A store that
 * holds both revisions and plain keys had its upgrade cut by a crash (the mark is written
 * with the first batch, the applied index only after the last): the upgrade is finished
 * here, as it would have ended (its result depends only on the store's content), before
 * the upgrade entry is replayed.
 */
export async function openMemberMvcc(store: KvStore): Promise<MemberMvcc | undefined> {
  if (!(await isRevisioned(store))) return undefined;
  if (await hasLegacyKeys(store)) return upgradeMemberStore(store);
  return MvccStore.open(store);
}

/**
 * Gives a member's store of the first layout revisions (legacy-upgrade.ts: its plain user
 * keys become revision 1; resumable) and opens the multi-version store over it.
 */
export async function upgradeMemberStore(store: KvStore): Promise<MemberMvcc> {
  await upgradeLegacyKeys(store);
  if (!(await isRevisioned(store))) await store.write(markRevisioned(new WriteBatch()));
  return MvccStore.open(store);
}

/** The lease table `mvcc` holds (undefined without revisions). Throws CORRUPTION. */
export async function loadLeases(mvcc: MemberMvcc | undefined): Promise<LeaseTable | undefined> {
  return mvcc === undefined ? undefined : LeaseTable.load(mvcc);
}

/** Opens the store of `dir` (creating it on first start). */
export function openStore(dir: NodeDir, o: ResolvedReplicatedOptions): Promise<KvStore> {
  return KvStore.open(dir.storePath, storeOpenOptions(o, dir.storeName === FIRST_STORE));
}

/** The multi-version store over a member's store, as the state machine uses it. */
export type MemberMvcc = MvccStore;

export class KvStateMachine implements StateMachine {
  private store: KvStore;
  /** The multi-version store over `store`, iff the store holds revisions. */
  private mvcc: MemberMvcc | undefined;
  /** The lease table over `mvcc` (src/lease/), iff `mvcc` is defined. */
  private leaseTable: LeaseTable | undefined;
  private readonly applier: Applier;
  private readonly o: ResolvedReplicatedOptions;
  private readonly dir: NodeDir;
  private readonly snapshots: LocalSnapshots;
  /** Set while `install` swaps the store. */
  private installing: Promise<void> | undefined;

  /**
   * Takes over `store` (opened in `dir`, having applied `state`); entries are applied to
   * it, this member's (`selfId`) proposals settled through `settlement`.
   */
  constructor(init: {
    o: ResolvedReplicatedOptions;
    dir: NodeDir;
    store: KvStore;
    snapshots: LocalSnapshots;
    selfId: MemberId;
    host: StateMachineHost;
    settlement: Settlement;
    /** What the store holds as applied (its client sessions included). */
    state: StoreState;
    /** The multi-version store over `store`, iff it holds revisions. */
    mvcc: MemberMvcc | undefined;
    /** The lease table over `mvcc` (loadLeases), iff `mvcc` is defined. */
    leases: LeaseTable | undefined;
  }) {
    this.o = init.o;
    this.dir = init.dir;
    this.store = init.store;
    this.mvcc = init.mvcc;
    this.leaseTable = init.leases;
    this.snapshots = init.snapshots;
    const { host, settlement } = init;
    this.applier = new Applier(
      {
        store: () => this.store,
        mvcc: () => this.mvcc,
        upgrade: async () => {
          this.mvcc = await upgradeMemberStore(this.store);
          this.leaseTable = await loadLeases(this.mvcc);
          return this.mvcc;
        },
        leases: () => this.leaseTable,
        selfId: init.selfId,
        applyConfChange: (cc) => host.applyConfChange(cc),
        onApplied: (index) => host.onApplied(index),
        onMembership: (change, membership) => host.onMembership(change, membership),
        onHashCheck: (check) => host.onHashCheck?.(check),
        settle: (request, result, error) => settlement.settle(request, result, error),
        settleAfterAdvance: (request, result, error) =>
          settlement.settleAfterAdvance(request, result, error),
      },
      init.state,
    );
  }

  get appliedIndex(): number {
    return this.applier.appliedIndex;
  }

  get appliedTerm(): number {
    return this.applier.appliedTerm;
  }

  get appliedBytes(): number {
    return this.applier.appliedBytes;
  }

  get membership(): Membership {
    return this.applier.membership;
  }

  /** Client sessions open as of the entries submitted (session-table.ts). */
  get sessionCount(): number {
    return this.applier.sessions.size;
  }

  apply(entries: readonly Entry[]): Promise<void> {
    return this.applier.apply(entries);
  }

  persist(): Promise<void> {
    return this.applier.persist();
  }

  async captureSnapshot(index: number, term: number): Promise<PendingSnapshot> {
    const pending = await this.snapshots.capture(this.store, index, term);
    // The store itself must be durable through `index` before the log is compacted past
    // entries it may still need (the snapshot copies the store's log, it does not flush
    // it). Here, while no apply runs: the marker it writes must not overtake later ones.
    await this.applier.persist();
    return pending;
  }

  /**
   * Installs a received snapshot as the store: the received directory becomes
   * D/store-<index>, the old store is closed, D/STORE is switched (the commit point), the
   * new store opened and the old one removed. A crash before the switch keeps the old
   * store (the leftovers are removed at open); after it, open finds the store ahead of the
   * log and records the snapshot there (open-member.ts).
   */
  async install(snapshot: ReceivedSnapshot): Promise<AppliedState> {
    const { index, term } = snapshot.descriptor;
    let done!: () => void;
    this.installing = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      const fs = this.o.fs;
      const name = storeDirName(index);
      const path = joinPath(this.dir.path, name);
      const oldPath = this.dir.storePath;
      if (await fs.exists(path)) await this.dir.removeTree(path);
      await fs.rename(snapshot.path, path);
      snapshot.handedOver();
      await fs.syncDir(joinPath(this.dir.path, "snap"));
      await fs.syncDir(this.dir.path);
      await this.mvcc?.close();
      this.mvcc = undefined;
      this.leaseTable = undefined;
      await this.store.close();
      await this.dir.switchStore(name);
      this.store = await KvStore.open(path, storeOpenOptions(this.o, false));
      this.mvcc = await openMemberMvcc(this.store);
      this.leaseTable = await loadLeases(this.mvcc);
      const state = await readStoreState(this.store);
      if (state.index !== index || state.term !== term) {
        throw new KvError(
          "CORRUPTION",
          `the installed snapshot holds applied ${state.term}/${state.index}, not ${term}/${index}`,
        );
      }
      this.applier.reset(state);
      await this.dir.removeTree(oldPath);
      return state;
    } finally {
      this.installing = undefined;
      done();
    }
  }

  async ready(): Promise<void> {
    while (this.installing !== undefined) await this.installing;
  }

  async close(): Promise<void> {
    await this.mvcc?.close();
    await this.store.close();
  }

  // ---- the read side ----

  /** The value of user key `key` in the current store (after any install). */
  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    await this.ready();
    if (this.mvcc !== undefined) return (await this.mvcc.latest(key))?.value;
    return this.store.get(storedKey(key));
  }

  /**
   * A view of the multi-version state as applied (after any install). Throws
   * FAILED_PRECONDITION when the store predates revisions.
   */
  async view(): Promise<MvccReadView> {
    await this.ready();
    return this.revisioned().read();
  }

  /**
   * The multi-version store. Throws UNAVAILABLE while there is none yet (a member added
   * to the cluster that has not installed its first snapshot, or an install swapping the
   * store): nothing was done, another member can answer. FAILED_PRECONDITION when the
   * store predates revisions.
   */
  revisioned(): MemberMvcc {
    if (this.mvcc === undefined) {
      if (this.installing !== undefined || this.applier.appliedIndex === 0) {
        throw new KvError(
          "UNAVAILABLE",
          "this member has not caught up with the cluster yet (no snapshot installed)",
        );
      }
      throw new KvError(
        "FAILED_PRECONDITION",
        "this member's data predates revisions: the etcd API is not served on it",
      );
    }
    return this.mvcc;
  }

  /**
   * The user entries of [gte, lt) in key order, at most `limit` (0 or undefined: no
   * limit), from the current store. REQUIRES: `ready()` resolved with no await since.
   */
  iterator(
    gte: Uint8Array | undefined,
    lt: Uint8Array | undefined,
    limit: number | undefined,
  ): BackendIterator {
    if (this.mvcc !== undefined) return latestIterator(this.mvcc, gte, lt, limit);
    const range = storedRange(gte, lt);
    const inner = this.store.iterator(
      limit === undefined || limit === 0 ? range : { ...range, limit },
    );
    return {
      nextBatch: async (n: number): Promise<BackendEntry[]> => {
        const rows = await inner.nextBatch(n);
        return rows.map(([k, v]) => [userKey(k), v] as const);
      },
      close: () => inner.close(),
    };
  }

  /** The store's counters. */
  stats(): StoreStats {
    return this.store.stats();
  }

  /** The multi-version store over the current store, iff it holds revisions. */
  localMvcc(): MemberMvcc | undefined {
    return this.mvcc;
  }

  /** The lease table as applied here (replaced by a snapshot install), iff revisions. */
  leases(): LeaseTable | undefined {
    return this.leaseTable;
  }

  /** The current store, once no install runs (for the admin service, member-admin.ts). */
  async localStore(): Promise<KvStore> {
    await this.ready();
    return this.store;
  }
}
