/**
 * The apply path over a multi-version store (here the reference model): each kv.v1 write
 * one revision, a batch's keys in one revision, a compare-and-swap on the latest value,
 * etcd requests run as every member runs them (refusals change nothing but the applied
 * index), entries without changes keeping the revision, and the applied index written
 * with every entry.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { WriteBatch } from "../../src/batch/write-batch.js";
import { isKvError } from "../../src/errors.js";
import { LeaseTable } from "../../src/lease/lease-table.js";
import { isRequestError } from "../../src/mvcc/requests/index.js";
import {
  CompactionRequestSchema,
  Compare_CompareResult,
  Compare_CompareTarget,
  PutRequestSchema,
  type PutResponse,
  TxnRequestSchema,
  type TxnResponse,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import type { Entry } from "../../src/raft/types.js";
import { Applier, decodeApplied } from "../../src/replication/applier.js";
import { encodeCas, encodeRequest, encodeWrite } from "../../src/replication/command.js";
import { APPLIED_KEY } from "../../src/replication/keys.js";
import { encodeMvccRequest, type MvccRequestResult } from "../../src/replication/mvcc-request.js";
import { MvccModel } from "../support/mvcc-model.js";

const SELF = 7;
const membership = {
  members: [{ id: SELF, name: "a", peerAddress: "h:1", clientAddress: "", learner: false }],
  removed: [],
};
const b = (s: string) => Buffer.from(s);
const EMPTY = new Uint8Array(0);

function entry(index: number, data: Uint8Array, term = 2): Entry {
  return { index, term, type: "normal", data };
}

function setup() {
  const mvcc = new MvccModel();
  const leases = new LeaseTable();
  const visible: number[] = [];
  const settled: Array<[number, unknown, unknown]> = [];
  const applier = new Applier(
    {
      store: () => {
        throw new Error("the multi-version path writes through the model only");
      },
      mvcc: () => mvcc,
      leases: () => leases,
      upgrade: async () => mvcc,
      selfId: SELF,
      applyConfChange: () => {},
      onApplied: (i) => visible.push(i),
      onMembership: () => {},
      settle: (request, result, error) => settled.push([request, result, error]),
      settleAfterAdvance: (request, result, error) => settled.push([request, result, error]),
    },
    { index: 1, term: 1, membership },
  );
  return { mvcc, applier, visible, settled };
}

async function latest(mvcc: MvccModel, key: string) {
  const view = mvcc.read();
  const r = await view.range(b(key), EMPTY);
  view.release();
  return r.kvs[0];
}

/** The applied index written last, from the model's extra batches. */
function lastApplied(mvcc: MvccModel): { index: number; term: number } | undefined {
  let found: { index: number; term: number } | undefined;
  for (const batch of mvcc.extras) {
    const rep = batch.encode();
    // A batch of the extras holds the applied key among its puts.
    const text = Buffer.from(rep);
    const at = text.indexOf(Buffer.from(APPLIED_KEY));
    if (at >= 0)
      found = decodeApplied(
        rep.subarray(at + APPLIED_KEY.length + 1, at + APPLIED_KEY.length + 17),
      );
  }
  return found;
}

describe("applier over a multi-version store", () => {
  test("each kv.v1 write is one revision; a batch's keys share it; a key twice: its last operation", async () => {
    const { mvcc, applier, visible, settled } = setup();
    await applier.apply([
      entry(2, encodeWrite(SELF, 10, new WriteBatch().put("a", "1").encode())),
      entry(3, encodeWrite(9, 11, new WriteBatch().put("b", "1").put("c", "1").encode())),
      entry(4, EMPTY),
      entry(
        5,
        encodeWrite(
          SELF,
          12,
          new WriteBatch().put("a", "2").delete("a").put("d", "x").put("d", "y").encode(),
        ),
      ),
    ]);
    assert.deepEqual(visible, [2, 3, 4, 5]);
    assert.equal(mvcc.revision, 4, "three revisions after the initial 1; the empty entry none");
    assert.deepEqual(
      { ...(await latest(mvcc, "b"))!, key: "b", value: "1" },
      { key: "b", value: "1", createRevision: 3, modRevision: 3, version: 1, lease: 0n },
    );
    assert.equal((await latest(mvcc, "c"))!.modRevision, 3);
    assert.equal(await latest(mvcc, "a"), undefined, "deleted in the batch that put it");
    assert.equal((await latest(mvcc, "d"))!.version, 1, "one version for two puts in one batch");
    assert.equal(Buffer.from((await latest(mvcc, "d"))!.value).toString(), "y");
    assert.deepEqual(
      settled.map(([r]) => r),
      [10, 12],
    );
    assert.deepEqual(lastApplied(mvcc), { index: 5, term: 2 });
  });

  test("a compare-and-swap decides on the latest value, seeing the entries before it", async () => {
    const { mvcc, applier, settled } = setup();
    await applier.apply([
      entry(2, encodeWrite(SELF, 1, new WriteBatch().put("k", "1").encode())),
      entry(3, encodeCas(SELF, 2, b("k"), b("1"), b("2"))),
      entry(4, encodeCas(SELF, 3, b("k"), b("1"), b("3"))),
      entry(5, encodeCas(SELF, 4, b("k"), b("2"), undefined)),
      entry(6, encodeCas(SELF, 5, b("k"), undefined, b("new"))),
    ]);
    const answers = settled.slice(1).map(([, r]) => {
      const cas = r as { applied: boolean; current: Uint8Array | undefined };
      return [
        cas.applied,
        cas.current === undefined ? undefined : Buffer.from(cas.current).toString(),
      ];
    });
    assert.deepEqual(answers, [
      [true, "2"],
      [false, "2"],
      [true, undefined],
      [true, "new"],
    ]);
    const k = (await latest(mvcc, "k"))!;
    assert.deepEqual(
      [k.createRevision, k.modRevision, k.version],
      [5, 5, 1],
      "recreated after the delete",
    );
    assert.equal(mvcc.revision, 5, "the failed swap took no revision");
  });

  test("etcd requests apply with one revision each; a refused one changes nothing but the applied index", async () => {
    const { mvcc, applier, visible, settled } = setup();
    const put = (request: number, key: string, value: string) =>
      encodeRequest(
        SELF,
        request,
        encodeMvccRequest({
          kind: "put",
          request: create(PutRequestSchema, { key: b(key), value: b(value), prevKv: true }),
        }),
      );
    const createTxn = (request: number, key: string) =>
      encodeRequest(
        SELF,
        request,
        encodeMvccRequest({
          kind: "txn",
          request: create(TxnRequestSchema, {
            compare: [
              {
                key: b(key),
                target: Compare_CompareTarget.MOD,
                result: Compare_CompareResult.EQUAL,
                targetUnion: { case: "modRevision", value: 0n },
              },
            ],
            success: [{ request: { case: "requestPut", value: { key: b(key), value: b("c") } } }],
          }),
        }),
      );
    const ignoreValue = encodeRequest(
      SELF,
      4,
      encodeMvccRequest({
        kind: "put",
        request: create(PutRequestSchema, { key: b("absent"), ignoreValue: true }),
      }),
    );
    const compact = (request: number, revision: bigint) =>
      encodeRequest(
        SELF,
        request,
        encodeMvccRequest({
          kind: "compact",
          request: create(CompactionRequestSchema, { revision }),
        }),
      );
    await applier.apply([
      entry(2, put(1, "a", "1")),
      entry(3, put(2, "a", "2")),
      entry(4, createTxn(3, "a")),
      entry(5, ignoreValue),
      entry(6, createTxn(5, "z")),
      entry(7, compact(6, 3n)),
      entry(8, compact(7, 2n)),
    ]);
    assert.deepEqual(visible, [2, 3, 4, 5, 6, 7, 8]);
    const results = settled.map(([, r, e]) => [r as MvccRequestResult | undefined, e] as const);
    const putAnswer = results[1]![0]!.response as PutResponse;
    assert.equal(putAnswer.header?.revision, 3n);
    assert.equal(Buffer.from(putAnswer.prevKv!.value).toString(), "1");
    assert.equal((results[2]![0]!.response as TxnResponse).succeeded, false);
    assert.equal(
      (results[2]![0]!.response as TxnResponse).header?.revision,
      3n,
      "no write, no revision",
    );
    assert.ok(isRequestError(results[3]![1], "KEY_NOT_FOUND"));
    assert.equal((results[4]![0]!.response as TxnResponse).header?.revision, 4n);
    assert.equal(mvcc.compactRevision, 3);
    assert.ok(isKvError(results[6]![1], "COMPACTED"), "compacting below the compacted revision");
    assert.equal(mvcc.revision, 4);
    assert.deepEqual(lastApplied(mvcc), { index: 8, term: 2 });
  });
});
