/**
 * The configuration of one Raft node: what the application passes to `new RawNode`, its
 * defaults, and its validation. A config that does not validate throws RaftError
 * INVALID_ARGUMENT naming the option, and nothing is built.
 */
import { RaftError } from "./errors.js";
import { type RaftLogger, SILENT_LOGGER } from "./logger.js";
import type { NodeId, RaftStorage } from "./types.js";

/**
 * How a leader confirms it still leads before answering a ReadIndex request.
 * - "safe": one round of heartbeats acknowledged by a quorum (no clock assumption).
 * - "leaseBased": no round; the leader trusts its lease (it heard from a quorum within the
 *   last election timeout and followers refuse to elect anyone else meanwhile). Correct
 *   only if ticks on all nodes run at the same rate within a bounded drift; requires
 *   `checkQuorum`. docs/raft.md ("Reads") explains the assumption.
 */
export type ReadOnlyOption = "safe" | "leaseBased";

export interface RaftConfig {
  /** This node's ID: a positive safe integer, unique in the group. */
  readonly id: NodeId;
  /** The log the node starts from (see RaftStorage); the application writes to it. */
  readonly storage: RaftStorage;
  /**
   * Ticks a follower waits without hearing from a leader before it campaigns; the actual
   * timeout is drawn at random in [electionTick, 2 * electionTick). Default 10.
   */
  readonly electionTick?: number;
  /** Ticks between a leader's heartbeats; below electionTick. Default 1. */
  readonly heartbeatTick?: number;
  /**
   * The index the application has already applied (its state machine holds the effect of
   * every entry up to it): entries up to it are not handed out again. Default 0, which
   * means "the storage's snapshot index" (the application restored that snapshot).
   */
  readonly applied?: number;
  /** The most entry bytes (data) in one append message; at least one entry is sent. Default 1 MiB. */
  readonly maxSizePerMsg?: number;
  /** The most entry bytes handed out in one Ready's committedEntries (at least one). Default 16 MiB. */
  readonly maxCommittedSizePerReady?: number;
  /** Append messages in flight (sent, not yet acknowledged) per follower. Default 256. */
  readonly maxInflightMsgs?: number;
  /** Entry bytes in flight per follower; at least maxSizePerMsg. Default 32 MiB. */
  readonly maxInflightBytes?: number;
  /**
   * The most bytes of proposed entries a leader holds uncommitted (not yet applied)
   * before it refuses proposals with PROPOSAL_TOO_LARGE_BACKLOG. One proposal is always
   * accepted when nothing is pending, whatever its size. Default 64 MiB.
   */
  readonly maxUncommittedEntriesSize?: number;
  /** Run a pre-election before campaigning (Raft thesis 9.6). Default true. */
  readonly preVote?: boolean;
  /**
   * A leader steps down when it has not heard from a quorum within an election timeout,
   * and followers that heard from a leader within one ignore vote requests. Default true.
   */
  readonly checkQuorum?: boolean;
  /** Default "safe". "leaseBased" requires checkQuorum. */
  readonly readOnlyOption?: ReadOnlyOption;
  /** A follower refuses proposals (PROPOSAL_DROPPED) instead of forwarding them to the leader. Default false. */
  readonly disableProposalForwarding?: boolean;
  /**
   * A leader whose commit index advanced tells a follower only with the next append or
   * heartbeat it sends anyway, not at once with an empty append of its own; a commit that
   * covers a membership change, the leader's first entry or an entry that follower
   * forwarded (its proposer waits for it) is still told at once. Saves
   * a message, its answer and a Ready per follower per write when writes come one at a
   * time; followers apply up to a heartbeat later once writes stop. Safety is unchanged
   * (the commit index is only ever learnt later). Default false (etcd's behaviour).
   */
  readonly deferCommitBroadcast?: boolean;
  /**
   * Seeds the randomized election timeout, the core's only randomness (mixed with the
   * node's ID, so that nodes given the same seed still draw different timeouts). Default 0.
   */
  readonly seed?: number;
  /** Where the core says what it does. Default: silent. */
  readonly logger?: RaftLogger;
}

/** A validated config with every default filled in. */
export interface ResolvedConfig {
  readonly id: NodeId;
  readonly storage: RaftStorage;
  readonly electionTick: number;
  readonly heartbeatTick: number;
  readonly applied: number;
  readonly maxSizePerMsg: number;
  readonly maxCommittedSizePerReady: number;
  readonly maxInflightMsgs: number;
  readonly maxInflightBytes: number;
  readonly maxUncommittedEntriesSize: number;
  readonly preVote: boolean;
  readonly checkQuorum: boolean;
  readonly readOnlyOption: ReadOnlyOption;
  readonly disableProposalForwarding: boolean;
  readonly deferCommitBroadcast: boolean;
  readonly seed: number;
  readonly logger: RaftLogger;
}

export const DEFAULTS = {
  electionTick: 10,
  heartbeatTick: 1,
  maxSizePerMsg: 1 << 20,
  maxCommittedSizePerReady: 16 << 20,
  maxInflightMsgs: 256,
  maxInflightBytes: 32 << 20,
  maxUncommittedEntriesSize: 64 << 20,
} as const;

function invalid(message: string): never {
  throw new RaftError("INVALID_ARGUMENT", `raft config: ${message}`);
}

function integer(name: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < min) {
    invalid(`${name} must be an integer >= ${min} (got ${String(value)})`);
  }
  return value;
}

/** Validates `config` and fills in the defaults; throws RaftError INVALID_ARGUMENT. */
export function resolveConfig(config: RaftConfig): ResolvedConfig {
  if (config === null || typeof config !== "object") invalid("missing");
  const id = integer("id", config.id, 0, 1);
  if (config.id === undefined) invalid("id is required");
  if (config.storage === undefined || config.storage === null) invalid("storage is required");
  const heartbeatTick = integer("heartbeatTick", config.heartbeatTick, DEFAULTS.heartbeatTick, 1);
  const electionTick = integer("electionTick", config.electionTick, DEFAULTS.electionTick, 1);
  if (electionTick <= heartbeatTick) {
    invalid(`electionTick (${electionTick}) must be greater than heartbeatTick (${heartbeatTick})`);
  }
  const maxSizePerMsg = integer("maxSizePerMsg", config.maxSizePerMsg, DEFAULTS.maxSizePerMsg, 1);
  const maxInflightBytes = integer(
    "maxInflightBytes",
    config.maxInflightBytes,
    Math.max(DEFAULTS.maxInflightBytes, maxSizePerMsg),
    1,
  );
  if (maxInflightBytes < maxSizePerMsg) {
    invalid(`maxInflightBytes (${maxInflightBytes}) must be >= maxSizePerMsg (${maxSizePerMsg})`);
  }
  const checkQuorum = config.checkQuorum ?? true;
  const readOnlyOption = config.readOnlyOption ?? "safe";
  if (readOnlyOption !== "safe" && readOnlyOption !== "leaseBased") {
    invalid(`readOnlyOption must be "safe" or "leaseBased" (got ${String(readOnlyOption)})`);
  }
  if (readOnlyOption === "leaseBased" && !checkQuorum) {
    invalid('readOnlyOption "leaseBased" requires checkQuorum');
  }
  const seed = config.seed ?? 0;
  if (!Number.isSafeInteger(seed)) invalid(`seed must be a safe integer (got ${String(seed)})`);
  return {
    id,
    storage: config.storage,
    electionTick,
    heartbeatTick,
    applied: integer("applied", config.applied, 0, 0),
    maxSizePerMsg,
    maxCommittedSizePerReady: integer(
      "maxCommittedSizePerReady",
      config.maxCommittedSizePerReady,
      DEFAULTS.maxCommittedSizePerReady,
      1,
    ),
    maxInflightMsgs: integer(
      "maxInflightMsgs",
      config.maxInflightMsgs,
      DEFAULTS.maxInflightMsgs,
      1,
    ),
    maxInflightBytes,
    maxUncommittedEntriesSize: integer(
      "maxUncommittedEntriesSize",
      config.maxUncommittedEntriesSize,
      DEFAULTS.maxUncommittedEntriesSize,
      1,
    ),
    preVote: config.preVote ?? true,
    checkQuorum,
    readOnlyOption,
    disableProposalForwarding: config.disableProposalForwarding ?? false,
    deferCommitBroadcast: config.deferCommitBroadcast ?? false,
    seed,
    logger: config.logger ?? SILENT_LOGGER,
  };
}
