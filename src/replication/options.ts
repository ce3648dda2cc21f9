/**
 * Options of ReplicatedStore.open, and their defaults and checks. The server's flags map
 * onto them (docs/cluster.md, "Starting a cluster").
 */

import type { StoreEventListener } from "../db/events.js";
import type {
  BackendReadOptions,
  BackendScanOptions,
  BackendWriteOptions,
} from "../db/kv-backend.js";
import type { OpenOptions } from "../db/options.js";
import { KvError } from "../errors.js";
import type { RaftLogger } from "../raft/logger.js";
import type { RaftLogStorageOptions } from "../raft/storage/raft-log-storage.js";
import type { FileSystem } from "../vfs/file-system.js";
import { RealFileSystem } from "../vfs/real-file-system.js";
import type { ReplicationEventListener } from "./events.js";
import {
  checkAddress,
  checkInitialCluster,
  checkMemberName,
  DEFAULT_CLUSTER_TOKEN,
  type InitialMember,
  parseInitialCluster,
} from "./identity.js";
import { isMemberId, type MemberId } from "./members.js";
import type { PeerTransport } from "./peer-transport.js";

/** Write options of a replicated store. */
export interface ReplicatedWriteOptions extends BackendWriteOptions {
  /** Milliseconds to wait for the apply (default: the store's proposalTimeoutMs). */
  timeoutMs?: number;
}

/** Read options of a replicated store. */
export interface ReplicatedReadOptions extends BackendReadOptions {
  /** Milliseconds a linearizable read waits for its confirmation (default: readTimeoutMs). */
  timeoutMs?: number;
}

export interface ReplicatedScanOptions extends BackendScanOptions {
  timeoutMs?: number;
}

/** The Raft log's `preallocateBytes` unless raftLogOptions say otherwise. */
const RAFT_LOG_PREALLOCATE_BYTES = 1 << 20;

export interface ReplicatedStoreOptions {
  /** The member's data directory D (`--data-dir`); layout in node-dir.ts. */
  dataDir: string;
  /** This member's name (`--name`); it must appear in `initialCluster`. */
  name: string;
  /**
   * The initial members (`--initial-cluster n1=H1:PP1,...`), as the string or parsed.
   * This member's entry gives its peer address.
   */
  initialCluster: string | readonly InitialMember[];
  /**
   * "new" (default): bootstrap a cluster of `initialCluster` on first start.
   * "existing": join a running cluster that added this member with MemberAdd; `join` then
   * carries the IDs MemberAdd returned (needed on the first start only).
   */
  initialClusterState?: "new" | "existing";
  /** `--initial-cluster-token`; part of the cluster ID. Default "kv-engine-cluster". */
  initialClusterToken?: string;
  /** For "existing": the cluster ID and this member's ID, as MemberAdd returned them. */
  join?: { clusterId: number; memberId: MemberId };
  /** This member's advertised client address (`host:port`), published to the cluster. Default "". */
  clientAddress?: string;
  /** How to reach the other members. The store starts and closes it. */
  transport: PeerTransport;
  /** File system. Default: the real one. */
  fs?: FileSystem;
  /** Milliseconds per Raft tick (the heartbeat interval). Default 100. */
  tickMs?: number;
  /**
   * Ticks without hearing from a leader before a follower campaigns; each election
   * timeout is drawn from [electionTicks, 2 * electionTicks) ticks. Default 6 (600-1200 ms
   * at 100 ms per tick; see docs/cluster.md, "Timeouts").
   */
  electionTicks?: number;
  /** Ticks between a leader's heartbeats. Default 1. */
  heartbeatTicks?: number;
  /**
   * A leader tells followers a new commit index with its next append or heartbeat, or, when
   * none went out within this many milliseconds, with an append of its own: the longest a
   * follower's state machine (its serializable reads, its watchers) lags a lone write by
   * beyond a round trip. Default 2.
   */
  commitTellMs?: number;
  /** Milliseconds a write waits for its apply when the caller gives no signal. Default 10,000. */
  proposalTimeoutMs?: number;
  /** Milliseconds a linearizable read waits for its confirmation when the caller gives no signal. Default 5,000. */
  readTimeoutMs?: number;
  /**
   * Milliseconds a new write waits for a leader it can be handed to (none known, or the
   * known one unreachable) before it fails as not proposed (UNAVAILABLE). Default: the
   * longest randomized election timeout, 2 x electionTicks x tickMs.
   */
  holdForLeaderMs?: number;
  /**
   * Give a store of the first layout (made before revisions: it serves kv.v1 only)
   * revisions: while this member leads and its store lacks them, it proposes the entry
   * every member converts its store at (docs/cluster.md, "Revisions"). Run every member
   * with this version first: an older member stops at that entry. Default false.
   */
  upgradeRevisions?: boolean;
  /**
   * Tests only: bootstrap a new cluster's stores in the first layout, without revisions,
   * as versions before revisions did. Default false.
   */
  bootstrapWithoutRevisions?: boolean;
  /**
   * A new cluster's first start: a single-node store directory with revisions whose
   * multi-version keys the member's store starts with (initial-data.ts). Give every
   * initial member the same one. Ignored once the member's directory is made.
   */
  initialData?: string;
  /** Largest entry (encoded command) proposed; larger writes are refused. Default 4 MiB. */
  maxEntryBytes?: number;
  /** A snapshot is taken once this many entries were applied since the last. Default 10,000. */
  snapshotEntries?: number;
  /** ... or once this many bytes of entries were applied since the last. Default 64 MiB. */
  snapshotBytes?: number;
  /** Entries kept in the Raft log behind a snapshot, for followers that lag a little. Default 5,000. */
  catchUpEntries?: number;
  /**
   * A learner is promoted to voter once the leader replicates to it by streaming (not
   * probing, not by snapshot) and its log is within this many entries of the leader's
   * commit index. Default 100.
   */
  promoteLagEntries?: number;
  /** Snapshot bytes per chunk read for a transport. Default 1 MiB. */
  snapshotChunkBytes?: number;
  /** Options of the member's KvStore (fs, sync and onEvent are set by the replicated store). */
  storeOptions?: Omit<OpenOptions, "fs" | "sync" | "onEvent" | "createIfMissing" | "errorIfExists">;
  /**
   * Options of the Raft log. `preallocateBytes` defaults to 1 MiB here (RaftLogStorage's own
   * default is 0): every commit fdatasyncs the log, and an overwrite of preallocated blocks
   * syncs without a journal commit of the file's size.
   */
  raftLogOptions?: Omit<RaftLogStorageOptions, "createIfMissing">;
  /** Cluster events (events.ts). */
  onEvent?: ReplicationEventListener;
  /** The local store's events (as OpenOptions.onEvent). */
  onStoreEvent?: StoreEventListener;
  /** The Raft core's log lines. Default: silent. */
  raftLogger?: RaftLogger;
  /** Seeds the randomized election timeout. Default: random. */
  seed?: number;
}

export interface ResolvedReplicatedOptions {
  readonly dataDir: string;
  readonly name: string;
  readonly initialCluster: readonly InitialMember[];
  readonly self: InitialMember;
  readonly state: "new" | "existing";
  readonly token: string;
  readonly join: { clusterId: number; memberId: MemberId } | undefined;
  readonly clientAddress: string;
  readonly transport: PeerTransport;
  readonly fs: FileSystem;
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly heartbeatTicks: number;
  readonly commitTellMs: number;
  readonly proposalTimeoutMs: number;
  readonly readTimeoutMs: number;
  readonly holdForLeaderMs: number;
  readonly upgradeRevisions: boolean;
  readonly bootstrapWithoutRevisions: boolean;
  readonly initialData: string | undefined;
  readonly maxEntryBytes: number;
  readonly snapshotEntries: number;
  readonly snapshotBytes: number;
  readonly catchUpEntries: number;
  readonly promoteLagEntries: number;
  readonly snapshotChunkBytes: number;
  readonly storeOptions: ReplicatedStoreOptions["storeOptions"];
  readonly raftLogOptions: ReplicatedStoreOptions["raftLogOptions"];
  readonly onEvent: ReplicationEventListener | undefined;
  readonly onStoreEvent: StoreEventListener | undefined;
  readonly raftLogger: RaftLogger | undefined;
  readonly seed: number;
}

function invalid(message: string): KvError {
  return new KvError("INVALID_ARGUMENT", message);
}

function integer(v: number | undefined, def: number, name: string, min: number): number {
  if (v === undefined) return def;
  if (!Number.isSafeInteger(v) || v < min) throw invalid(`${name} must be an integer >= ${min}`);
  return v;
}

export function resolveReplicatedOptions(o: ReplicatedStoreOptions): ResolvedReplicatedOptions {
  if (typeof o !== "object" || o === null) throw invalid("options must be an object");
  if (typeof o.dataDir !== "string" || o.dataDir === "")
    throw invalid("dataDir must be a non-empty string");
  const name = checkMemberName(o.name, "name");
  const initialCluster =
    typeof o.initialCluster === "string"
      ? parseInitialCluster(o.initialCluster)
      : [...(o.initialCluster ?? [])];
  checkInitialCluster(initialCluster);
  const self = initialCluster.find((m) => m.name === name);
  if (self === undefined) {
    throw invalid(
      `the initial cluster does not name this member (${name}): it must list name=peerHost:peerPort for it`,
    );
  }
  const state = o.initialClusterState ?? "new";
  if (state !== "new" && state !== "existing") {
    throw invalid(`initialClusterState must be "new" or "existing", got ${String(state)}`);
  }
  const token = o.initialClusterToken ?? DEFAULT_CLUSTER_TOKEN;
  if (typeof token !== "string" || token === "")
    throw invalid("initialClusterToken must be a non-empty string");
  let join: ResolvedReplicatedOptions["join"];
  if (o.join !== undefined) {
    if (state !== "existing") throw invalid('join is only for initialClusterState "existing"');
    if (!isMemberId(o.join.clusterId) || !isMemberId(o.join.memberId)) {
      throw invalid("join needs the clusterId and memberId MemberAdd returned (positive integers)");
    }
    join = { clusterId: o.join.clusterId, memberId: o.join.memberId };
  }
  const clientAddress = o.clientAddress ?? "";
  if (clientAddress !== "") checkAddress(clientAddress, "clientAddress");
  const t = o.transport as Partial<PeerTransport> | undefined;
  if (t === undefined || typeof t.send !== "function" || typeof t.start !== "function") {
    throw invalid("transport must be a PeerTransport");
  }
  const electionTicks = integer(o.electionTicks, 6, "electionTicks", 2);
  const tickMs = integer(o.tickMs, 100, "tickMs", 1);
  const heartbeatTicks = integer(o.heartbeatTicks, 1, "heartbeatTicks", 1);
  if (heartbeatTicks >= electionTicks) throw invalid("heartbeatTicks must be below electionTicks");
  return {
    dataDir: o.dataDir,
    name,
    initialCluster,
    self,
    state,
    token,
    join,
    clientAddress,
    transport: o.transport,
    fs: o.fs ?? new RealFileSystem(),
    tickMs,
    electionTicks,
    heartbeatTicks,
    commitTellMs: integer(o.commitTellMs, 2, "commitTellMs", 0),
    proposalTimeoutMs: integer(o.proposalTimeoutMs, 10_000, "proposalTimeoutMs", 1),
    readTimeoutMs: integer(o.readTimeoutMs, 5_000, "readTimeoutMs", 1),
    holdForLeaderMs: integer(o.holdForLeaderMs, 2 * electionTicks * tickMs, "holdForLeaderMs", 0),
    upgradeRevisions: o.upgradeRevisions === true,
    bootstrapWithoutRevisions: o.bootstrapWithoutRevisions === true,
    initialData: o.initialData,
    maxEntryBytes: integer(o.maxEntryBytes, 4 << 20, "maxEntryBytes", 1024),
    snapshotEntries: integer(o.snapshotEntries, 10_000, "snapshotEntries", 1),
    snapshotBytes: integer(o.snapshotBytes, 64 << 20, "snapshotBytes", 1),
    catchUpEntries: integer(o.catchUpEntries, 5_000, "catchUpEntries", 0),
    promoteLagEntries: integer(o.promoteLagEntries, 100, "promoteLagEntries", 0),
    snapshotChunkBytes: integer(o.snapshotChunkBytes, 1 << 20, "snapshotChunkBytes", 1),
    storeOptions: o.storeOptions,
    raftLogOptions: { preallocateBytes: RAFT_LOG_PREALLOCATE_BYTES, ...o.raftLogOptions },
    onEvent: o.onEvent,
    onStoreEvent: o.onStoreEvent,
    raftLogger: o.raftLogger,
    seed: o.seed ?? Math.floor(Math.random() * 2 ** 31),
  };
}
