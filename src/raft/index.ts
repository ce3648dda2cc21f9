/**
 * kv-engine/raft: a Raft consensus core for Node.js, after etcd-io/raft. A deterministic
 * state machine (no I/O, no timers, seeded randomness) the application drives through
 * `RawNode`; docs/raft.md is the manual.
 */
export {
  decodeConfChange,
  decodeEntry,
  decodeHardState,
  decodeMessage,
  decodeSnapshotMetadata,
  encodeConfChange,
  encodeEntry,
  encodeHardState,
  encodeMessage,
  encodeSnapshotMetadata,
} from "./codec.js";
export { DEFAULTS, type RaftConfig, type ReadOnlyOption } from "./config.js";
export {
  describeBytes,
  describeEntries,
  describeEntry,
  describeMessage,
  describeSnapshot,
} from "./describe.js";
export { isRaftError, RaftError, type RaftErrorCode } from "./errors.js";
export { type RaftLogger, SILENT_LOGGER } from "./logger.js";
export { describeConfChange, describeConfState } from "./membership.js";
export { MemoryStorage, type MemoryStorageOptions } from "./memory-storage.js";
export type { ProgressState } from "./progress.js";
export { RawNode, type Ready, type SnapshotStatus } from "./raw-node.js";
export type { PeerProgress, RaftStatus } from "./status.js";
export {
  type RaftLogDamage,
  type RaftLogRecoveryReport,
  RaftLogStorage,
  type RaftLogStorageOptions,
  type RaftLogUpdate,
} from "./storage/index.js";
export {
  type ConfChange,
  type ConfChangeType,
  type ConfState,
  EMPTY_SNAPSHOT,
  type Entry,
  type EntryType,
  type HardState,
  type InitialState,
  type Message,
  type MessageType,
  NONE,
  type NodeId,
  type RaftRole,
  type RaftStorage,
  type ReadState,
  type Snapshot,
  type SnapshotMetadata,
  type SoftState,
} from "./types.js";
