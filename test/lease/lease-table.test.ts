import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { type KvStore, MemoryFileSystem, open } from "../../src/index.js";
import { LeaseIdGenerator, minLeaseTtl } from "../../src/lease/lease-ids.js";
import {
  type LeaseRequest,
  type LeaseRun,
  MAX_LEASE_TTL,
  MAX_REVOKES_PER_TICK,
  runLeaseRequest,
} from "../../src/lease/lease-requests.js";
import { LeaseTable } from "../../src/lease/lease-table.js";
import type { MvccEvent } from "../../src/mvcc/changes.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { deleteRange, isRequestError, put, txn } from "../../src/mvcc/requests/index.js";
import {
  DeleteRangeRequestSchema,
  LeaseGrantRequestSchema,
  LeaseRevokeRequestSchema,
  PutRequestSchema,
  TxnRequestSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { decodeMvccRequest, encodeMvccRequest } from "../../src/replication/mvcc-request.js";

const b = (s: string) => Uint8Array.from(Buffer.from(s));
const s = (u: Uint8Array) => Buffer.from(u).toString();

interface Env {
  kv: KvStore;
  mvcc: MvccStore;
  table: LeaseTable;
}

async function fresh(fs = new MemoryFileSystem()): Promise<Env & { fs: MemoryFileSystem }> {
  const kv = await open("/db", { fs });
  const mvcc = await MvccStore.open(kv);
  return { fs, kv, mvcc, table: await LeaseTable.load(mvcc) };
}

async function reopen(e: Env & { fs: MemoryFileSystem }): Promise<Env & { fs: MemoryFileSystem }> {
  await e.mvcc.close();
  await e.kv.close();
  return fresh(e.fs);
}

async function run(e: Env, req: LeaseRequest): Promise<LeaseRun> {
  const r = await runLeaseRequest(e.mvcc, e.table, req, () => {});
  await r.ended;
  return r;
}

const grant = (e: Env, id: bigint, ttl: number) =>
  run(e, {
    kind: "leaseGrant",
    request: create(LeaseGrantRequestSchema, { ID: id, TTL: BigInt(ttl) }),
  });
const revoke = (e: Env, id: bigint) =>
  run(e, { kind: "leaseRevoke", request: create(LeaseRevokeRequestSchema, { ID: id }) });
const tick = (e: Env, elapsedMs: number, renewed: bigint[] = []) =>
  run(e, { kind: "leaseTick", request: { elapsedMs, renewed } });

async function putKey(e: Env, key: string, lease: bigint): Promise<void> {
  const w = e.mvcc.write();
  try {
    await put(w, create(PutRequestSchema, { key: b(key), value: b("v"), lease }), e.table);
  } finally {
    await w.end();
  }
}

async function keys(e: Env): Promise<string[]> {
  const v = e.mvcc.read();
  try {
    return (await v.range(b("\0"), b("\0"))).kvs.map((kv) => s(kv.key));
  } finally {
    v.release();
  }
}

async function events(e: Env, from: number): Promise<MvccEvent[]> {
  const out: MvccEvent[] = [];
  for await (const ev of e.mvcc.changes(from)) out.push(ev);
  return out;
}

test("grant: a lease with expiry T + ttl; existing id, too large a TTL and id 0 refused", async () => {
  const e = await fresh();
  const r = await grant(e, 5n, 10);
  assert.equal(r.error, undefined);
  assert.equal(e.table.get(5n)?.expiresAt, 10_000);
  assert.equal(e.mvcc.revision, 1, "a grant takes no revision");
  assert.ok(isRequestError((await grant(e, 5n, 10)).error, "LEASE_EXISTS"));
  assert.ok(isRequestError((await grant(e, 6n, MAX_LEASE_TTL + 1)).error, "LEASE_TTL_TOO_LARGE"));
  assert.ok(isRequestError((await grant(e, 0n, 10)).error, "LEASE_NOT_FOUND"));
  assert.equal(e.table.size, 1);
});

test("a put names only a lease that exists; revoke deletes its keys in one revision, in key order", async () => {
  const e = await fresh();
  await grant(e, 7n, 60);
  const w = e.mvcc.write();
  await assert.rejects(
    put(w, create(PutRequestSchema, { key: b("x"), lease: 8n }), e.table),
    (err) => isRequestError(err, "LEASE_NOT_FOUND"),
  );
  await w.end();
  for (const k of ["c", "a", "b"]) await putKey(e, k, 7n);
  await putKey(e, "other", 0n);
  const before = e.mvcc.revision;
  const r = await revoke(e, 7n);
  assert.equal(r.error, undefined);
  assert.equal(e.mvcc.revision, before + 1, "one revision for every attached key");
  const evs = await events(e, before + 1);
  assert.deepEqual(
    evs.map((ev) => [ev.type, s(ev.kv.key), ev.revision]),
    [
      ["delete", "a", before + 1],
      ["delete", "b", before + 1],
      ["delete", "c", before + 1],
    ],
  );
  assert.deepEqual(await keys(e), ["other"]);
  assert.ok(isRequestError((await revoke(e, 7n)).error, "LEASE_NOT_FOUND"));
});

test("revoke deletes only keys whose latest version still names the lease", async () => {
  const e = await fresh();
  await grant(e, 1n, 60);
  await grant(e, 2n, 60);
  await putKey(e, "moved", 1n);
  await putKey(e, "stays", 1n);
  await putKey(e, "moved", 2n); // detached from 1 through the hook
  // A write that bypasses the hooks (as kv.v1 on a cluster): the index still says "stays".
  const w = e.mvcc.write();
  await w.put(b("stays"), b("plain"), 0n);
  await w.end();
  assert.deepEqual(e.table.keysOf(1n).map(s), ["stays"]);
  await revoke(e, 1n);
  assert.deepEqual(await keys(e), ["moved", "stays"]);
});

test("delete and txn detach; a txn compare on LEASE sees the lease", async () => {
  const e = await fresh();
  await grant(e, 3n, 60);
  await putKey(e, "a", 3n);
  await putKey(e, "b", 3n);
  let w = e.mvcc.write();
  await deleteRange(w, create(DeleteRangeRequestSchema, { key: b("a") }), e.table);
  await w.end();
  assert.deepEqual(e.table.keysOf(3n).map(s), ["b"]);
  w = e.mvcc.write();
  const resp = await txn(
    w,
    create(TxnRequestSchema, {
      compare: [
        {
          key: b("b"),
          target: 4 /* LEASE */,
          result: 0,
          targetUnion: { case: "lease", value: 3n },
        },
      ],
      success: [
        {
          request: {
            case: "requestPut",
            value: create(PutRequestSchema, { key: b("c"), lease: 3n }),
          },
        },
      ],
    }),
    e.table,
  );
  await w.end();
  assert.equal(resp.succeeded, true);
  assert.deepEqual(e.table.keysOf(3n).map(s), ["b", "c"]);
});

test("tick: renewals, then expiry in (expiresAt, id) order, one revision per lease", async () => {
  const e = await fresh();
  await grant(e, 9n, 2);
  await grant(e, 4n, 2);
  await grant(e, 1n, 3);
  await grant(e, 2n, 5);
  for (const [k, id] of [
    ["k9", 9n],
    ["k4", 4n],
    ["k1", 1n],
    ["k2", 2n],
  ] as const)
    await putKey(e, k, id);
  const r1 = await tick(e, 1500, [2n, 77n]);
  assert.deepEqual((r1.response as { ttls: number[] }).ttls, [5, 0]);
  assert.equal(e.table.get(2n)?.expiresAt, 1500 + 5000);
  const before = e.mvcc.revision;
  await tick(e, 1600); // T = 3100: 4 and 9 (at 2000) then 1 (at 3000)
  assert.equal(e.table.time, 3100);
  const evs = await events(e, before + 1);
  assert.deepEqual(
    evs.map((ev) => [s(ev.kv.key), ev.revision - before]),
    [
      ["k4", 1],
      ["k9", 2],
      ["k1", 3],
    ],
  );
  assert.deepEqual(await keys(e), ["k2"]);
  assert.equal(e.table.exists(2n), true);
});

test("tick: a lease expired before the tick is not renewed by it", async () => {
  const e = await fresh();
  await grant(e, 1n, 1);
  const ids = [];
  // Leave lease 1 expired but not revoked: more expired leases than a tick revokes.
  for (let i = 0; i < MAX_REVOKES_PER_TICK; i++) {
    const id = 100n + BigInt(i);
    ids.push(id);
    await grant(e, id, 1);
  }
  await grant(e, 2n, 2);
  await tick(e, 1000); // 501 expired at 1000: 1 and 100.. (first 500 by id) revoked
  assert.equal(e.table.get(1n), undefined);
  const left = e.table.expired();
  assert.equal(left.length, 1, "the rate limit leaves the rest for the next tick");
  const last = left[0]!.id;
  const r = await tick(e, 0, [last, 2n]);
  assert.deepEqual((r.response as { ttls: number[] }).ttls, [0, 2]);
  assert.equal(e.table.get(last), undefined);
});

test("restart: T, the leases and their attached keys are reloaded", async () => {
  let e = await fresh();
  await grant(e, 11n, 30);
  await grant(e, 12n, 30);
  await putKey(e, "x", 11n);
  await putKey(e, "y", 11n);
  await tick(e, 700, [12n]);
  e = await reopen(e);
  assert.equal(e.table.time, 700);
  assert.equal(e.table.get(12n)?.expiresAt, 700 + 30_000);
  assert.equal(e.table.get(11n)?.expiresAt, 30_000);
  assert.deepEqual(e.table.keysOf(11n).map(s), ["x", "y"]);
  await revoke(e, 11n);
  e = await reopen(e);
  assert.equal(e.table.get(11n), undefined);
  assert.deepEqual(await keys(e), []);
  await e.mvcc.close();
  await e.kv.close();
});

test("lease ids: positive int63, distinct; minimum TTL as etcd's", () => {
  const g = new LeaseIdGenerator(0xabcdef, 1_700_000_000_000);
  const seen = new Set<bigint>();
  for (let i = 0; i < 1000; i++) {
    const id = g.next();
    assert.ok(id > 0n && id < 1n << 63n);
    seen.add(id);
  }
  assert.equal(seen.size, 1000);
  assert.equal(minLeaseTtl(1000), 2);
  assert.equal(minLeaseTtl(600), 1);
  assert.equal(minLeaseTtl(2000), 3);
});

test("tick: a follower's renewals carry slack (the replicated T lags the leader's clock)", async () => {
  const e = await fresh();
  await grant(e, 1n, 10);
  await tick(e, 300);
  await run(e, { kind: "leaseTick", request: { elapsedMs: 0, renewed: [1n], slackMs: 150 } });
  assert.equal(e.table.get(1n)?.expiresAt, 300 + 10_000 + 150);
});

test("the Tick request's replicated form: elapsed, slack and ids round-trip", () => {
  const request = { elapsedMs: 1234, renewed: [1n, (1n << 62n) + 5n], slackMs: 125 };
  const body = encodeMvccRequest({ kind: "leaseTick", request });
  assert.deepEqual(decodeMvccRequest(body), { kind: "leaseTick", request });
  assert.throws(() => decodeMvccRequest(body.subarray(0, 12)), /malformed/);
});
