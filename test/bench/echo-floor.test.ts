/**
 * The loopback floor of the cluster benchmarks (bench/cluster/echo-floor.ts): serial round
 * trips against an echoing child process, which is stopped afterwards (a child left running
 * with its IPC channel open would keep this test process alive until the runner's timeout).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { measureEchoFloor } from "../../bench/cluster/echo-floor.js";

test("echo floor: measures serial round trips against a child process, and stops it", async () => {
  const floor = await measureEchoFloor(200, 50);
  assert.ok(floor.trips > 10, `only ${floor.trips} round trips in 200 ms`);
  assert.ok(floor.p50Us > 0 && Number.isFinite(floor.p50Us));
  assert.ok(floor.meanUs > 0 && Number.isFinite(floor.meanUs));
  assert.ok(floor.meanUs * floor.trips <= 200_000 * 1.5, "more time measured than elapsed");
});
