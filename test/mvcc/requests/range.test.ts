import assert from "node:assert/strict";
import { test } from "node:test";
import { range } from "../../../src/mvcc/requests/range.js";
import {
  RangeRequest_SortOrder as Order,
  RangeRequest_SortTarget as Target,
} from "../../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { rejectsWithCode } from "../../support/errors.js";
import { b, freshModel, inWrite, rangeReq, s, seed } from "./fixtures.js";

/** a=1 (rev 2), b=2 (3), c=3 (4), a=4 (5: a's version 2), d=0 (6). */
async function store() {
  const m = freshModel();
  await seed(m, [
    ["a", "1"],
    ["b", "2"],
    ["c", "3"],
    ["a", "4"],
    ["d", "0"],
  ]);
  return m;
}

const keys = (r: { kvs: { key: Uint8Array }[] }) => r.kvs.map((kv) => s(kv.key)).join(",");

test("range: one key, a range, from key (\\0), kvs with every revision and the version", async () => {
  const m = await store();
  const one = await range(m.read(), rangeReq({ key: b("a") }));
  assert.equal(one.kvs.length, 1);
  const a = one.kvs[0]!;
  assert.deepEqual(
    [s(a.value), a.createRevision, a.modRevision, a.version, a.lease],
    ["4", 2n, 5n, 2n, 0n],
  );
  assert.equal(one.count, 1n);
  assert.equal(one.header?.revision, 6n);
  assert.equal(keys(await range(m.read(), rangeReq({ key: b("b"), rangeEnd: b("d") }))), "b,c");
  assert.equal(keys(await range(m.read(), rangeReq({ key: b("b"), rangeEnd: b("\0") }))), "b,c,d");
  assert.equal(keys(await range(m.read(), rangeReq({ key: b("x") }))), "");
});

test("range: limit gives `more`, count ignores the limit; limit <= 0 is no limit", async () => {
  const m = await store();
  const r = await range(m.read(), rangeReq({ key: b("a"), rangeEnd: b("\0"), limit: 2n }));
  assert.equal(keys(r), "a,b");
  assert.equal(r.more, true);
  assert.equal(r.count, 4n);
  const exact = await range(m.read(), rangeReq({ key: b("a"), rangeEnd: b("\0"), limit: 4n }));
  assert.equal(exact.more, false);
  const neg = await range(m.read(), rangeReq({ key: b("a"), rangeEnd: b("\0"), limit: -1n }));
  assert.equal(keys(neg), "a,b,c,d");
  assert.equal(neg.more, false);
});

test("range: sort by each target and order; ties keep key order, descending too", async () => {
  const m = await store();
  const all = { key: b("a"), rangeEnd: b("\0") };
  const sorted = async (order: Order, target: Target) =>
    keys(await range(m.read(), rangeReq({ ...all, sortOrder: order, sortTarget: target })));
  assert.equal(await sorted(Order.DESCEND, Target.KEY), "d,c,b,a");
  assert.equal(await sorted(Order.ASCEND, Target.MOD), "b,c,a,d");
  assert.equal(await sorted(Order.DESCEND, Target.CREATE), "d,c,b,a");
  assert.equal(await sorted(Order.ASCEND, Target.VALUE), "d,b,c,a");
  // Versions: a=2, b=c=d=1: ties stay in key order both ways.
  assert.equal(await sorted(Order.ASCEND, Target.VERSION), "b,c,d,a");
  assert.equal(await sorted(Order.DESCEND, Target.VERSION), "a,b,c,d");
  // A target other than KEY with order NONE sorts ascending.
  assert.equal(await sorted(Order.NONE, Target.VALUE), "d,b,c,a");
});

test("range: sorted with a limit sorts every key first; unsorted with target only sorts limit+1", async () => {
  const m = await store();
  const all = { key: b("a"), rangeEnd: b("\0"), limit: 2n };
  const asc = await range(
    m.read(),
    rangeReq({ ...all, sortOrder: Order.ASCEND, sortTarget: Target.VALUE }),
  );
  assert.equal(keys(asc), "d,b");
  assert.equal(asc.more, true);
  // etcd fetches limit + 1 in key order (a, b, c) when the order is NONE, then sorts them.
  const none = await range(m.read(), rangeReq({ ...all, sortTarget: Target.VALUE }));
  assert.equal(keys(none), "b,c");
  assert.equal(none.more, true);
});

test("range: min/max mod and create revision filters; count is before filtering", async () => {
  const m = await store();
  const all = { key: b("a"), rangeEnd: b("\0") };
  const r = await range(m.read(), rangeReq({ ...all, minModRevision: 4n }));
  assert.equal(keys(r), "a,c,d");
  assert.equal(r.count, 4n);
  assert.equal(keys(await range(m.read(), rangeReq({ ...all, maxModRevision: 4n }))), "b,c");
  assert.equal(keys(await range(m.read(), rangeReq({ ...all, minCreateRevision: 3n }))), "b,c,d");
  assert.equal(keys(await range(m.read(), rangeReq({ ...all, maxCreateRevision: 3n }))), "a,b");
  const lim = await range(m.read(), rangeReq({ ...all, minModRevision: 3n, limit: 2n }));
  assert.equal(keys(lim), "a,b");
  assert.equal(lim.more, true);
});

test("range: keys_only empties values; count_only returns the count alone", async () => {
  const m = await store();
  const all = { key: b("a"), rangeEnd: b("\0") };
  const ko = await range(m.read(), rangeReq({ ...all, keysOnly: true }));
  assert.equal(keys(ko), "a,b,c,d");
  assert.ok(ko.kvs.every((kv) => kv.value.length === 0 && kv.modRevision > 0n));
  const co = await range(m.read(), rangeReq({ ...all, countOnly: true, limit: 1n }));
  assert.equal(co.kvs.length, 0);
  assert.equal(co.count, 4n);
  assert.equal(co.more, false);
});

test("range at a revision: the keys as of then; the header keeps the store's revision", async () => {
  const m = await store();
  const r = await range(m.read(), rangeReq({ key: b("a"), rangeEnd: b("\0"), revision: 4n }));
  assert.equal(keys(r), "a,b,c");
  assert.equal(s(r.kvs[0]!.value), "1");
  assert.equal(r.header?.revision, 6n);
  // A negative revision reads the current state, as etcd's.
  const neg = await range(m.read(), rangeReq({ key: b("a"), revision: -3n }));
  assert.equal(s(neg.kvs[0]!.value), "4");
  await rejectsWithCode(
    range(m.read(), rangeReq({ key: b("a"), revision: 7n })),
    "FUTURE_REVISION",
  );
  await m.compact(4).done;
  await rejectsWithCode(range(m.read(), rangeReq({ key: b("a"), revision: 3n })), "COMPACTED");
  assert.equal((await range(m.read(), rangeReq({ key: b("a"), revision: 4n }))).kvs.length, 1);
});

test("range in a write transaction sees its writes and reports the next revision", async () => {
  const m = await store();
  await inWrite(m, async (w) => {
    const before = await range(w, rangeReq({ key: b("e") }));
    assert.equal(before.header?.revision, 6n);
    await w.put(b("e"), b("5"), 0n);
    const after = await range(w, rangeReq({ key: b("e") }));
    assert.equal(after.header?.revision, 7n);
    assert.equal(after.kvs[0]?.modRevision, 7n);
  });
});
