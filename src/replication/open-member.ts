/**
 * Opening a member's data directory: identity, bootstrap, and agreement between the store
 * and the Raft log (docs/cluster.md, "What survives what").
 *
 * - Identity: a stored identity must match the options (the cluster ID and member ID they
 *   imply, the name), else FAILED_PRECONDITION; a new member writes its identity last, so
 *   a crash during bootstrap is redone at the next start.
 * - Bootstrap ("new", first start): the store gets the initial membership, applied =
 *   (1, 1) and the multi-version layout's mark (src/mvcc/revisioned.ts); the Raft log
 *   gets a snapshot at index 1 carrying the initial voters.
 * - Agreement: the store runs unsynced, so after a crash it may be behind the Raft log;
 *   Raft then hands out the entries after the store's applied index again. The store is
 *   never behind the log's snapshot (a snapshot is a durable checkpoint of the store, and
 *   the log is compacted only behind one). It is ahead of the log only when a crash struck
 *   a snapshot install after the store was switched and before the log recorded the
 *   snapshot: the log then records it now (roll forward).
 */
import { WriteBatch } from "../batch/write-batch.js";
import type { KvStore } from "../db/kv-store.js";
import { KvError } from "../errors.js";
import { markRevisioned } from "../mvcc/revisioned.js";
import type { RaftLogStorage } from "../raft/storage/raft-log-storage.js";
import { decodeApplied, encodeApplied } from "./applier.js";
import { clusterIdOf, initialMemberId } from "./identity.js";
import { APPLIED_KEY, MEMBERS_KEY } from "./keys.js";
import type { LocalSnapshots } from "./local-snapshots.js";
import {
  confStateOf,
  decodeMembership,
  EMPTY_MEMBERSHIP,
  encodeMembership,
  formatMemberId,
  isRemoved,
  type Membership,
  memberOf,
} from "./members.js";
import type { StoredIdentity } from "./node-dir.js";
import type { ResolvedReplicatedOptions } from "./options.js";
import { CLOCK_KEY, SESSION_STATE_END } from "./session-table.js";
import { encodeDescriptor } from "./snapshot-descriptor.js";

/** What the store says it applied. */
export interface StoreState {
  readonly index: number;
  readonly term: number;
  readonly membership: Membership;
  /** The client session table's stored entries (session-table.ts). */
  readonly sessions?: ReadonlyArray<readonly [Uint8Array, Uint8Array]>;
}

export async function readStoreState(store: KvStore): Promise<StoreState> {
  const applied = await store.get(APPLIED_KEY);
  const members = await store.get(MEMBERS_KEY);
  const { index, term } = applied === undefined ? { index: 0, term: 0 } : decodeApplied(applied);
  const it = store.iterator({ gte: CLOCK_KEY, lt: SESSION_STATE_END });
  const sessions = await it.all();
  return {
    index,
    term,
    membership: members === undefined ? EMPTY_MEMBERSHIP : decodeMembership(members),
    sessions,
  };
}

function describe(id: { clusterId: number; memberId: number; name: string }): string {
  return `member ${id.name} (ID ${formatMemberId(id.memberId)}) of cluster ${formatMemberId(id.clusterId)}`;
}

/**
 * The identity this member runs with: the stored one (checked against the options) or,
 * for a new member, the one the options imply (not yet written). Throws
 * FAILED_PRECONDITION on a contradiction, INVALID_ARGUMENT when a joining member lacks IDs.
 */
export function settleIdentity(
  stored: StoredIdentity | undefined,
  o: ResolvedReplicatedOptions,
  dataDir: string,
): StoredIdentity {
  const expected: StoredIdentity | undefined =
    o.state === "new"
      ? {
          clusterId: clusterIdOf(o.token, o.initialCluster),
          memberId: initialMemberId(o.token, o.self),
          name: o.name,
        }
      : o.join === undefined
        ? undefined
        : { clusterId: o.join.clusterId, memberId: o.join.memberId, name: o.name };
  if (stored === undefined) {
    if (expected === undefined) {
      throw new KvError(
        "INVALID_ARGUMENT",
        `${dataDir} holds no member yet: joining an existing cluster needs the cluster ID and member ID that MemberAdd returned`,
      );
    }
    return expected;
  }
  if (stored.name !== o.name) {
    throw new KvError(
      "FAILED_PRECONDITION",
      `${dataDir} holds the data of ${describe(stored)}, but this member is started as ${o.name}`,
    );
  }
  if (
    expected !== undefined &&
    (expected.clusterId !== stored.clusterId || expected.memberId !== stored.memberId)
  ) {
    throw new KvError(
      "FAILED_PRECONDITION",
      `${dataDir} holds the data of ${describe(stored)}, but the cluster options describe ${describe(expected)}: ` +
        "check --initial-cluster, --initial-cluster-token and --initial-cluster-state (a wiped member must be removed and added again)",
    );
  }
  return stored;
}

/** The membership of a new cluster: every initial member a voter, client addresses unknown yet. */
export function initialMembership(o: ResolvedReplicatedOptions): Membership {
  const members = o.initialCluster
    .map((m) => ({
      id: initialMemberId(o.token, m),
      name: m.name,
      peerAddress: m.peerAddress,
      clientAddress: "",
      learner: false,
    }))
    .sort((a, b) => a.id - b.id);
  return { members, removed: [] };
}

/**
 * Bootstraps a new cluster's first start (idempotent: redone if a crash interrupted it).
 * The initial configuration is a snapshot at index 1, term 1, the same on every initial
 * member: the store holds the initial membership with applied = (1, 1), a local snapshot
 * of it is taken, and the Raft log starts with that snapshot (commit 1) and no entries.
 * So the log never holds the initial configuration as entries, and a member added later
 * (its log empty) always catches up from a snapshot, which carries the configuration; it
 * never replays a log that lacks the initial members. `seed` first writes the initial data
 * (initial-data.ts), if any.
 */
export async function bootstrap(
  store: KvStore,
  log: RaftLogStorage,
  snapshots: LocalSnapshots,
  membership: Membership,
  revisions = true,
  seed?: (store: KvStore) => Promise<void>,
): Promise<void> {
  if (seed !== undefined) await seed(store);
  // Seeded data has its own revision counter (seedFromStore checks it is there).
  const b = (revisions && seed === undefined ? markRevisioned(new WriteBatch()) : new WriteBatch())
    .put(MEMBERS_KEY, encodeMembership(membership))
    .put(APPLIED_KEY, encodeApplied(BOOTSTRAP_INDEX, BOOTSTRAP_TERM));
  await store.write(b, { sync: true });
  const snap = await snapshots.create(store, BOOTSTRAP_INDEX, BOOTSTRAP_TERM);
  if (log.lastIndex() === 0) {
    await log.save({
      snapshot: {
        metadata: {
          index: BOOTSTRAP_INDEX,
          term: BOOTSTRAP_TERM,
          confState: confStateOf(membership),
        },
        data: snap.descriptor,
      },
      hardState: { term: BOOTSTRAP_TERM, vote: 0, commit: BOOTSTRAP_INDEX },
      mustSync: true,
    });
  }
}

/** Where a new cluster's history starts (see bootstrap). */
export const BOOTSTRAP_INDEX = 1;
export const BOOTSTRAP_TERM = 1;

/** Refuses to run a member whose stored membership contradicts it (removed, moved). */
export function checkMembership(
  membership: Membership,
  identity: StoredIdentity,
  o: ResolvedReplicatedOptions,
): void {
  if (isRemoved(membership, identity.memberId)) {
    throw new KvError(
      "FAILED_PRECONDITION",
      `${describe(identity)} was removed from the cluster: wipe ${o.dataDir} and add the member again (it gets a new ID)`,
    );
  }
  const me = memberOf(membership, identity.memberId);
  if (me !== undefined && me.peerAddress !== "" && me.peerAddress !== o.self.peerAddress) {
    throw new KvError(
      "FAILED_PRECONDITION",
      `the cluster knows ${describe(identity)} at peer address ${me.peerAddress}, but --initial-cluster gives ${o.self.peerAddress}`,
    );
  }
}

/**
 * Makes the Raft log agree with the store (see the module comment). Returns the index
 * the state machine has applied (RaftConfig.applied).
 */
export async function reconcile(store: StoreState, log: RaftLogStorage): Promise<number> {
  const snapshotIndex = log.firstIndex() - 1;
  if (store.index < snapshotIndex) {
    throw new KvError(
      "CORRUPTION",
      `the store has applied through ${store.index} but the Raft log starts after its snapshot at ${snapshotIndex}: ` +
        "the entries between are lost; remove this member and add it again",
    );
  }
  const init = log.initialState();
  if (init.repair !== undefined) return store.index;
  let term = -1;
  if (store.index <= log.lastIndex()) term = log.term(store.index);
  if (term === store.term) return store.index;
  const hs = init.hardState;
  const newTerm = Math.max(hs.term, store.term);
  await log.save({
    snapshot: {
      metadata: { index: store.index, term: store.term, confState: confStateOf(store.membership) },
      data: encodeDescriptor({ index: store.index, term: store.term, files: [] }),
    },
    hardState: {
      term: newTerm,
      vote: newTerm === hs.term ? hs.vote : 0,
      commit: Math.max(hs.commit, store.index),
    },
    mustSync: true,
  });
  return store.index;
}
