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

test("a new primary counts from its log's last append, uncapped, and its first Tick carries the grace", () => {
  const { clock, table, lessor } = setup(600);
  table.add({ id: 1n, ttl: 1, expiresAt: 1000 });
  table.add({ id: 2n, ttl: 1, expiresAt: 200 });
  table.time = 300;
  lessor.setPrimary(false);
  clock.now += 200;
  lessor.appended(); // at 1200: the last entries from the old leader
  clock.now += 2500; // the leader died: nothing appended for 2.5 s
  lessor.setPrimary(true); // at 3700
  // Its local view already counts the 2.5 s, but lease 1 (alive at T 300) is graced.
  assert.equal(lessor.keepAlive(1n), 1, "alive at the last T applied: the grace keeps it");
  assert.equal(lessor.keepAlive(2n), 0, "expired before it");
  assert.deepEqual(
    lessor.nextTick(),
    { elapsedMs: 2500, renewed: [1n], graceMs: 600 },
    "due at once",
  );
  clock.now += 500;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 500, renewed: [] }, "the grace once");
  lessor.appended(); // at 4200: its own entries
  lessor.setPrimary(false);
  clock.now += 60_000;
  lessor.setPrimary(true);
  // Nothing was appended here for 60 s: all of it counts, with a grace again.
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 60_000, renewed: [], graceMs: 600 });
});

test("a new primary whose log got nothing since it started counts from its start as primary", () => {
  const { clock, table, lessor } = setup(600);
  table.add({ id: 1n, ttl: 5, expiresAt: 5000 });
  clock.now += 10_000;
  lessor.setPrimary(true);
  clock.now += 20;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 20, renewed: [], graceMs: 600 });
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

test("a lease expiring between Ticks makes the next Tick due at once, and only once", () => {
  const { clock, table, lessor } = setup();
  table.add({ id: 1n, ttl: 5, expiresAt: 5000 });
  table.add({ id: 2n, ttl: 1, expiresAt: 150 });
  lessor.setPrimary(true);
  clock.now += 100;
  assert.equal(lessor.nextTick(), undefined, "nothing expired yet, not yet time");
  clock.now += 60;
  assert.deepEqual(lessor.nextTick(), { elapsedMs: 160, renewed: [] }, "lease 2 expired at 150");
  clock.now += 50;
  assert.equal(lessor.nextTick(), undefined, "the Tick proposed covers it");
});
