/**
 * etcd's errors in the client's terms: each message of etcd 3.4's API (rpctypes, and the
 * v3lock/v3election servers' recipe errors, which come as UNKNOWN with their text) gets a
 * stable code in KvClientError.serverCode, from docs/errors.md where one fits. The
 * retry policy reads two of them: "UNAVAILABLE" ("etcdserver: no leader": nothing was
 * proposed, a write may go to another member) and "OUTCOME_UNKNOWN" (a timeout after the
 * proposal: a write may or may not take effect). A code the server already sent (trailer
 * kv-error) is kept. The table is docs/client.md's "etcd's errors".
 */
import { status } from "@grpc/grpc-js";
import { KvClientError } from "../kv-client-error.js";

/** etcd's message (exact, or the start of it) -> the client's code. */
const CODES: readonly (readonly [RegExp, string])[] = [
  [/^etcdserver: mvcc: required revision has been compacted$/, "COMPACTED"],
  [/^etcdserver: mvcc: required revision is a future revision$/, "FUTURE_REVISION"],
  [/^etcdserver: requested lease not found$/, "NOT_FOUND"],
  [/^etcdserver: key not found$/, "NOT_FOUND"],
  [/^etcdserver: lease already exists$/, "ALREADY_EXISTS"],
  [
    /^etcdserver: (key is not provided|value is provided|lease is provided|duplicate key given in txn request|too many operations in txn request|too large lease TTL)$/,
    "INVALID_ARGUMENT",
  ],
  [
    /^etcdserver: (request is too large|too many requests|mvcc: database space exceeded)$/,
    "RESOURCE_EXHAUSTED",
  ],
  [/^etcdserver: no leader$/, "UNAVAILABLE"],
  [/^etcdserver: (not leader|server stopped)$/, "UNAVAILABLE"],
  [/^etcdserver: (request timed out|leader changed)/, "OUTCOME_UNKNOWN"],
  [/(^|: )election: not leader$/, "FAILED_PRECONDITION"],
  [/(^|: )election: no leader$/, "NOT_FOUND"],
  [/^etcdserver: corrupt cluster$/, "CORRUPTION"],
];

/** The code of etcd's message `details`, or undefined for a message it does not know. */
export function etcdCodeOf(details: string): string | undefined {
  for (const [pattern, code] of CODES) if (pattern.test(details)) return code;
  return undefined;
}

/** `err` with the code of etcd's message (unchanged when it has one, or the text is unknown). */
export function refineEtcdError(err: KvClientError): KvClientError {
  if (err.serverCode !== undefined || err.failure !== "answered") return err;
  const code = etcdCodeOf(err.details);
  return code === undefined ? err : err.withServerCode(code);
}

/** A watch canceled because its next revision was compacted (`compactRevision`). */
export function compactedError(endpoint: string, compactRevision: number): KvClientError {
  return new KvClientError(
    status.OUT_OF_RANGE,
    "etcdserver: mvcc: required revision has been compacted",
    {
      endpoint,
      serverCode: "COMPACTED",
      compactRevision,
      text: `the watch's next revision was compacted (compacted up to revision ${compactRevision}): read the current state and watch again from there`,
    },
  );
}
