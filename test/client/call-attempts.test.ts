/**
 * The attempts of one call (src/client/call-attempts.ts), step by step with made-up
 * failures: where each attempt goes and with what deadlines, when the call ends, and which
 * failure is reported with which others.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { status } from "@grpc/grpc-js";
import { type Attempt, CallAttempts } from "../../src/client/call-attempts.js";
import { type CallFailure, KvClientError } from "../../src/client/kv-client-error.js";

const E = ["a:1", "b:2", "c:3"];

function fail(endpoint: string, failure: CallFailure, serverCode?: string, leaderHint?: string) {
  const text =
    failure === "no-connection" ? "cannot connect: connection refused" : `${failure} here`;
  return new KvClientError(status.UNAVAILABLE, text, {
    endpoint,
    failure,
    text,
    serverCode,
    leaderHint,
  });
}

const refused = (e: string) => fail(e, "no-connection");
const noLeader = (e: string, hint?: string) => fail(e, "answered", "UNAVAILABLE", hint);

function attempts(
  kind: "read" | "write",
  o: Partial<ConstructorParameters<typeof CallAttempts>[1]> = {},
) {
  return new CallAttempts(kind, {
    endpoints: E,
    first: "a:1",
    maxAttempts: 30,
    retryDelayMs: 1,
    timeoutMs: 10_000,
    ...o,
  });
}

/** Runs attempts, failing each with what `how` returns for its endpoint; resolves with the error thrown and the endpoints tried. */
async function run(
  a: CallAttempts,
  how: (endpoint: string, n: number) => KvClientError,
): Promise<{ err: KvClientError; tried: string[]; first: Attempt[] }> {
  const tried: string[] = [];
  const first: Attempt[] = [];
  for (let n = 0; n < 1000; n++) {
    const attempt = a.next();
    tried.push(attempt.endpoint);
    if (first.length < 3) first.push(attempt);
    try {
      await a.failed(attempt, how(attempt.endpoint, n));
    } catch (err) {
      assert.ok(err instanceof KvClientError);
      return { err, tried, first };
    }
  }
  assert.fail("no end");
}

test("every endpoint refused in one round: the call ends there, naming them all in list order", async () => {
  const { err, tried } = await run(attempts("write"), refused);
  assert.deepEqual(tried, E);
  assert.equal(err.endpoint, "a:1");
  assert.deepEqual(
    err.others.map((o) => o.endpoint),
    ["b:2", "c:3"],
  );
  assert.equal(err.message, "UNAVAILABLE: a:1, b:2, c:3: cannot connect: connection refused");
});

test("a round with an answer goes on; the answer is reported before the refusals", async () => {
  const { err, tried } = await run(attempts("write", { maxAttempts: 7 }), (e) =>
    e === "b:2" ? noLeader(e) : refused(e),
  );
  assert.deepEqual(tried, [...E, ...E, "a:1"], "three rounds, cut by maxAttempts");
  assert.equal(err.endpoint, "b:2");
  assert.equal(err.notProposed, true);
  assert.equal(
    err.message,
    "UNAVAILABLE: b:2: answered here\n  a:1, c:3: cannot connect: connection refused",
  );
});

test("a failure the policy does not retry ends the call and is reported, with the others", async () => {
  const { err, tried } = await run(attempts("write"), (e) =>
    e === "a:1" ? refused(e) : fail(e, "deadline"),
  );
  assert.deepEqual(tried, ["a:1", "b:2"]);
  assert.equal(err.endpoint, "b:2");
  assert.equal(err.outcomeUnknown, true);
  assert.deepEqual(
    err.others.map((o) => o.endpoint),
    ["a:1"],
  );
});

test("a leader hint is followed; then the list goes on from it", async () => {
  const { tried } = await run(attempts("write", { maxAttempts: 4 }), (e, n) =>
    n === 0 ? noLeader(e, "c:3") : noLeader(e),
  );
  assert.deepEqual(tried, ["a:1", "c:3", "a:1", "b:2"]);
});

test("deadlines: a read attempt that is not the last gets half the time left; any such attempt half of it to connect", async () => {
  const timed = async (kind: "read" | "write") => {
    const before = Date.now();
    const { first } = await run(attempts(kind), refused);
    return { first, before, after: Date.now() };
  };
  const read = await timed("read");
  for (const a of read.first) {
    assert.equal(a.partial, true);
    assert.ok(a.deadline! >= read.before + 4_000 && a.deadline! <= read.after + 5_000);
    assert.equal(a.connectBy, a.deadline);
  }
  const write = await timed("write");
  for (const a of write.first) {
    assert.equal(a.partial, false);
    assert.ok(a.deadline! >= write.before + 10_000, "a write attempt has the call's deadline");
    assert.ok(
      a.connectBy! >= write.before + 4_000 && a.connectBy! <= write.after + 5_000,
      "and half the time left to connect",
    );
  }
  // The last attempt, and a single endpoint, get the call's deadline, no connect budget.
  const single = (await run(attempts("read", { endpoints: ["a:1"], maxAttempts: 1 }), refused))
    .first;
  assert.deepEqual([single[0]!.partial, single[0]!.connectBy], [false, undefined]);
});

test("no attempt after a pause when less than MIN_ATTEMPT_MS would be left", async () => {
  const { err, tried } = await run(attempts("write", { timeoutMs: 90, retryDelayMs: 100 }), (e) =>
    e === "a:1" ? noLeader(e) : refused(e),
  );
  assert.deepEqual(tried, E, "one round: the pause (half the 90 ms left) would leave under 50");
  assert.equal(err.endpoint, "a:1");
});

test("an endpoint's answer is not displaced by its later, less telling failure", async () => {
  const { err, tried } = await run(attempts("read", { maxAttempts: 6 }), (e, n) => {
    if (e !== "b:2") return refused(e);
    return n < 3 ? noLeader(e) : fail(e, "deadline");
  });
  assert.deepEqual(tried, [...E, ...E]);
  assert.equal(err.endpoint, "b:2");
  assert.equal(err.failure, "answered");
});

test("a member's CANCELLED (its answer as the deadline nears) ends a write but does not displace its 'not proposed'; an unknown outcome always shows", async () => {
  const cancelled = await run(attempts("write", { maxAttempts: 6 }), (e, n) => {
    if (e !== "b:2") return refused(e);
    if (n < 3) return noLeader(e);
    return new KvClientError(status.CANCELLED, "write cancelled while it waited for a leader", {
      endpoint: e,
      serverCode: "ABORTED",
    });
  });
  assert.deepEqual(cancelled.tried, [...E, "a:1", "b:2"], "the CANCELLED ended the call");
  assert.equal(cancelled.err.endpoint, "b:2");
  assert.equal(cancelled.err.notProposed, true, cancelled.err.message);
  const unknown = await run(attempts("write", { maxAttempts: 6 }), (e, n) => {
    if (e !== "b:2") return refused(e);
    return n < 3 ? noLeader(e) : fail(e, "deadline");
  });
  assert.equal(unknown.err.outcomeUnknown, true, "a write that may have applied is never hidden");
});
