/**
 * When KvClient tries another endpoint (docs/cluster.md, "Clients"):
 *
 * - A read (Get, Scan before its first row, MemberList) is idempotent: it is retried on
 *   another endpoint after any UNAVAILABLE (a member without a leader or cut off from the
 *   majority, a node that is down) and after DEADLINE_EXCEEDED of an attempt that was
 *   given only part of the call's time.
 * - A write (Put, Delete, Write, CompareAndSwap, membership changes) is retried only when
 *   it certainly did nothing: the server answered "not proposed" (UNAVAILABLE with trailer
 *   kv-error UNAVAILABLE), or the call never left this process (no connection to the
 *   endpoint: KvClientError.failure "no-connection", call-failure.ts). After anything else, in particular
 *   OUTCOME_UNKNOWN, a deadline or a connection lost mid-call, the write may or may not
 *   take effect, and the error goes to the caller: a retried Put could overwrite a later
 *   write of another client, and a retried CompareAndSwap could apply twice.
 * - A write of a client session ("session-write": Put, Delete, Write, CompareAndSwap once
 *   the cluster opened a session for the client, write-session.ts) is retried as a read
 *   is: also after OUTCOME_UNKNOWN, a lost connection or an attempt's own deadline, since
 *   the cluster applies it once however often it arrives and answers a repeat with the
 *   first result. SESSION_EXPIRED is KvClient's to handle (a new session).
 * - OpenSession ("open-session") is retried as a read is (a second session opened by a
 *   repeat is harmless: it expires unused), but its attempts get the call's whole
 *   deadline, as a write's do: it waits on the member for a leader as a write would.
 */
import { status } from "@grpc/grpc-js";
import type { KvClientError } from "./kv-client-error.js";

export type CallKind = "read" | "write" | "session-write" | "open-session";

/**
 * True iff a call of `kind` that failed with `err` may be tried on another endpoint;
 * `attemptDeadline` says whether its deadline was the attempt's own (shorter than the call's).
 */
export function mayRetry(err: KvClientError, kind: CallKind, attemptDeadline: boolean): boolean {
  if (kind === "write") return err.notProposed || err.neverSent;
  // read, session-write, open-session:
  if (err.code === status.UNAVAILABLE) return true;
  return err.code === status.DEADLINE_EXCEEDED && attemptDeadline;
}
