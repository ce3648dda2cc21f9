/**
 * The history a watch reads (issue 29 point 4): it survives a restart and a snapshot
 * install (a watcher on a member that installs one goes on with every revision once,
 * in order), and compaction up to the compacted revision: a watch opened at the
 * compaction revision sees its delete events (etcd 19179), one below is canceled with
 * compact_revision, one on a future revision waits and never answers older events
 * (etcd 20221).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import type { WatchEvent } from "../../src/etcd/watch-events.js";
import type { WatchHub as WatchHubType } from "../../src/etcd/watch-hub.js";
import { WatchHub } from "../../src/etcd/watch-hub.js";
import { PLAIN_WATCHER_OPTIONS, Watcher, type WatchSink } from "../../src/etcd/watcher.js";
import { KvError, MemoryFileSystem, open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { PutRequestSchema } from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { Event_EventType } from "../../src/proto/gen/etcd/api/mvccpb/kv_pb.js";
import { TestCluster } from "../replication/support/test-cluster.js";
import { startWatched } from "../support/etcd-watch-fixture.js";
import { waitFor } from "../support/wait-for.js";

const b = (s: string) => Buffer.from(s);

/** A sink that keeps what it is sent, as "PUT key@rev" / "DELETE key@rev". */
class Collector implements WatchSink {
  blocked = false;
  readonly seen: string[] = [];
  compacted: number | undefined;
  sendEvents(_w: Watcher, changes: readonly WatchEvent[]): void {
    for (const e of changes.map((c) => c.message(false))) {
      const kind = e.type === Event_EventType.PUT ? "PUT" : "DELETE";
      this.seen.push(`${kind} ${Buffer.from(e.kv?.key ?? []).toString()}@${e.kv?.modRevision}`);
    }
  }
  sendCompacted(_w: Watcher, compactRevision: number): void {
    this.compacted = compactRevision;
  }
  /** Watches every key from `start` on `hub`. */
  watch(hub: WatchHubType, start: number): this {
    hub.add(
      new Watcher(1n, Uint8Array.of(0), Uint8Array.of(0), start, PLAIN_WATCHER_OPTIONS, this),
    );
    return this;
  }
}

test("history survives a restart: a watch from revision 2 on the reopened store", async () => {
  const fs = new MemoryFileSystem();
  let kv = await open("/db", { fs });
  let m = await MvccStore.open(kv);
  for (let i = 0; i < 5; i++) {
    const w = m.write();
    await (i === 3 ? w.deleteRange(b("k1"), new Uint8Array(0)) : w.put(b(`k${i}`), b("v"), 0n));
    await w.end();
  }
  await m.close();
  await kv.close();
  kv = await open("/db", { fs });
  m = await MvccStore.open(kv);
  const hub = new WatchHub(() => m);
  const c = new Collector().watch(hub, 2);
  await waitFor(() => c.seen.length === 5, "the history");
  assert.deepEqual(c.seen, ["PUT k0@2", "PUT k1@3", "PUT k2@4", "DELETE k1@5", "PUT k4@6"]);
  hub.close();
  await m.close();
  await kv.close();
});

test("a watcher on a member that installs a snapshot goes on with every revision once, in order", async (t) => {
  const c = await TestCluster.start({
    size: 3,
    member: { snapshotEntries: 40, catchUpEntries: 10 },
  });
  t.after(() => c.close());
  const n3 = c.store("n3");
  const hub = new WatchHub(() => c.store("n3").localMvcc(), { recheckMs: 20 });
  t.after(() => hub.close());
  const live = new Collector().watch(hub, 0);
  // Through n1 or n2, whichever leads (n3 is isolated for a while).
  const put = (i: number) => {
    const r = create(PutRequestSchema, { key: b(`k${i % 7}`), value: b(`${i}`) });
    return TestCluster.retry(() => {
      const l = [c.store("n1"), c.store("n2")].find((x) => x.status().role === "leader");
      if (l === undefined)
        return Promise.reject(new KvError("UNAVAILABLE", "no leader among n1, n2"));
      return l.request({ kind: "put", request: r });
    });
  };
  const first = Number((await put(0)).response.header?.revision);
  for (let i = 1; i < 10; i++) await put(i);
  await waitFor(() => live.seen.length === 10, "n3's watcher saw the first puts");
  c.network.isolate(n3.memberId);
  for (let i = 10; i < 200; i++) await put(i);
  await waitFor(
    () => [c.store("n1"), c.store("n2")].some((x) => x.status().firstIndex > 60),
    "the leader compacted its log",
  );
  c.network.heal();
  await waitFor(
    () => c.slot("n3").events.some((e) => e.type === "snapshot-installed"),
    "a snapshot installed on n3",
  );
  for (let i = 200; i < 210; i++) await put(i);
  await waitFor(() => live.seen.length >= 210, "n3's watcher saw every put", 10_000);
  const expected = Array.from({ length: 210 }, (_, i) => `PUT k${i % 7}@${first + i}`);
  assert.deepEqual(live.seen, expected);
  // And the installed store holds the history: a watch from the first put on n3.
  const late = new Collector().watch(hub, first);
  await waitFor(() => late.seen.length >= 210, "the history on n3");
  assert.deepEqual(late.seen, expected);
});

test("compaction: at the compaction revision its deletes are seen (etcd 19179), below it canceled", async (t) => {
  const { kv, w } = await startWatched(t);
  await kv.put({ key: b("a"), value: b("1") }); // 2
  await kv.put({ key: b("b"), value: b("1") }); // 3
  await kv.deleteRange({ key: b("a"), rangeEnd: b("c") }); // 4: deletes a and b
  await kv.put({ key: b("c"), value: b("1") }); // 5
  await kv.compact({ revision: 4n, physical: true });
  w.create({ key: b("a"), rangeEnd: b("d"), startRevision: 4n });
  const created = await w.next();
  const r = await w.next();
  assert.equal(r.watchId, created.watchId);
  assert.deepEqual(
    r.events.map(
      (e) => `${e.type}:${Buffer.from(e.kv?.key ?? []).toString()}@${e.kv?.modRevision}`,
    ),
    [
      `${Event_EventType.DELETE}:a@4`,
      `${Event_EventType.DELETE}:b@4`,
      `${Event_EventType.PUT}:c@5`,
    ],
  );
  w.create({ key: b("a"), rangeEnd: b("d"), startRevision: 3n });
  await w.next();
  const canceled = await w.next();
  assert.deepEqual(
    { canceled: canceled.canceled, compact: canceled.compactRevision, n: canceled.events.length },
    { canceled: true, compact: 4n, n: 0 },
  );
});

test("a watch on a future revision waits for it and never answers older events (etcd 20221)", async (t) => {
  const { kv, w } = await startWatched(t);
  await kv.put({ key: b("k"), value: b("0") }); // 2
  w.create({ key: b("k"), startRevision: 5n });
  await w.next();
  await kv.put({ key: b("k"), value: b("1") }); // 3
  await kv.put({ key: b("k"), value: b("2") }); // 4
  assert.deepEqual(await w.drain(100), [], "nothing before revision 5");
  await kv.put({ key: b("k"), value: b("3") }); // 5
  await kv.put({ key: b("k"), value: b("4") }); // 6
  const revs: bigint[] = [];
  while (revs.length < 2) revs.push(...(await w.next()).events.map((e) => e.kv?.modRevision ?? 0n));
  assert.deepEqual(revs, [5n, 6n]);
});

test("a watcher from now starts after every write already answered, as etcd's current revision", async () => {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const m = await MvccStore.open(kv);
  const hub = new WatchHub(() => m);
  const early = new Collector().watch(hub, 0);
  const w = m.write();
  await w.put(b("k"), b("1"), 0n);
  await w.end(); // revision 2, answered: the hub's loop has not sent it yet
  const now = new Collector().watch(hub, 0);
  const w2 = m.write();
  await w2.put(b("k"), b("2"), 0n);
  await w2.end();
  await waitFor(() => early.seen.length === 2 && now.seen.length >= 1, "the events");
  assert.deepEqual(early.seen, ["PUT k@2", "PUT k@3"]);
  assert.deepEqual(now.seen, ["PUT k@3"]);
  hub.close();
  await m.close();
  await kv.close();
});

test("watchers created before the member has a store (a new member awaiting its first snapshot) get the history once it comes", async () => {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const m = await MvccStore.open(kv);
  for (let i = 0; i < 4; i++) {
    const w = m.write();
    await w.put(b(`k${i}`), b("v"), 0n);
    await w.end(); // revisions 2..5
  }
  let source: MvccStore | undefined;
  const hub = new WatchHub(() => source, { recheckMs: 20 });
  const past = new Collector().watch(hub, 3);
  const future = new Collector().watch(hub, 7);
  const now = new Collector().watch(hub, 0);
  source = m;
  hub.refresh();
  const w = m.write();
  await w.put(b("k9"), b("v"), 0n);
  await w.end(); // 6
  const w2 = m.write();
  await w2.put(b("k9"), b("w"), 0n);
  await w2.end(); // 7
  await waitFor(
    () => past.seen.length === 5 && future.seen.length === 1 && now.seen.length === 2,
    "every watcher's events",
  );
  assert.deepEqual(past.seen, ["PUT k1@3", "PUT k2@4", "PUT k3@5", "PUT k9@6", "PUT k9@7"]);
  assert.deepEqual(future.seen, ["PUT k9@7"]);
  // "From now" on a member without a store: from the revision it has once the store came.
  assert.deepEqual(now.seen, ["PUT k9@6", "PUT k9@7"]);
  hub.close();
  await m.close();
  await kv.close();
});

test("a large delivery lets the event loop run every sliceEvents events sent", async (t) => {
  const kv = await open("/db", { fs: new MemoryFileSystem() });
  const m = await MvccStore.open(kv);
  t.after(async () => {
    await m.close();
    await kv.close();
  });
  const hub = new WatchHub(() => m, { sliceEvents: 10 });
  t.after(() => hub.close());
  const log: string[] = [];
  const sinks = Array.from({ length: 40 }, (_, i) => {
    const c = new Collector();
    const send = c.sendEvents.bind(c);
    c.sendEvents = (w, events) => {
      if (log.length === 0) setImmediate(() => log.push("the event loop ran"));
      log.push(`watcher ${i}`);
      send(w, events);
    };
    return c.watch(hub, 0);
  });
  await waitFor(() => hub.size === 40, "the watchers registered");
  const w = m.write();
  await w.put(b("k"), b("v"), 0n);
  await w.end();
  await waitFor(() => sinks.every((c) => c.seen.length === 1), "every watcher got the put");
  const ran = log.indexOf("the event loop ran");
  assert.ok(ran > 0 && ran <= 11, `the loop ran after ${ran} of 40 watchers: ${log.join(", ")}`);
});
