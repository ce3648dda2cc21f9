/**
 * The replicated store (docs/cluster.md): a KvBackend replicated by Raft, its peer
 * transport interface, and an in-memory transport for tests.
 */
export type { ChangeContext, Command } from "./command.js";
export {
  emitReplicationEvent,
  type ReplicationEvent,
  type ReplicationEventListener,
} from "./events.js";
export {
  checkAddress,
  clusterIdOf,
  DEFAULT_CLUSTER_TOKEN,
  type InitialMember,
  initialMemberId,
  parseInitialCluster,
} from "./identity.js";
export { formatMemberId, type MemberId, type MemberInfo, type Membership } from "./members.js";
export {
  type BatchHook,
  MemoryNetwork,
  type MemoryNetworkOptions,
  MemoryTransport,
  type SnapshotChunkHook,
} from "./memory-transport.js";
export type { ReplicatedStoreOptions } from "./options.js";
export type {
  OutgoingSnapshot,
  PeerAddress,
  PeerEnvelope,
  PeerHandler,
  PeerTransport,
  SnapshotFileInfo,
  SnapshotSink,
} from "./peer-transport.js";
export {
  type ClusterStats,
  type MemberStatus,
  type MemberView,
  type ReplicatedReadOptions,
  type ReplicatedScanOptions,
  ReplicatedStore,
  type ReplicatedWriteOptions,
} from "./replicated-store.js";
