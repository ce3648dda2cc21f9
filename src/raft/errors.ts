/**
 * The error class of the Raft core. Callers branch on `code`, never on `message`; every
 * code is listed, with its meaning, in docs/raft.md ("Errors"), and the KV service maps
 * them to gRPC status codes (docs/errors.md).
 */
export type RaftErrorCode =
  /** Storage: the requested index is at or below the snapshot (compacted away). */
  | "COMPACTED"
  /** Storage: the requested index is past the last entry. */
  | "UNAVAILABLE"
  /** Storage: no snapshot can be made right now; the core retries later. */
  | "SNAPSHOT_TEMPORARILY_UNAVAILABLE"
  /** Storage: a snapshot offered is not newer than the one stored; nothing changed. */
  | "SNAPSHOT_OUT_OF_DATE"
  /**
   * A proposal was not accepted: no leader is known, a leadership transfer is in
   * progress, the node was removed, or forwarding is disabled. Nothing was appended.
   */
  | "PROPOSAL_DROPPED"
  /**
   * A proposal would push the uncommitted tail past `maxUncommittedEntriesSize`
   * (back-pressure): nothing was appended; retry once earlier entries commit.
   */
  | "PROPOSAL_TOO_LARGE_BACKLOG"
  /**
   * A ReadIndex request was not accepted: this node knows no leader (a candidate, or a
   * follower that has not heard from one). Nothing was queued; retry once a leader is known.
   */
  | "READ_INDEX_DROPPED"
  /** A membership change was proposed while another is not yet applied. */
  | "CONF_CHANGE_PENDING"
  /** A message was stepped from or to a node the configuration does not know. */
  | "PEER_NOT_FOUND"
  /** A configuration option or argument is invalid; nothing changed. */
  | "INVALID_ARGUMENT"
  /** Bytes (a message from the wire, a stored entry) do not decode (codec.ts). */
  | "MALFORMED";

export class RaftError extends Error {
  override readonly name = "RaftError";
  readonly code: RaftErrorCode;

  constructor(code: RaftErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/** True iff `err` is a RaftError (with `code` when given). */
export function isRaftError(err: unknown, code?: RaftErrorCode): err is RaftError {
  return err instanceof RaftError && (code === undefined || err.code === code);
}
