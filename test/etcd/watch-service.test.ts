/**
 * etcdserverpb.Watch on one node: the responses to create, cancel and progress requests
 * as etcd sends them (IDs, refusals with etcd's reasons, compact_revision), history from
 * a start revision, prev_kv, filters, progress notifications, fragments, the hasleader
 * metadata, and a stream that the client half-closes.
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import { WatchHub } from "../../src/etcd/watch-hub.js";
import { type EtcdWatchServiceOptions, registerEtcdWatch } from "../../src/etcd/watch-service.js";
import { WATCH_CANCEL_REASONS } from "../../src/etcd/watch-stream.js";
import { MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import type { WatchResponse } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { Event_EventType } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { KvServer } from "../../src/server/index.js";
import { TEST_MEMBER_ID } from "../support/etcd-test-server.js";
import { EtcdWatchClient } from "../support/etcd-watch-client.js";
import { startWatched } from "../support/etcd-watch-fixture.js";

const b = (s: string) => Buffer.from(s);
const str = (u: Uint8Array | undefined) => Buffer.from(u ?? []).toString();

/** Each event of `r` as "PUT key=value@mod" / "DELETE key@mod". */
function events(r: WatchResponse): string[] {
  return r.events.map((e) =>
    e.type === Event_EventType.PUT
      ? `PUT ${str(e.kv?.key)}=${str(e.kv?.value)}@${e.kv?.modRevision}`
      : `DELETE ${str(e.kv?.key)}@${e.kv?.modRevision}`,
  );
}

function setup(t: TestContext, watch: EtcdWatchServiceOptions = {}) {
  return startWatched(t, { watch: { progressIntervalMs: 60_000, ...watch } });
}

test("watch: created with IDs from 0 up or the client's, then the events from now on", async (t) => {
  const { kv, w } = await setup(t);
  await kv.put({ key: b("a"), value: b("1") }); // revision 2
  w.create({ key: b("a") });
  const c0 = await w.next();
  assert.equal(c0.created, true);
  assert.equal(c0.watchId, 0n);
  assert.equal(c0.header?.revision, 2n);
  assert.equal(c0.header?.memberId, TEST_MEMBER_ID);
  w.create({ key: b("a"), watchId: 5n });
  assert.equal((await w.next()).watchId, 5n);
  w.create({ key: b("a") });
  assert.equal((await w.next()).watchId, 1n);
  await kv.put({ key: b("a"), value: b("2") });
  await kv.put({ key: b("b"), value: b("x") });
  const got = new Map<bigint, string[]>();
  for (let i = 0; i < 3; i++) {
    const r = await w.next();
    assert.equal(r.header?.revision, 3n);
    got.set(r.watchId, events(r));
  }
  assert.deepEqual(got.get(0n), ["PUT a=2@3"]);
  assert.deepEqual(got.get(5n), ["PUT a=2@3"]);
  assert.deepEqual(got.get(1n), ["PUT a=2@3"]);
  assert.deepEqual(await w.drain(100), []);
});

test("watch: refused creates are answered created+canceled with ID -1 and etcd's reason", async (t) => {
  const { w } = await setup(t);
  w.create({ key: b("a"), watchId: 3n });
  assert.equal((await w.next()).watchId, 3n);
  const cases: [Parameters<EtcdWatchClient["create"]>[0], string][] = [
    [{ key: b("a"), watchId: 3n }, WATCH_CANCEL_REASONS.DUPLICATE_ID],
    [{ key: b("b"), rangeEnd: b("a") }, WATCH_CANCEL_REASONS.EMPTY_RANGE],
    [{ key: b("b"), rangeEnd: b("b") }, WATCH_CANCEL_REASONS.EMPTY_RANGE],
    [{ key: b("a"), startRevision: -1n }, WATCH_CANCEL_REASONS.COMPACTED],
  ];
  for (const [req, reason] of cases) {
    w.create(req);
    const r = await w.next();
    assert.deepEqual(
      { id: r.watchId, created: r.created, canceled: r.canceled, reason: r.cancelReason },
      { id: -1n, created: true, canceled: true, reason },
    );
  }
  assert.equal(
    WATCH_CANCEL_REASONS.COMPACTED,
    "etcdserver: mvcc: required revision has been compacted",
  );
});

test("watch: history from a start revision (key, prefix, from-key, every key), prev_kv and filters", async (t) => {
  const { kv, w } = await setup(t);
  await kv.put({ key: b("a1"), value: b("x") }); // 2
  await kv.put({ key: b("a2"), value: b("y") }); // 3
  await kv.put({ key: b("a1"), value: b("z") }); // 4
  await kv.deleteRange({ key: b("a1") }); // 5
  await kv.put({ key: b("b"), value: b("w") }); // 6
  const specs = [
    { key: b("a1"), startRevision: 2n },
    { key: b("a"), rangeEnd: b("b"), startRevision: 3n },
    { key: b("a2"), rangeEnd: b("\0"), startRevision: 1n },
    { key: b(""), rangeEnd: b("\0"), startRevision: 4n, filters: [0] },
    { key: b("a1"), startRevision: 1n, prevKv: true, filters: [1] },
    { key: b("a1"), startRevision: 5n, prevKv: true },
  ];
  for (const s of specs) {
    w.create(s);
  }
  const got = new Map<bigint, string[]>();
  const prev = new Map<bigint, string[]>();
  for (let n = 0; n < 12; n++) {
    const r = await w.next();
    if (r.created) continue;
    got.set(r.watchId, [...(got.get(r.watchId) ?? []), ...events(r)]);
    prev.set(r.watchId, [
      ...(prev.get(r.watchId) ?? []),
      ...r.events.map((e) => (e.prevKv ? `${str(e.prevKv.value)}@${e.prevKv.modRevision}` : "-")),
    ]);
  }
  assert.deepEqual(got.get(0n), ["PUT a1=x@2", "PUT a1=z@4", "DELETE a1@5"]);
  assert.deepEqual(got.get(1n), ["PUT a2=y@3", "PUT a1=z@4", "DELETE a1@5"]);
  assert.deepEqual(got.get(2n), ["PUT a2=y@3", "PUT b=w@6"]);
  assert.deepEqual(got.get(3n), ["DELETE a1@5"]);
  assert.deepEqual(got.get(4n), ["PUT a1=x@2", "PUT a1=z@4"]);
  assert.deepEqual(prev.get(4n), ["-", "x@2"]);
  assert.deepEqual(got.get(5n), ["DELETE a1@5"]);
  assert.deepEqual(prev.get(5n), ["z@4"]);
});

test("watch: below the compacted revision, canceled with compact_revision (header revision 0)", async (t) => {
  const { kv, w } = await setup(t);
  for (let i = 0; i < 4; i++) await kv.put({ key: b("k"), value: b(`${i}`) }); // 2..5
  await kv.compact({ revision: 4n });
  w.create({ key: b("k"), startRevision: 3n });
  const c = await w.next();
  assert.equal(c.created, true);
  const r = await w.next();
  assert.deepEqual(
    { id: r.watchId, canceled: r.canceled, compact: r.compactRevision, rev: r.header?.revision },
    { id: c.watchId, canceled: true, compact: 4n, rev: 0n },
  );
  // At the compacted revision itself: its events are there.
  w.create({ key: b("k"), startRevision: 4n });
  await w.next();
  assert.deepEqual(events(await w.next()), ["PUT k=2@4", "PUT k=3@5"]);
});

test("watch: cancel answers canceled and stops the events; an unknown ID gets no answer", async (t) => {
  const { kv, w } = await setup(t);
  w.create({ key: b("k") });
  const id = (await w.next()).watchId;
  w.cancel(77n);
  w.cancel(id);
  const r = await w.next();
  assert.deepEqual(
    { id: r.watchId, canceled: r.canceled, created: r.created },
    { id, canceled: true, created: false },
  );
  await kv.put({ key: b("k"), value: b("v") });
  assert.deepEqual(await w.drain(100), []);
});

test("watch: progress_request answered with ID -1 at the revision sent; progress_notify when idle", async (t) => {
  const { kv, w } = await setup(t, { progressIntervalMs: 100 });
  w.progress();
  const p0 = await w.next();
  assert.equal(p0.watchId, -1n);
  assert.equal(p0.header?.revision, 1n);
  w.create({ key: b("k"), progressNotify: true });
  await w.next();
  await kv.put({ key: b("k"), value: b("v") }); // 2
  assert.deepEqual(events(await w.next()), ["PUT k=v@2"]);
  w.progress();
  const p1 = await w.next();
  assert.deepEqual(
    { id: p1.watchId, rev: p1.header?.revision, n: p1.events.length },
    { id: -1n, rev: 2n, n: 0 },
  );
  // The next notification comes after a tick with no events.
  const n = await w.next(2000);
  assert.deepEqual(
    { id: n.watchId, rev: n.header?.revision, n: n.events.length },
    { id: 0n, rev: 2n, n: 0 },
  );
});

test("watch: a progress request waits while a watcher of the stream is behind or ahead", async (t) => {
  const { kv, w } = await setup(t);
  w.create({ key: b("k"), startRevision: 4n });
  await w.next();
  w.progress();
  assert.deepEqual(await w.drain(150), []);
  await kv.put({ key: b("x"), value: b("1") }); // 2
  await kv.put({ key: b("x"), value: b("2") }); // 3
  assert.deepEqual(await w.drain(150), []);
  await kv.put({ key: b("x"), value: b("3") }); // 4
  const p = await w.next();
  assert.deepEqual({ id: p.watchId, rev: p.header?.revision }, { id: -1n, rev: 4n });
});

test("watch: a fragmenting watcher gets a large response in pieces of whole events", async (t) => {
  const { kv, w } = await setup(t, { maxRequestBytes: 1000 });
  // Fragments start at maxRequestBytes + 512 KiB (etcd's gRPC overhead): 3 x 300 KB.
  for (let i = 0; i < 3; i++)
    await kv.put({ key: b(`f${i}`), value: Buffer.alloc(300_000, 97 + i) });
  w.create({ key: b("f"), rangeEnd: b("g"), startRevision: 2n, fragment: true, watchId: 1n });
  w.create({ key: b("f"), rangeEnd: b("g"), startRevision: 2n, watchId: 2n });
  const got = new Map<bigint, WatchResponse[]>();
  let count = 0;
  while (count < 6) {
    const r = await w.next();
    if (r.created) continue;
    got.set(r.watchId, [...(got.get(r.watchId) ?? []), r]);
    count += r.events.length;
  }
  const whole = got.get(2n) ?? [];
  const pieces = got.get(1n) ?? [];
  assert.deepEqual(
    whole.map((r) => [r.events.length, r.fragment]),
    [[3, false]],
  );
  assert.deepEqual(
    pieces.map((r) => [r.events.length, r.fragment]),
    [
      [1, true],
      [1, true],
      [1, false],
    ],
  );
  assert.deepEqual(pieces.flatMap(events), whole.flatMap(events));
});

test("watch: hasleader without a leader fails the stream with etcd's no leader", async (t) => {
  const kvStore = await open("/db", { fs: new MemoryFileSystem() });
  const mvcc = await MvccStore.open(kvStore);
  const hub = new WatchHub(() => mvcc);
  let leader = true;
  const ids = { clusterId: 1n, memberId: 2n, raftTerm: 3n };
  const server = await KvServer.start(kvStore, {
    port: 0,
    registerServices: (s) =>
      registerEtcdWatch(s, { hub, hasLeader: () => leader, ids: () => ids }, { leaderCheckMs: 20 }),
  });
  t.after(async () => {
    await server.shutdown(0);
    hub.close();
    await mvcc.close();
    await kvStore.close();
  });
  const running = new EtcdWatchClient(server.address, { hasleader: "true" }).open();
  const plain = new EtcdWatchClient(server.address).open();
  t.after(() => {
    running.close();
    plain.close();
  });
  running.create({ key: b("k") });
  plain.create({ key: b("k") });
  await running.next();
  await plain.next();
  leader = false;
  const err = await running.end(2000);
  assert.equal(err?.code, 14); // UNAVAILABLE
  assert.equal(err?.details, "etcdserver: no leader");
  const late = new EtcdWatchClient(server.address, { hasleader: "true" }).open();
  t.after(() => late.close());
  late.create({ key: b("k") });
  const err2 = await late.end(2000);
  assert.equal(err2?.details, "etcdserver: no leader");
  // Without the metadata the stream goes on.
  plain.create({ key: b("j") });
  assert.equal((await plain.next()).created, true);
});
