/**
 * The durable Raft log (docs/format/raft-log.md): RaftLogStorage implements the core's
 * RaftStorage on a FileSystem, plus the writes an application makes per Ready.
 */
export type { RaftLogUpdate } from "./log-state.js";
export {
  type RaftLogRecoveryReport,
  RaftLogStorage,
  type RaftLogStorageOptions,
} from "./raft-log-storage.js";
export type { RaftLogDamage } from "./recovery.js";
