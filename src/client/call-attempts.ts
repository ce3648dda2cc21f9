/**
 * The attempts of one KvClient call (docs/cluster.md, "Clients"): which endpoint each
 * goes to and with what deadline, whether another is made after a failure, and the error
 * the caller gets when none is.
 *
 * - An attempt goes to the endpoint that last answered; after a failure the policy allows
 *   (retry-policy.ts), the next goes to the leader the server named, else to the next
 *   endpoint, at once: a refused connection costs no wait.
 * - A round ends when the next endpoint was tried in it already. If no endpoint of the
 *   round could be reached (every attempt failed before it was sent), the call fails
 *   there: a cluster that is down is reported at once, not at the deadline. Otherwise the
 *   next round starts after a pause (retryDelayMs, doubling up to 1 s).
 * - No attempt is made past `maxAttempts`, nor when less than MIN_ATTEMPT_MS of the call's
 *   deadline would be left for it after the pause.
 * - A read or session-write attempt that is not the last may get half the time left (a member cut off from
 *   the majority answers a linearizable read only at its deadline). Any such attempt gets
 *   half the time left to connect (`connectBy`): a member that is paused, or whose host
 *   does not answer, is left for the next instead of taking the whole deadline.
 * - The error reported is the most informative failure of any endpoint (a server's
 *   answer beats a deadline, which beats no connection; among equals, the later one of an
 *   endpoint, the first endpoint in the list); the failure that ended the call when the
 *   policy forbids another attempt is reported if it tells as much, and always when a
 *   write's outcome is unknown. The error lists the most informative failure of each
 *   other endpoint tried (KvClientError.others).
 */
import { status } from "@grpc/grpc-js";
import type { KvClientError } from "./kv-client-error.js";
import { type CallKind, mayRetry } from "./retry-policy.js";

/** The longest pause between rounds of attempts, unless retryDelayMs is longer. */
const MAX_RETRY_DELAY_MS = 1000;
/** No attempt after a pause is started with less of the call's deadline left than this. */
export const MIN_ATTEMPT_MS = 50;

/**
 * How much a failure tells (higher: more): a server's answer, then a deadline or a lost
 * connection (a server's DEADLINE_EXCEEDED or CANCELLED, which a member sends when the
 * call's deadline nears, counts as a deadline), then no connection.
 */
function rank(e: KvClientError): number {
  if (e.failure === "no-connection") return 1;
  if (e.failure !== "answered") return 2;
  return e.code === status.DEADLINE_EXCEEDED || e.code === status.CANCELLED ? 2 : 3;
}

export interface AttemptSettings {
  /** The endpoints, in order. */
  readonly endpoints: readonly string[];
  /** Where the first attempt goes. */
  readonly first: string;
  readonly maxAttempts: number;
  readonly retryDelayMs: number;
  /** The call's deadline in milliseconds from now (undefined: none). */
  readonly timeoutMs: number | undefined;
}

/** One attempt: where it goes, and its deadline. */
export interface Attempt {
  endpoint: string;
  /** A Date.now() time, or undefined for none. */
  deadline: number | undefined;
  /** The deadline as milliseconds from now (undefined: none). */
  timeoutMs: number | undefined;
  /** True iff the deadline is the attempt's own, shorter than the call's. */
  partial: boolean;
  /**
   * A Date.now() time by which a connection to the endpoint must be up, else the attempt
   * fails before sending anything (undefined: the attempt's deadline applies).
   */
  connectBy: number | undefined;
}

export class CallAttempts {
  private readonly end: number | undefined;
  private made = 0;
  private endpoint: string;
  private delay: number;
  /** Endpoints tried in this round, and whether each failed before it sent anything. */
  private round = new Map<string, boolean>();
  /** The most informative failure of each endpoint (the later one among equals). */
  private readonly failures = new Map<string, KvClientError>();

  constructor(
    private readonly kind: CallKind,
    private readonly s: AttemptSettings,
  ) {
    this.end = s.timeoutMs === undefined ? undefined : Date.now() + s.timeoutMs;
    this.endpoint = s.first;
    this.delay = s.retryDelayMs;
  }

  /** The next attempt. */
  next(): Attempt {
    this.made++;
    const more = this.made < this.s.maxAttempts;
    let deadline = this.end;
    let partial = false;
    let connectBy: number | undefined;
    if (more && this.end !== undefined && this.s.endpoints.length > 1) {
      connectBy = Date.now() + Math.max(1, Math.floor((this.end - Date.now()) / 2));
      if (this.kind === "read" || this.kind === "session-write") {
        deadline = connectBy;
        partial = true;
      }
    }
    const timeoutMs = deadline === undefined ? undefined : Math.max(0, deadline - Date.now());
    return { endpoint: this.endpoint, deadline, timeoutMs, partial, connectBy };
  }

  /**
   * Records that `attempt` failed with `err`. Throws the error to report unless another
   * attempt may be made; then resolves once it may start (after the pause, if a round ended).
   */
  async failed(attempt: Attempt, err: KvClientError): Promise<void> {
    const at = attempt.endpoint;
    const before = this.failures.get(at);
    if (before === undefined || rank(err) >= rank(before)) {
      this.failures.set(at, err);
    }
    this.round.set(at, err.neverSent);
    if (!mayRetry(err, this.kind, attempt.partial)) throw this.report(err);
    if (this.made >= this.s.maxAttempts || this.left() <= 1) throw this.report();
    const hint = err.leaderHint;
    if (hint !== undefined && hint !== at) {
      this.endpoint = hint;
    } else {
      const i = this.s.endpoints.indexOf(at);
      this.endpoint = this.s.endpoints[(i + 1) % this.s.endpoints.length]!;
    }
    if (!this.round.has(this.endpoint)) return;
    // A round ended.
    if ([...this.round.values()].every((neverSent) => neverSent)) throw this.report();
    const pause = Math.min(this.delay, this.left() / 2);
    if (this.left() - pause < MIN_ATTEMPT_MS) throw this.report();
    this.delay = Math.min(Math.max(MAX_RETRY_DELAY_MS, this.s.retryDelayMs), this.delay * 2);
    this.round = new Map();
    await new Promise((resolve) => setTimeout(resolve, pause));
  }

  private left(): number {
    return this.end === undefined ? Number.POSITIVE_INFINITY : this.end - Date.now();
  }

  /**
   * The error for the caller: `final` (the failure that ended the call) when it tells as
   * much as any or the outcome is unknown, or else the most
   * informative last failure (of the first endpoint in the list among equals), with the
   * other endpoints' last failures, most informative first, then in list order.
   */
  private report(final?: KvClientError): KvClientError {
    const order = (e: KvClientError) => {
      const i = this.s.endpoints.indexOf(e.endpoint ?? "");
      return i < 0 ? this.s.endpoints.length : i;
    };
    const ranked = [...this.failures.values()].sort(
      (a, b) => rank(b) - rank(a) || order(a) - order(b),
    );
    const best = ranked[0]!;
    // The failure that ended the call, unless a write's outcome is known and another
    // endpoint's failure tells more (a member's "not proposed" before its later CANCELLED).
    const primary =
      final !== undefined && (final.outcomeUnknown || rank(final) >= rank(best)) ? final : best;
    return primary.withOthers(ranked.filter((e) => e.endpoint !== primary.endpoint));
  }
}
