import assert from "node:assert/strict";
import { test } from "node:test";
import { NO_LEASES } from "../../../src/mvcc/requests/leases.js";
import { range } from "../../../src/mvcc/requests/range.js";
import { isRequestError } from "../../../src/mvcc/requests/request-error.js";
import { isTxnReadOnly, readTxn, txn } from "../../../src/mvcc/requests/txn.js";
import type { TxnRequest } from "../../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { rejectsWithCode } from "../../support/errors.js";
import type { MvccModel } from "../../support/mvcc-model.js";
import {
  b,
  cmp,
  freshModel,
  inWrite,
  opDel,
  opPut,
  opRange,
  opTxn,
  rangeReq,
  s,
  seed,
  txnReq,
} from "./fixtures.js";

/** a=1 (rev 2), b=2 (3), a=3 (4: version 2). */
async function store(): Promise<MvccModel> {
  const m = freshModel();
  await seed(m, [
    ["a", "1"],
    ["b", "2"],
    ["a", "3"],
  ]);
  return m;
}

const run = (m: MvccModel, req: TxnRequest) => inWrite(m, (w) => txn(w, req, NO_LEASES));

async function holds(m: MvccModel, ...compare: ReturnType<typeof cmp>[]): Promise<boolean> {
  return (await run(m, txnReq({ compare }))).succeeded;
}

test("txn compares: each target with each result, on a key", async () => {
  const m = await store();
  assert.equal(await holds(m, cmp("a", "version", "==", 2n)), true);
  assert.equal(await holds(m, cmp("a", "version", "!=", 2n)), false);
  assert.equal(await holds(m, cmp("a", "version", ">", 1n)), true);
  assert.equal(await holds(m, cmp("a", "version", "<", 2n)), false);
  assert.equal(await holds(m, cmp("a", "createRevision", "==", 2n)), true);
  assert.equal(await holds(m, cmp("a", "modRevision", "==", 4n)), true);
  assert.equal(await holds(m, cmp("a", "modRevision", "<", 4n)), false);
  assert.equal(await holds(m, cmp("a", "value", "==", "3")), true);
  assert.equal(await holds(m, cmp("a", "value", ">", "2")), true);
  assert.equal(await holds(m, cmp("a", "value", "<", "3")), false);
  assert.equal(await holds(m, cmp("a", "lease", "==", 0n)), true);
  assert.equal(await holds(m, cmp("a", "lease", ">", 0n)), false);
  // All compares must hold.
  assert.equal(await holds(m, cmp("a", "version", "==", 2n), cmp("b", "version", "==", 2n)), false);
});

test("txn compares on an absent key: zeros, except that a VALUE compare fails", async () => {
  const m = await store();
  assert.equal(await holds(m, cmp("x", "modRevision", "==", 0n)), true);
  assert.equal(await holds(m, cmp("x", "createRevision", "==", 0n)), true);
  assert.equal(await holds(m, cmp("x", "version", "<", 1n)), true);
  assert.equal(await holds(m, cmp("x", "value", "==", "")), false);
  assert.equal(await holds(m, cmp("x", "value", "!=", "q")), false);
});

test("txn compares on a range: every key must hold; an empty range is a key of zeros", async () => {
  const m = await store();
  assert.equal(await holds(m, cmp("a", "version", ">", 0n, "c")), true);
  assert.equal(await holds(m, cmp("a", "version", "==", 2n, "c")), false, "b has version 1");
  assert.equal(await holds(m, cmp("a", "modRevision", "<", 5n, "\0")), true);
  assert.equal(await holds(m, cmp("c", "version", "==", 0n, "z")), true);
  assert.equal(await holds(m, cmp("c", "value", "==", "", "z")), false);
});

test("txn: branches, one revision for every write, later ops see earlier ones", async () => {
  const m = await store();
  const r = await run(
    m,
    txnReq({
      compare: [cmp("a", "value", "==", "3")],
      success: [
        opRange("c"),
        opPut("c", "new"),
        opRange("c"),
        opDel("b", "", { prevKv: true }),
        opPut("d", "d", { prevKv: true }),
        opRange("a", "\0"),
      ],
      failure: [opPut("f", "f")],
    }),
  );
  assert.equal(r.succeeded, true);
  assert.equal(r.header?.revision, 5n);
  const [r0, p1, r2, d3, p4, r5] = r.responses.map((x) => x.response);
  assert.equal(r0?.case, "responseRange");
  assert.equal(r0.value.kvs.length, 0);
  assert.equal(r0.value.header?.revision, 4n, "before the first write: the store's revision");
  assert.equal(p1?.case, "responsePut");
  assert.equal(p1.value.header?.revision, 5n);
  assert.equal(r2?.case, "responseRange");
  assert.equal(s(r2.value.kvs[0]!.value), "new");
  assert.equal(r2.value.kvs[0]!.modRevision, 5n);
  assert.equal(r2.value.header?.revision, 5n);
  assert.equal(d3?.case, "responseDeleteRange");
  assert.equal(d3.value.deleted, 1n);
  assert.equal(s(d3.value.prevKvs[0]!.value), "2");
  assert.equal(p4?.case, "responsePut");
  assert.equal(p4.value.prevKv, undefined);
  assert.equal(r5?.case, "responseRange");
  assert.deepEqual(
    r5.value.kvs.map((kv) => [s(kv.key), kv.modRevision]),
    [
      ["a", 4n],
      ["c", 5n],
      ["d", 5n],
    ],
  );
  assert.equal(m.revision, 5);
  const f = await run(
    m,
    txnReq({ compare: [cmp("a", "value", "==", "no")], failure: [opPut("f")] }),
  );
  assert.equal(f.succeeded, false);
  assert.equal(f.responses.length, 1);
  assert.equal(f.header?.revision, 6n);
});

test("txn: a txn that writes nothing keeps the revision (its deletes found nothing)", async () => {
  const m = await store();
  const r = await run(m, txnReq({ success: [opDel("x"), opRange("a")], failure: [opPut("y")] }));
  assert.equal(r.header?.revision, 4n);
  assert.equal(m.revision, 4);
  const del = r.responses[0]!.response;
  assert.equal(del.case === "responseDeleteRange" && del.value.header?.revision, 4n);
});

test("txn: nested txns take their own branches; their header stays empty", async () => {
  const m = await store();
  const r = await run(
    m,
    txnReq({
      compare: [cmp("a", "version", "==", 2n)],
      success: [
        opTxn({
          compare: [cmp("b", "value", "==", "no")],
          success: [opPut("s")],
          failure: [opPut("f1")],
        }),
        opTxn({ compare: [cmp("b", "value", "==", "2")], success: [opPut("s2"), opRange("f1")] }),
      ],
    }),
  );
  assert.equal(r.succeeded, true);
  const [n1, n2] = r.responses.map((x) => x.response);
  assert.equal(n1?.case, "responseTxn");
  assert.equal(n1.value.succeeded, false);
  assert.deepEqual(n1.value.header, {
    $typeName: "etcdserverpb.ResponseHeader",
    clusterId: 0n,
    memberId: 0n,
    revision: 0n,
    raftTerm: 0n,
  });
  assert.equal(n2?.case, "responseTxn");
  assert.equal(n2.value.succeeded, true);
  const inner = n2.value.responses[1]!.response;
  assert.equal(inner.case === "responseRange" && s(inner.value.kvs[0]!.key), "f1");
  assert.equal(r.header?.revision, 5n);
  const keys = (await range(m.read(), rangeReq({ key: b("a"), rangeEnd: b("\0") }))).kvs;
  assert.deepEqual(
    keys.map((kv) => s(kv.key)),
    ["a", "b", "f1", "s2"],
  );
});

test("txn: a compacted or future range, a missing key for ignore_value, an unknown lease: nothing written", async () => {
  const m = await store();
  await m.compact(3).done;
  const cases: [TxnRequest, (err: unknown) => boolean][] = [
    [
      txnReq({ success: [opPut("x", "1"), opRange("a", "", { revision: 2n })] }),
      (e) => (e as { code?: string }).code === "COMPACTED",
    ],
    [
      txnReq({ success: [opPut("x", "1"), opRange("a", "", { revision: 5n })] }),
      (e) => (e as { code?: string }).code === "FUTURE_REVISION",
    ],
    [
      txnReq({ success: [opPut("x", "1"), opPut("y", "", { ignoreValue: true })] }),
      (e) => isRequestError(e, "KEY_NOT_FOUND"),
    ],
    [
      txnReq({ success: [opPut("x", "1"), opTxn({ success: [opPut("y", "", { lease: 5n })] })] }),
      (e) => isRequestError(e, "LEASE_NOT_FOUND"),
    ],
    [
      // etcd 3.4 would panic here (its duplicate check misses the "\0" delete).
      txnReq({ success: [opDel("a", "\0"), opPut("a", "", { ignoreValue: true })] }),
      (e) => isRequestError(e, "KEY_NOT_FOUND"),
    ],
  ];
  for (const [req, expected] of cases) {
    await assert.rejects(run(m, req), expected);
    assert.equal(m.revision, 4);
    assert.equal((await range(m.read(), rangeReq({ key: b("x") }))).count, 0n);
  }
  // The checks look at the chosen branch only.
  const ok = await run(
    m,
    txnReq({
      compare: [cmp("a", "version", "==", 9n)],
      success: [opRange("a", "", { revision: 2n })],
      failure: [opPut("x")],
    }),
  );
  assert.equal(ok.succeeded, false);
  await rejectsWithCode(
    readTxn(m.read(), txnReq({ success: [opRange("a", "", { revision: 2n })] })),
    "COMPACTED",
  );
});

test("readTxn: a txn without puts or deletes runs on a read view", async () => {
  const m = await store();
  const ro = txnReq({
    compare: [cmp("a", "version", "==", 2n)],
    success: [opRange("a"), opTxn({ success: [opRange("b")] })],
  });
  assert.equal(isTxnReadOnly(ro), true);
  assert.equal(isTxnReadOnly(txnReq({ failure: [opTxn({ failure: [opDel("a")] })] })), false);
  const r = await readTxn(m.read(), ro);
  assert.equal(r.header?.revision, 4n);
  assert.equal(r.responses.length, 2);
  await assert.rejects(readTxn(m.read(), txnReq({ failure: [opPut("a")] })), /writes/);
});

test("txn: a range at a negative revision is current until the first compaction, then compacted", async () => {
  const m = await store();
  const req = txnReq({ success: [opRange("a", "", { revision: -1n })] });
  const r = await readTxn(m.read(), req);
  const only = r.responses[0]!.response;
  assert.equal(only.case === "responseRange" && s(only.value.kvs[0]!.value), "3");
  await m.compact(2).done;
  await rejectsWithCode(readTxn(m.read(), req), "COMPACTED");
});
