/**
 * The one error class of KvClient: a call that ended with a non-OK gRPC status. Callers
 * branch on `code` (a grpc-js `status` number; `codeName` spells it), never on `message`.
 * The meaning of each code for this service is listed in docs/errors.md.
 */
import { status } from "@grpc/grpc-js";

/** Trailing metadata of the server (src/server/rpc-status.ts): the engine's error code. */
export const ERROR_CODE_TRAILER = "kv-error";
/** Trailing metadata of the server: the leader's client address. */
export const LEADER_TRAILER = "kv-leader";

export class KvClientError extends Error {
  override readonly name = "KvClientError";

  constructor(
    /** The gRPC status code, e.g. `status.INVALID_ARGUMENT` (3). */
    readonly code: status,
    /** The server's (or the transport's) explanation. */
    readonly details: string,
    options?: {
      cause?: unknown;
      serverCode?: string | undefined;
      leaderHint?: string | undefined;
      endpoint?: string | undefined;
    },
  ) {
    super(`${status[code] ?? `status ${code}`}: ${details}`, options);
    this.serverCode = options?.serverCode;
    this.leaderHint = options?.leaderHint;
    this.endpoint = options?.endpoint;
  }

  /**
   * The engine's error code behind the status when the server sent one (trailer
   * `kv-error`): e.g. "UNAVAILABLE" (a cluster member did not propose the write: safe to
   * retry) or "OUTCOME_UNKNOWN" (the write may or may not take effect).
   */
  readonly serverCode: string | undefined;
  /** The leader's client address when the server named it (trailer `kv-leader`). */
  readonly leaderHint: string | undefined;
  /** The endpoint whose answer this is (undefined when no call was made). */
  readonly endpoint: string | undefined;

  /** The name of the status code, e.g. "INVALID_ARGUMENT". */
  get codeName(): string {
    return status[this.code] ?? String(this.code);
  }

  /**
   * True iff the server said nothing was done, so the call may go to another member: a
   * cluster member's "not proposed" (UNAVAILABLE with kv-error UNAVAILABLE).
   */
  get notProposed(): boolean {
    return this.code === status.UNAVAILABLE && this.serverCode === "UNAVAILABLE";
  }

  /** True iff grpc-js failed the call before sending it (no connection to the endpoint). */
  get neverSent(): boolean {
    return (
      this.code === status.UNAVAILABLE &&
      this.serverCode === undefined &&
      /(^|: )No connection established/.test(this.details)
    );
  }

  /**
   * True iff a write failed without knowing whether it took effect: the server said so
   * (OUTCOME_UNKNOWN), the deadline passed, or the call was sent and its connection was
   * lost before an answer (UNAVAILABLE without an engine code, e.g. "Connection dropped").
   */
  get outcomeUnknown(): boolean {
    return (
      this.serverCode === "OUTCOME_UNKNOWN" ||
      this.code === status.DEADLINE_EXCEEDED ||
      (this.code === status.UNAVAILABLE && this.serverCode === undefined && !this.neverSent)
    );
  }
}

/** True iff `err` is a KvClientError (with status `code` when given). */
export function isKvClientError(err: unknown, code?: status): err is KvClientError {
  return err instanceof KvClientError && (code === undefined || err.code === code);
}

function trailer(err: object, key: string): string | undefined {
  if (!("metadata" in err)) return undefined;
  const md = err.metadata as { get?: (k: string) => unknown[] } | undefined;
  const v = md?.get?.(key)?.[0];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** A grpc-js call error (or anything thrown) as a KvClientError. */
export function toClientError(err: unknown, endpoint?: string): KvClientError {
  if (err instanceof KvClientError) return err;
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "number") {
    const details = "details" in err && typeof err.details === "string" ? err.details : "";
    return new KvClientError(err.code as status, details, {
      cause: err,
      serverCode: trailer(err, ERROR_CODE_TRAILER),
      leaderHint: trailer(err, LEADER_TRAILER),
      endpoint,
    });
  }
  const text = err instanceof Error ? err.message : String(err);
  return new KvClientError(status.UNKNOWN, text, { cause: err, endpoint });
}
