import assert from "node:assert/strict";
import { test } from "node:test";
import { LeaseTable } from "../../src/lease/lease-table.js";
import { Lessor, ttlSeconds } from "../../src/lease/lessor.js";

function setup(graceMs = 0) {
  const clock = { now: 1000 };
  const table = new LeaseTable();
  const lessor = new Lessor(() => table, {
    now: () => clock.now,
    graceMs,
    intervalMs: 500,
    maxStepMs: 1000,
  });
  return { clock, table, lessor };
}

test("only the primary proposes Ticks, each carrying the time measured since the last", () => {
  const { clock, table, lessor } = setup();
  table.add({ id: 1n, ttl: 10, expiresAt: 10_000 });
  clock.now += 600;
  assert.equal(lessor.nextTick(), undefined, "not the primary");
  lessor.setPrimary(true);
  clock.now += 400;
  assert.equal(lessor.nextTick(), undefined, "not yet time");
  clock.now += 100.5;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 500, renewed: [] });
  clock.now += 500;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 500, renewed: [] }, "the fraction carries over");
});

test("a stalled primary advances the clock by at most the cap per Tick (etcd 15247)", () => {
  const { clock, table, lessor } = setup();
  table.add({ id: 1n, ttl: 2, expiresAt: 2000 });
  lessor.setPrimary(true);
  clock.now += 60_000;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 1000, renewed: [] });
  clock.now += 500;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 500, renewed: [] }, "the stall is dropped");
});

test("a new primary does not count its grace period", () => {
  const { clock, table, lessor } = setup(1200);
  table.add({ id: 1n, ttl: 2, expiresAt: 2000 });
  lessor.setPrimary(true);
  clock.now += 600;
  assert.equal(lessor.nextTick(), undefined, "nothing counted in the grace");
  clock.now += 1100; // 500 ms past the grace
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 500, renewed: [] });
  lessor.setPrimary(false);
  lessor.setPrimary(true);
  clock.now += 1000;
  assert.equal(lessor.nextTick(), undefined, "the grace again after a new term");
});

test("keep-alives: answered from the local view, carried by the next Tick", () => {
  const { clock, table, lessor } = setup();
  table.add({ id: 1n, ttl: 3, expiresAt: 3000 });
  table.add({ id: 2n, ttl: 1, expiresAt: 1000 });
  lessor.setPrimary(true);
  clock.now += 1200;
  assert.equal(lessor.keepAlive(1n), 3);
  assert.equal(lessor.keepAlive(2n), 0, "expired by the local clock");
  assert.equal(lessor.keepAlive(9n), 0, "unknown");
  assert.equal(lessor.remainingMs(1n), 3000);
  assert.equal(ttlSeconds(lessor.remainingMs(1n)!), 2, "etcd shows ttl - 1 right after");
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 1000, renewed: [1n] });
  assert.equal(lessor.remainingMs(9n), undefined);
});

test("a follower answers time-to-live from the replicated table", () => {
  const { table, lessor } = setup();
  table.add({ id: 1n, ttl: 3, expiresAt: 3000 });
  table.time = 500;
  assert.equal(lessor.remainingMs(1n), 2500);
  assert.equal(ttlSeconds(2500), 2);
  assert.equal(ttlSeconds(0), 0);
  assert.equal(ttlSeconds(-5), 0);
});
