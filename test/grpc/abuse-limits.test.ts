/**
 * The server connection's abuse limits (src/grpc/http2/abuse-limits.ts) and its receive
 * window (flow-control.ts), as pure state: no socket needed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AbuseLimits } from "../../src/grpc/http2/abuse-limits.js";
import { ReceiveWindow } from "../../src/grpc/http2/flow-control.js";

const options = { minPingIntervalMs: 1000, maxPingStrikes: 3, maxInvalidFrames: 5 };

test("PINGs closer than minPingIntervalMs are allowed maxPingStrikes times, then refused", () => {
  const l = new AbuseLimits(options);
  assert.equal(l.ping(0), true); // the first one is no strike
  for (let i = 1; i <= 3; i++) assert.equal(l.ping(i), true, `strike ${i}`);
  assert.equal(l.ping(4), false);
});

test("spaced PINGs never strike; HEADERS or DATA in between clears the strikes", () => {
  const l = new AbuseLimits(options);
  for (let i = 0; i < 20; i++) assert.equal(l.ping(i * 1000), true);
  const m = new AbuseLimits(options);
  for (let i = 0; i < 20; i++) {
    if (i % 3 === 0) m.activity();
    assert.equal(m.ping(20_000 + i), true, `ping ${i}`);
  }
});

test("SETTINGS frames are limited like PINGs, on their own count", () => {
  const l = new AbuseLimits(options);
  for (let i = 0; i <= 3; i++) assert.equal(l.settings(i), true);
  assert.equal(l.ping(0), true, "PING strikes are counted apart");
  assert.equal(l.settings(5), false);
});

test("frames that do nothing: maxInvalidFrames over the connection's life, activity does not clear them", () => {
  const l = new AbuseLimits(options);
  for (let i = 0; i < 5; i++) {
    l.activity();
    assert.equal(l.invalid(), true);
  }
  assert.equal(l.invalid(), false);
});

test("the receive window: the target granted at start, given back by halves, exceeding it is an error", () => {
  const w = new ReceiveWindow(1_000_000);
  assert.equal(w.initialIncrement(), 1_000_000 - 65_535);
  assert.equal(w.received(400_000), 0);
  assert.equal(w.received(100_000), 500_000, "half the target consumed: all of it given back");
  assert.equal(w.received(499_999), 0);
  assert.equal(w.received(500_002), -1, "one byte past the window");
  const small = new ReceiveWindow(65_535);
  assert.equal(small.initialIncrement(), 0, "the default window needs no WINDOW_UPDATE");
});
