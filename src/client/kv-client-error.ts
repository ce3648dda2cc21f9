/**
 * The one error class of KvClient: a call that ended with a non-OK gRPC status. Callers
 * branch on `code` (a grpc-js `status` number; `codeName` spells it) and on `failure`,
 * `notProposed`, `outcomeUnknown`, never on `message`. The meaning of each code for this
 * service is listed in docs/errors.md.
 *
 * `message` is the client's own account, for people: what happened, whether a write may
 * have been applied, what to do. It never holds the transport's wording (grpc-js texts
 * are mapped in call-failure.ts). With several endpoints it also says how each of the
 * others failed, most informative first (see `others`).
 */
import { status } from "@grpc/grpc-js";

/** Trailing metadata of the server (src/server/rpc-status.ts): the engine's error code. */
export const ERROR_CODE_TRAILER = "kv-error";
/** Trailing metadata of the server: the leader's client address. */
export const LEADER_TRAILER = "kv-leader";

/**
 * How a call failed, as far as the client can tell:
 * - "answered": the server (or, for an oversized answer, this client) ended it with a status;
 * - "no-connection": it never left this process (no connection to the endpoint);
 * - "lost": it was sent, and the connection was lost before an answer;
 * - "deadline": it was sent, and no answer came before its deadline.
 */
export type CallFailure = "answered" | "no-connection" | "lost" | "deadline";

export interface KvClientErrorOptions {
  cause?: unknown;
  serverCode?: string | undefined;
  leaderHint?: string | undefined;
  endpoint?: string | undefined;
  /** Default "answered". */
  failure?: CallFailure;
  /** The account for people, without the status name and the endpoint (default: details). */
  text?: string;
  /** How the other endpoints tried failed (their last failure each). */
  others?: readonly KvClientError[];
  /** A session write whose outcome stayed unknown: sends it again (see UnresolvedWrite). */
  unresolved?: UnresolvedWrite | undefined;
  /** For COMPACTED: the compacted revision, when the server said it. */
  compactRevision?: number | undefined;
}

/**
 * A write of a client session whose outcome stayed unknown when its call ended
 * (KvClientError.unresolved): it can be sent again later with its place in the session,
 * and is then applied at most once in all (docs/cluster.md, "Retries that apply once").
 */
export interface UnresolvedWrite {
  /**
   * Sends the write again (same session, same sequence number) until answered within the
   * call's deadline: resolves with its result (the first one if it had applied), as the
   * write's own call would (a CasOutcome for a compare-and-swap, else undefined). Rejects
   * like the write; an unknown outcome again carries a new `unresolved`. Once `givenUp`,
   * rejects with the outcome unknown for good.
   */
  resend(options?: { timeoutMs?: number }): Promise<unknown>;
  /**
   * True once the write can no longer be resolved: its session expired or was replaced, or
   * the client gave it up to keep its window (write-session.ts, MAX_WINDOW).
   */
  readonly givenUp: boolean;
}

export class KvClientError extends Error {
  override readonly name = "KvClientError";
  /**
   * The engine's error code behind the status when the server sent one (trailer
   * `kv-error`): e.g. "UNAVAILABLE" (a cluster member did not propose the write: safe to
   * retry) or "OUTCOME_UNKNOWN" (the write may or may not take effect). For EtcdClient,
   * the code of etcd's message (docs/client.md, "etcd's errors"): e.g. "COMPACTED".
   */
  readonly serverCode: string | undefined;
  /** For COMPACTED: the compacted revision, when the server said it (a watch's cancel). */
  readonly compactRevision: number | undefined;
  /** The leader's client address when the server named it (trailer `kv-leader`). */
  readonly leaderHint: string | undefined;
  /** The endpoint whose answer (or failure) this is (undefined when no call was made). */
  readonly endpoint: string | undefined;
  /** How the call failed (see CallFailure). */
  readonly failure: CallFailure;
  /** The account for people, without the status name and the endpoint. */
  readonly text: string;
  /** Set for a write of a client session whose outcome stayed unknown (UnresolvedWrite). */
  readonly unresolved: UnresolvedWrite | undefined;
  /** With several endpoints: how each other endpoint tried failed last, most informative first. */
  readonly others: readonly KvClientError[];

  constructor(
    /** The gRPC status code, e.g. `status.INVALID_ARGUMENT` (3). */
    readonly code: status,
    /**
     * What the server said, verbatim, when it answered; else the client's account of the
     * failure (as `text`).
     */
    readonly details: string,
    options: KvClientErrorOptions = {},
  ) {
    super("", options.cause === undefined ? undefined : { cause: options.cause });
    this.serverCode = options.serverCode;
    this.leaderHint = options.leaderHint;
    this.endpoint = options.endpoint;
    this.failure = options.failure ?? "answered";
    this.text = options.text ?? details;
    this.others = options.others ?? [];
    this.unresolved = options.unresolved;
    this.compactRevision = options.compactRevision;
    this.message = composeMessage(this);
  }

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

  /** True iff the call never left this process (no connection to the endpoint). */
  get neverSent(): boolean {
    return this.failure === "no-connection";
  }

  /**
   * True iff a write failed without knowing whether it took effect: the server said so
   * (OUTCOME_UNKNOWN), the call was sent and then its deadline passed (also when the
   * server itself answered DEADLINE_EXCEEDED) or its connection was lost before an answer,
   * or an UNAVAILABLE came without the engine's code (which the client cannot place).
   */
  get outcomeUnknown(): boolean {
    return (
      this.serverCode === "OUTCOME_UNKNOWN" ||
      this.failure === "lost" ||
      this.failure === "deadline" ||
      (this.failure === "answered" &&
        (this.code === status.DEADLINE_EXCEEDED ||
          (this.code === status.UNAVAILABLE && this.serverCode === undefined)))
    );
  }

  /** This error, with how the other endpoints failed (the message then lists them too). */
  withOthers(others: readonly KvClientError[]): KvClientError {
    return others.length === 0 ? this : this.with({ others });
  }

  /** This error, marked resendable through `unresolved`. */
  withUnresolved(unresolved: UnresolvedWrite): KvClientError {
    return this.with({ unresolved });
  }

  /** This error with the code `serverCode` (an etcd message's, docs/client.md). */
  withServerCode(serverCode: string, compactRevision?: number): KvClientError {
    return this.with({ serverCode, compactRevision });
  }

  /** A copy of this error with `changes`. */
  private with(
    changes: Pick<KvClientErrorOptions, "others" | "unresolved" | "serverCode" | "compactRevision">,
  ): KvClientError {
    return new KvClientError(this.code, this.details, {
      cause: this.cause,
      serverCode: this.serverCode,
      leaderHint: this.leaderHint,
      endpoint: this.endpoint,
      failure: this.failure,
      text: this.text,
      others: this.others,
      unresolved: this.unresolved,
      compactRevision: this.compactRevision,
      ...changes,
    });
  }
}

/**
 * "CODE: ENDPOINT: TEXT" ("CODE: TEXT" when no call was made), then one line for each
 * other way the other endpoints failed (endpoints that failed alike share a line).
 */
function composeMessage(e: KvClientError): string {
  const groups = [{ endpoints: e.endpoint === undefined ? [] : [e.endpoint], text: e.text }];
  for (const o of e.others) {
    const same = groups.find((g) => g.text === o.text);
    if (same !== undefined) same.endpoints.push(o.endpoint ?? "?");
    else groups.push({ endpoints: [o.endpoint ?? "?"], text: o.text });
  }
  const line = (g: { endpoints: string[]; text: string }) =>
    g.endpoints.length === 0 ? g.text : `${g.endpoints.join(", ")}: ${g.text}`;
  return [`${e.codeName}: ${line(groups[0]!)}`, ...groups.slice(1).map((g) => `  ${line(g)}`)].join(
    "\n",
  );
}

/** True iff `err` is a KvClientError (with status `code` when given). */
export function isKvClientError(err: unknown, code?: status): err is KvClientError {
  return err instanceof KvClientError && (code === undefined || err.code === code);
}
