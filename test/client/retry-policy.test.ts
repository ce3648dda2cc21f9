/**
 * What a failed call tells its caller (KvClientError.notProposed / neverSent /
 * outcomeUnknown) and whether KvClient tries another endpoint (mayRetry): a write is
 * retried only when it certainly did nothing; one whose connection was lost after it was
 * sent has an unknown outcome. The errors are made as grpc-js reports them (status,
 * details, trailers) and go through the client's mapping (call-failure.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Metadata, status } from "@grpc/grpc-js";
import { toClientError } from "../../src/client/call-failure.js";
import type { KvClientError } from "../../src/client/kv-client-error.js";
import { mayRetry } from "../../src/client/retry-policy.js";

const err = (code: status, details: string, serverCode?: string) => {
  const metadata = new Metadata();
  if (serverCode !== undefined) metadata.set("kv-error", serverCode);
  return toClientError({ code, details, metadata }, { endpoint: "h:1", kind: "write" });
};

const cases: {
  what: string;
  e: KvClientError;
  unknown: boolean;
  writeRetried: boolean;
  readRetried: boolean;
}[] = [
  {
    what: "not proposed (kv-error UNAVAILABLE)",
    e: err(status.UNAVAILABLE, "no leader", "UNAVAILABLE"),
    unknown: false,
    writeRetried: true,
    readRetried: true,
  },
  {
    what: "never sent (no connection)",
    e: err(
      status.UNAVAILABLE,
      "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ",
    ),
    unknown: false,
    writeRetried: true,
    readRetried: true,
  },
  {
    what: "never sent (the deadline passed waiting for a connection)",
    e: err(status.DEADLINE_EXCEEDED, "Deadline exceeded after 1.001s,Waiting for LB pick"),
    unknown: false,
    writeRetried: true,
    readRetried: false,
  },
  {
    what: "sent, then the deadline passed",
    e: err(status.DEADLINE_EXCEEDED, "Deadline exceeded after 1.001s,remote_addr=127.0.0.1:2"),
    unknown: true,
    writeRetried: false,
    readRetried: false,
  },
  {
    what: "an UNAVAILABLE the client cannot place (no engine code)",
    e: err(status.UNAVAILABLE, "the server is going away"),
    unknown: true,
    writeRetried: false,
    readRetried: true,
  },
  {
    what: "connection lost after sending",
    e: err(status.UNAVAILABLE, "Connection dropped"),
    unknown: true,
    writeRetried: false,
    readRetried: true,
  },
  {
    what: "the server said OUTCOME_UNKNOWN",
    e: err(status.UNAVAILABLE, "proposed, not applied", "OUTCOME_UNKNOWN"),
    unknown: true,
    writeRetried: false,
    readRetried: true,
  },
  {
    what: "deadline without a sign of where",
    e: err(status.DEADLINE_EXCEEDED, "Deadline exceeded"), // no sign it was not sent
    unknown: true,
    writeRetried: false,
    readRetried: false,
  },
  {
    what: "bad input",
    e: err(status.INVALID_ARGUMENT, "key too long", "INVALID_ARGUMENT"),
    unknown: false,
    writeRetried: false,
    readRetried: false,
  },
];

for (const c of cases) {
  test(`${c.what}: outcome unknown ${c.unknown}, write retried ${c.writeRetried}`, () => {
    assert.equal(c.e.outcomeUnknown, c.unknown);
    assert.equal(mayRetry(c.e, "write", false), c.writeRetried);
    assert.equal(mayRetry(c.e, "read", false), c.readRetried);
  });
}
