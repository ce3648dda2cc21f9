/**
 * Slow and idle watchers (issue 29 point 3): a watcher whose client stops reading holds
 * up neither the writes nor the other watchers, the server keeps no events for it (it
 * falls behind, unsynced, and catches up from the store once the client reads again,
 * every event once and in order), and the memory an idle watcher costs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { WatchResponse } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { startWatched, watchStream } from "../support/etcd-watch-fixture.js";

const b = (s: string) => Buffer.from(s);

/** The mod revisions of the events in `responses`, in order. */
const revisions = (responses: WatchResponse[]) =>
  responses.flatMap((r) => r.events.map((e) => Number(e.kv?.modRevision)));

test("a watcher that does not read holds up no write nor other watcher, then catches up", async (t) => {
  const { s, kv, w: slow } = await startWatched(t);
  const fast = watchStream(t, s.address);
  slow.create({ key: b("p/"), rangeEnd: b("p0") });
  fast.create({ key: b("p/"), rangeEnd: b("p0") });
  await slow.next();
  await fast.next();
  slow.pause();
  const PUTS = 600;
  const value = Buffer.alloc(4096, 120); // 2.4 MB of events: far beyond the stream's window
  const fastSeen: number[] = [];
  for (let i = 0; i < PUTS; i++) {
    await kv.put({ key: b(`p/${i % 50}`), value });
    while (fast.pending > 0) fastSeen.push(...revisions([await fast.next()]));
  }
  while (fastSeen.length < PUTS) fastSeen.push(...revisions([await fast.next()]));
  assert.deepEqual(
    fastSeen,
    Array.from({ length: PUTS }, (_, i) => i + 2),
  );
  assert.equal(s.hub.unsyncedCount, 1, "the paused watcher fell behind (unsynced)");
  slow.resume();
  const slowSeen: number[] = [];
  while (slowSeen.length < PUTS) slowSeen.push(...revisions([await slow.next()]));
  assert.deepEqual(
    slowSeen,
    Array.from({ length: PUTS }, (_, i) => i + 2),
  );
  await kv.put({ key: b("p/x"), value: b("after") });
  assert.deepEqual(revisions([await slow.next()]), [PUTS + 2]);
  assert.equal(s.hub.unsyncedCount, 0, "synced again");
});

function gc(): void {
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

test("idle watchers on one stream, each a key (10,000 with KV_STRESS=1), and the heap they take", async (t) => {
  const { s, kv, w } = await startWatched(t);
  const N = process.env["KV_STRESS"] === "1" ? 10_000 : 2_000;
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < N; i++) w.create({ key: b(`key/${String(i).padStart(5, "0")}`) });
  for (let i = 0; i < N; i++) assert.equal((await w.next()).created, true);
  assert.equal(s.hub.size, N);
  gc();
  const after = process.memoryUsage().heapUsed;
  t.diagnostic(
    `${N} idle watchers: heap +${after - before} bytes, ${Math.round((after - before) / N)} bytes each`,
  );
  await kv.put({ key: b("key/01242"), value: b("v") });
  const r = await w.next();
  assert.equal(r.watchId, 1242n);
  assert.deepEqual(await w.drain(100), []);
});
