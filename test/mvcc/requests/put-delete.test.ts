import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { compact } from "../../../src/mvcc/requests/compact.js";
import { deleteRange } from "../../../src/mvcc/requests/delete-range.js";
import { type LeaseLookup, NO_LEASES } from "../../../src/mvcc/requests/leases.js";
import { put } from "../../../src/mvcc/requests/put.js";
import { range } from "../../../src/mvcc/requests/range.js";
import { isRequestError } from "../../../src/mvcc/requests/request-error.js";
import { CompactionRequestSchema } from "../../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { rejectsWithCode } from "../../support/errors.js";
import { b, delReq, freshModel, inWrite, putReq, rangeReq, s, seed } from "./fixtures.js";

test("put: a new revision per put; prev_kv only when asked and when the key existed", async () => {
  const m = freshModel();
  const first = await inWrite(m, (w) =>
    put(w, putReq({ key: b("a"), value: b("1"), prevKv: true }), NO_LEASES),
  );
  assert.equal(first.header?.revision, 2n);
  assert.equal(first.prevKv, undefined);
  const second = await inWrite(m, (w) =>
    put(w, putReq({ key: b("a"), value: b("2"), prevKv: true }), NO_LEASES),
  );
  assert.equal(second.header?.revision, 3n);
  assert.equal(s(second.prevKv!.value), "1");
  assert.equal(second.prevKv!.modRevision, 2n);
  const third = await inWrite(m, (w) => put(w, putReq({ key: b("a"), value: b("3") }), NO_LEASES));
  assert.equal(third.prevKv, undefined);
  assert.equal(m.revision, 4);
});

test("put: ignore_value keeps the value, ignore_lease the lease; both need the key", async () => {
  const m = freshModel();
  await seed(m, [["a", "1"]]);
  const r = await inWrite(m, (w) => put(w, putReq({ key: b("a"), ignoreValue: true }), NO_LEASES));
  assert.equal(r.header?.revision, 3n);
  const kv = (await range(m.read(), rangeReq({ key: b("a") }))).kvs[0]!;
  assert.deepEqual([s(kv.value), kv.version, kv.modRevision], ["1", 2n, 3n]);
  await inWrite(m, (w) =>
    put(w, putReq({ key: b("a"), value: b("9"), ignoreLease: true }), NO_LEASES),
  );
  assert.equal(s((await range(m.read(), rangeReq({ key: b("a") }))).kvs[0]!.value), "9");
  for (const req of [
    putReq({ key: b("x"), ignoreValue: true }),
    putReq({ key: b("x"), value: b("v"), ignoreLease: true }),
  ]) {
    await assert.rejects(
      inWrite(m, (w) => put(w, req, NO_LEASES)),
      (err) => isRequestError(err, "KEY_NOT_FOUND"),
    );
  }
  assert.equal(m.revision, 4, "a refused put changes nothing");
});

test("put: a lease must exist (none does without leases)", async () => {
  const m = freshModel();
  await assert.rejects(
    inWrite(m, (w) => put(w, putReq({ key: b("a"), lease: 7n }), NO_LEASES)),
    (err) => isRequestError(err, "LEASE_NOT_FOUND"),
  );
  assert.equal(m.revision, 1);
  const leases: LeaseLookup = { ...NO_LEASES, exists: (id) => id === 7n };
  await inWrite(m, (w) => put(w, putReq({ key: b("a"), lease: 7n }), leases));
  assert.equal((await range(m.read(), rangeReq({ key: b("a") }))).kvs[0]!.lease, 7n);
});

test("deleteRange: the count deleted, prev_kvs when asked; nothing deleted keeps the revision", async () => {
  const m = freshModel();
  await seed(m, [
    ["a", "1"],
    ["b", "2"],
    ["c", "3"],
  ]);
  const none = await inWrite(m, (w) => deleteRange(w, delReq({ key: b("x"), prevKv: true })));
  assert.equal(none.deleted, 0n);
  assert.equal(none.header?.revision, 4n);
  assert.equal(m.revision, 4);
  const two = await inWrite(m, (w) =>
    deleteRange(w, delReq({ key: b("a"), rangeEnd: b("c"), prevKv: true })),
  );
  assert.equal(two.deleted, 2n);
  assert.equal(two.header?.revision, 5n);
  assert.deepEqual(
    two.prevKvs.map((kv) => [s(kv.key), s(kv.value)]),
    [
      ["a", "1"],
      ["b", "2"],
    ],
  );
  const all = await inWrite(m, (w) => deleteRange(w, delReq({ key: b("a"), rangeEnd: b("\0") })));
  assert.equal(all.deleted, 1n);
  assert.equal(all.prevKvs.length, 0);
  assert.equal((await range(m.read(), rangeReq({ key: b("a"), rangeEnd: b("\0") }))).count, 0n);
});

test("compact: reads below fail, the header has the store's revision; etcd's errors", async () => {
  const m = freshModel();
  const c = (revision: bigint) => compact(m, create(CompactionRequestSchema, { revision }));
  // Revision 0 on a never compacted store succeeds (etcd's compacted revision starts at -1).
  await c(0n).done;
  await seed(m, [
    ["a", "1"],
    ["a", "2"],
    ["a", "3"],
  ]);
  const r = c(3n);
  assert.equal(r.response.header?.revision, 4n);
  await r.done;
  await rejectsWithCode(range(m.read(), rangeReq({ key: b("a"), revision: 2n })), "COMPACTED");
  assert.throws(
    () => c(3n),
    (err) => (err as { code?: string }).code === "COMPACTED",
  );
  assert.throws(
    () => c(2n),
    (err) => (err as { code?: string }).code === "COMPACTED",
  );
  assert.throws(
    () => c(5n),
    (err) => (err as { code?: string }).code === "FUTURE_REVISION",
  );
  assert.throws(
    () => c(-1n),
    (err) => (err as { code?: string }).code === "COMPACTED",
  );
});
