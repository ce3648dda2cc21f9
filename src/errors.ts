/**
 * The one error class of KV Engine. Callers branch on `code`, never on `message`.
 * Every code is listed, with its meaning and gRPC status, in docs/errors.md.
 */
export type ErrorCode =
  /** Bad input from the caller (empty key, non-byte key, bad option); nothing was changed. */
  | "INVALID_ARGUMENT"
  /** Stored data failed a check (checksum, framing, impossible length). */
  | "CORRUPTION"
  /** The operating system reported an I/O failure. */
  | "IO_ERROR"
  /** The store is closed or closing. */
  | "CLOSED"
  /** Another handle (in this process or another) holds the data directory's lock. */
  | "LOCKED"
  /**
   * A write to the log or a sync failed earlier; the store refuses writes until it is
   * reopened, because the state of unsynced data is unknown (see docs/design.md).
   */
  | "READ_ONLY"
  /** The caller's AbortSignal fired before the write was committed; nothing was written. */
  | "ABORTED"
  /**
   * Replicated store: the call could not be served now and nothing was done: no leader is
   * known (a write was not proposed: safe to retry, here or at another node), or a
   * linearizable read was not confirmed by a majority before its deadline. `leaderHint`
   * names the leader's client address when this node knows it.
   */
  | "UNAVAILABLE"
  /**
   * Replicated store: a write was proposed but its outcome is unknown (its deadline or
   * signal fired, or the node closed, before it was applied here): it may or may not take
   * effect. Read to find out; do not retry blindly.
   */
  | "OUTCOME_UNKNOWN"
  /**
   * Replicated store: a write was refused before it was proposed, because its entry is
   * larger than the limit or the leader's backlog of uncommitted entries is full.
   */
  | "RESOURCE_EXHAUSTED"
  /**
   * Replicated store: the cluster's state does not allow the call: a stored identity or
   * data directory that contradicts the options, a peer of another cluster or a removed
   * member, a membership change while another is pending, an unknown member, a node that
   * was removed from the cluster.
   */
  | "FAILED_PRECONDITION"
  /**
   * Replicated store: a write of a client session was refused, and nothing was applied,
   * because the session is unknown or expired (idle longer than the session TTL, or
   * evicted). A client opens a new session; a write it had sent before under the expired
   * one has an unknown outcome.
   */
  | "SESSION_EXPIRED"
  /**
   * The disk, or the user's quota, is full: a file write failed with ENOSPC or EDQUOT. The
   * store refuses writes meanwhile (reads go on) and resumes by itself once space is
   * freed (see docs/design.md, "When the disk is full").
   */
  | "NO_SPACE"
  /**
   * A multi-version read (or compaction) asked for a revision whose history was compacted
   * away (etcd: "mvcc: required revision has been compacted"). Nothing was read or changed.
   */
  | "COMPACTED"
  /**
   * A multi-version read (or compaction) asked for a revision the store has not reached
   * (etcd: "mvcc: required revision is a future revision"). Nothing was read or changed.
   */
  | "FUTURE_REVISION";

export interface KvErrorOptions {
  cause?: unknown;
  /** The file the error concerns, when there is one. */
  file?: string;
  /** UNAVAILABLE from a replicated store: the leader's client address, when known. */
  leaderHint?: string;
}

export class KvError extends Error {
  override readonly name = "KvError";
  readonly code: ErrorCode;
  readonly file: string | undefined;
  readonly leaderHint: string | undefined;

  constructor(code: ErrorCode, message: string, options: KvErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.file = options.file;
    this.leaderHint = options.leaderHint;
  }
}

/** True iff `err` is a KvError (with `code` when given). */
export function isKvError(err: unknown, code?: ErrorCode): err is KvError {
  return err instanceof KvError && (code === undefined || err.code === code);
}

/** The operating system's codes for "no space": a full device, an exhausted quota. */
const NO_SPACE_CODES: ReadonlySet<unknown> = new Set(["ENOSPC", "EDQUOT"]);

/**
 * True iff `err` is a no-space failure: a KvError NO_SPACE, or an error whose `code` is
 * ENOSPC or EDQUOT, itself or anywhere down its chain of causes.
 */
export function isNoSpace(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === "object" && e !== null && depth < 8; depth++) {
    if (e instanceof KvError && e.code === "NO_SPACE") return true;
    if (NO_SPACE_CODES.has((e as { code?: unknown }).code)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Wraps an operating-system error (or anything thrown by a file system) as IO_ERROR, or
 * as NO_SPACE when it is a no-space failure (isNoSpace). A KvError is returned as it is.
 */
export function ioError(what: string, cause: unknown, file?: string): KvError {
  if (cause instanceof KvError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  const noSpace = isNoSpace(cause);
  return new KvError(
    noSpace ? "NO_SPACE" : "IO_ERROR",
    noSpace ? `${what}: the disk is full: ${detail}` : `${what}: ${detail}`,
    file === undefined ? { cause } : { cause, file },
  );
}
