/**
 * What a failed call tells its caller (KvClientError.notProposed / neverSent /
 * outcomeUnknown) and whether KvClient tries another endpoint (mayRetry): a write is
 * retried only when it certainly did nothing; one whose connection was lost after it was
 * sent has an unknown outcome.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { status } from "@grpc/grpc-js";
import { KvClientError } from "../../src/client/kv-client-error.js";
import { mayRetry } from "../../src/client/retry-policy.js";

const err = (code: status, details: string, serverCode?: string) =>
  new KvClientError(code, details, serverCode === undefined ? {} : { serverCode });

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
    e: err(status.UNAVAILABLE, "No connection established. Last error: ECONNREFUSED"),
    unknown: false,
    writeRetried: true,
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
    what: "deadline",
    e: err(status.DEADLINE_EXCEEDED, "Deadline exceeded"),
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
