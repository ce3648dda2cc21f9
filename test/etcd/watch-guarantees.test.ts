/**
 * etcd's six watch guarantees (api_guarantees), each under conditions that would break
 * it: ordered and unique (concurrent writers, txns whose branches touch the same key,
 * batches cut small), reliable (a watcher far behind, batches of a few events), atomic (a
 * revision of 40 events with batches cut at 7), resumable (reconnecting to another member
 * of 3 with start_revision = last + 1), bookmarkable (progress notifications never ahead
 * of events not yet sent, etcd 15220, with the client not reading).
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import type { WatchResponse } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { startEtcdTestCluster } from "../support/etcd-test-cluster.js";
import { EtcdWatchClient } from "../support/etcd-watch-client.js";
import { startWatched, watchStream } from "../support/etcd-watch-fixture.js";

const b = (s: string) => Buffer.from(s);
const rev = (r: WatchResponse) => r.events.map((e) => Number(e.kv?.modRevision ?? 0));
const id = (r: WatchResponse) =>
  r.events.map((e) => `${e.type}:${Buffer.from(e.kv?.key ?? []).toString()}@${e.kv?.modRevision}`);

/** Small batches so that limits fall inside revisions and watchers catch up in many steps. */
const SMALL = { hub: { batchEvents: 7, batchBytes: 1 << 20 } };

function serve(t: TestContext, progressIntervalMs = 60_000) {
  return startWatched(t, { ...SMALL, watch: { progressIntervalMs } });
}

const watcher = watchStream;

/** Event responses of `w` until `n` events came (other responses kept in `others`). */
async function collect(w: EtcdWatchClient, n: number, others: WatchResponse[] = []) {
  const got: WatchResponse[] = [];
  let count = 0;
  while (count < n) {
    const r = await w.next(10_000);
    if (r.events.length === 0) {
      others.push(r);
      continue;
    }
    got.push(r);
    count += r.events.length;
  }
  return got;
}

test("ordered and unique: concurrent writers, a live and a catching-up watcher", async (t) => {
  const { s, kv } = await serve(t);
  const live = watcher(t, s.address);
  live.create({ key: b("k"), rangeEnd: b("l") });
  await live.next();
  const puts = Array.from({ length: 120 }, (_, i) =>
    kv.put({ key: b(`k${i % 9}`), value: b(`${i}`) }),
  );
  await Promise.all(puts);
  // A txn whose nested branches both name k0 (one runs) and whose other op puts k1.
  await kv.txn({
    success: [
      {
        request: {
          case: "requestTxn",
          value: {
            success: [{ request: { case: "requestPut", value: { key: b("k0"), value: b("s") } } }],
            failure: [{ request: { case: "requestDeleteRange", value: { key: b("k0") } } }],
          },
        },
      },
      { request: { case: "requestPut", value: { key: b("k1"), value: b("t") } } },
    ],
  });
  const late = watcher(t, s.address);
  late.create({ key: b("k"), rangeEnd: b("l"), startRevision: 2n });
  await late.next();
  for (const w of [live, late]) {
    const events = (await collect(w, 122)).flatMap(id);
    const revs = events.map((e) => Number(e.split("@")[1]));
    assert.deepEqual(
      revs.slice(0, 120),
      Array.from({ length: 120 }, (_, i) => i + 2),
      "ordered",
    );
    assert.equal(new Set(events).size, events.length, "unique");
    assert.deepEqual(events.slice(120), ["0:k0@122", "0:k1@122"]);
    assert.deepEqual(await w.drain(50), [], "nothing more");
  }
});

test("reliable: a watcher 300 revisions behind gets every one, in batches of a few events", async (t) => {
  const { s, kv } = await serve(t);
  for (let i = 0; i < 300; i++) await kv.put({ key: b(`r${i % 13}`), value: b(`${i}`) });
  const w = watcher(t, s.address);
  w.create({ key: b("r"), rangeEnd: b("s"), startRevision: 2n });
  await w.next();
  const got = await collect(w, 300);
  assert.ok(got.length >= 40, "caught up in many responses");
  assert.deepEqual(
    got.flatMap(rev),
    Array.from({ length: 300 }, (_, i) => i + 2),
  );
});

test("atomic: each revision's events in one response though batches are cut at 7 events", async (t) => {
  const { s, kv } = await serve(t);
  const live = watcher(t, s.address);
  live.create({ key: b("a"), rangeEnd: b("b") });
  await live.next();
  await kv.put({ key: b("a/x"), value: b("1") }); // 2
  const ops = Array.from({ length: 40 }, (_, i) => ({
    request: { case: "requestPut" as const, value: { key: b(`a/${i}`), value: b("v") } },
  }));
  await kv.txn({ success: ops }); // 3: 40 events
  await kv.put({ key: b("a/y"), value: b("1") }); // 4
  await kv.deleteRange({ key: b("a/"), rangeEnd: b("a0") }); // 5: 42 deletes
  const late = watcher(t, s.address);
  late.create({ key: b("a"), rangeEnd: b("b"), startRevision: 2n });
  await late.next();
  for (const w of [live, late]) {
    const responses = await collect(w, 84);
    const revisionsIn = responses.map((r) => new Set(rev(r)));
    for (const r of [2, 3, 4, 5]) {
      const holders = revisionsIn.filter((set) => set.has(r)).length;
      assert.equal(holders, 1, `revision ${r} in one response`);
    }
    const counts = new Map<number, number>();
    for (const r of responses.flatMap(rev)) counts.set(r, (counts.get(r) ?? 0) + 1);
    assert.deepEqual(
      [...counts],
      [
        [2, 1],
        [3, 40],
        [4, 1],
        [5, 42],
      ],
    );
  }
});

test("resumable: a watcher reconnecting to another member at last + 1 sees exactly the rest", async (t) => {
  const c = await startEtcdTestCluster(3);
  t.after(() => c.stop());
  const kv = new EtcdGrpcClient(c.leaderAddress());
  t.after(() => kv.close());
  const first = await kv.put({ key: b("z0"), value: b("0") });
  const start = first.header?.revision ?? 0n;
  const writing = (async () => {
    for (let i = 1; i < 80; i++) await kv.put({ key: b(`z${i % 5}`), value: b(`${i}`) });
  })();
  const seen: number[] = [];
  let member = 0;
  let from = start;
  while (seen.length < 80) {
    const w = new EtcdWatchClient(c.addresses[member % 3]!).open();
    w.create({ key: b("z"), rangeEnd: b("{"), startRevision: from });
    await w.next();
    // Take a few responses from this member, then move on to the next.
    for (let n = 0; n < 3 && seen.length < 80; n++) seen.push(...rev(await w.next(10_000)));
    w.close();
    from = BigInt((seen.at(-1) ?? Number(start) - 1) + 1);
    member++;
  }
  await writing;
  assert.ok(member >= 3, "resumed on every member");
  assert.deepEqual(
    seen,
    Array.from({ length: 80 }, (_, i) => Number(start) + i),
  );
});

test("bookmarkable: no progress notification ahead of events not yet sent (etcd 15220)", async (t) => {
  const { s, kv } = await serve(t, 20);
  const w = watcher(t, s.address);
  w.create({ key: b("p"), rangeEnd: b("q"), progressNotify: true });
  w.create({ key: b("p/3"), progressNotify: true });
  await w.next();
  await w.next();
  w.pause();
  const value = Buffer.alloc(8192, 1);
  for (let i = 0; i < 200; i++) {
    await kv.put({ key: b(`p/${i % 7}`), value });
    if (i % 50 === 0) w.progress();
  }
  assert.ok(s.hub.unsyncedCount > 0, "the paused watchers fell behind");
  w.resume();
  // Take responses until both watchers saw the last put and some bookmarks after it.
  const all: WatchResponse[] = [];
  const lastRev = 201;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    all.push(await w.next(10_000));
    const done = all.filter((r) => r.events.length === 0 && Number(r.header?.revision) === lastRev);
    if (done.length >= 3) break;
  }
  const progress = all.filter((r) => r.events.length === 0);
  assert.ok(progress.length >= 3, "progress notifications were sent");
  assert.ok(
    progress.some((r) => r.watchId === -1n),
    "the progress requests were answered",
  );
  // For every bookmark at R on watcher X (or -1: all), each event of X at or below R came before it.
  for (const [i, r] of all.entries()) {
    if (r.events.length > 0) continue;
    const R = Number(r.header?.revision);
    for (const later of all.slice(i + 1)) {
      if (r.watchId !== -1n && later.watchId !== r.watchId) continue;
      for (const e of rev(later)) assert.ok(e > R, `event ${e} after a bookmark at ${R}`);
    }
  }
});
