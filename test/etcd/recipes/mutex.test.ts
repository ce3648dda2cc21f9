/**
 * The lock recipe (src/etcd/recipes/mutex.ts) on a single node's etcd backend with stub
 * leases: contenders served in create-revision order, a release waking the next, a
 * cancelled waiter's key removed, a lease lost while waiting (etcd 11456), and the
 * fencing txn that refuses a stale holder's write.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { create } from "@bufbuild/protobuf";
import { isKvError } from "../../../src/errors.js";
import { lock, unlock } from "../../../src/etcd/recipes/mutex.js";
import { createRevisionIs, RECIPE_ERRORS } from "../../../src/etcd/recipes/recipe-backend.js";
import { isRequestError } from "../../../src/mvcc/requests/request-error.js";
import { TxnRequestSchema } from "../../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import {
  bytes,
  grantEach,
  settlesWithin,
  startRecipes,
  text,
} from "../../support/etcd-recipe-fixture.js";
import { waitFor } from "../../support/wait-for.js";

const NAME = bytes("job");

test("lock: the key is name/<lease hex>; the same lease locking again gets the same key", async (t) => {
  const f = await startRecipes(t);
  const lease = await f.leases.grant(0xabcn);
  const a = await lock(f.b, NAME, lease, {});
  assert.equal(text(a.key), "job/abc");
  assert.equal(a.createRevision, a.header?.revision);
  const again = await lock(f.b, NAME, lease, {});
  assert.equal(text(again.key), "job/abc");
  assert.equal(again.createRevision, a.createRevision);
  assert.deepEqual(await f.keys("job/"), ["job/abc"]);
});

test("lock: waiters are served in create-revision order; each release wakes the next only", async (t) => {
  const f = await startRecipes(t);
  const [la, lb, lc] = await grantEach(f.leases, 0xan, 0xbn, 0xcn);
  const a = await lock(f.b, NAME, la, {});
  const order: string[] = [];
  // C's key is created before B's: C is served first, whatever the lease IDs.
  const c = lock(f.b, NAME, lc, {}).then((r) => {
    order.push("c");
    return r;
  });
  await waitKeys(f, 2);
  const bp = lock(f.b, NAME, lb, {}).then((r) => {
    order.push("b");
    return r;
  });
  await waitKeys(f, 3);
  assert.equal(await settlesWithin(Promise.race([bp, c]), 100), false, "both wait");
  await unlock(f.b, a.key, {});
  const cHeld = await c;
  assert.equal(text(cHeld.key), "job/c");
  assert.equal(await settlesWithin(bp, 100), false, "b still waits behind c");
  await unlock(f.b, cHeld.key, {});
  const bHeld = await bp;
  assert.equal(text(bHeld.key), "job/b");
  assert.deepEqual(order, ["c", "b"]);
  assert.ok(cHeld.createRevision < bHeld.createRevision);
  // The answer's header is at least the revision of the release that let it through.
  assert.ok((bHeld.header?.revision ?? 0n) > cHeld.createRevision);
});

test("lock: a cancelled waiter's key is deleted and it no longer holds up the others", async (t) => {
  const f = await startRecipes(t);
  const [la, lb, lc] = await grantEach(f.leases, 0xan, 0xbn, 0xcn);
  const a = await lock(f.b, NAME, la, {});
  const cancel = new AbortController();
  const b = lock(f.b, NAME, lb, { signal: cancel.signal });
  await waitKeys(f, 2);
  const c = lock(f.b, NAME, lc, {});
  await waitKeys(f, 3);
  cancel.abort();
  await assert.rejects(b, (err) => isKvError(err, "ABORTED"));
  await waitFor(async () => !(await f.keys("job/")).includes("job/b"), "the keys");
  assert.deepEqual(await f.keys("job/"), ["job/a", "job/c"]);
  await unlock(f.b, a.key, {});
  assert.equal(text((await c).key), "job/c");
});

test("lock: a waiter whose lease ended while it waited fails once its turn comes (etcd 11456)", async (t) => {
  const f = await startRecipes(t);
  const [la, lb] = await grantEach(f.leases, 0xan, 0xbn);
  const a = await lock(f.b, NAME, la, {});
  const b = lock(f.b, NAME, lb, {});
  await waitKeys(f, 2);
  await f.leases.revoke(lb); // b's key is deleted: b no longer holds its place
  await unlock(f.b, a.key, {});
  await assert.rejects(b, { message: RECIPE_ERRORS.SESSION_EXPIRED });
  assert.deepEqual(await f.keys("job/"), []);
});

test("lock: the fencing txn (the key's create revision) refuses a holder whose lease ended", async (t) => {
  const f = await startRecipes(t);
  const [la, lb] = await grantEach(f.leases, 0xan, 0xbn);
  const a = await lock(f.b, NAME, la, {});
  const b = lock(f.b, NAME, lb, {});
  await waitKeys(f, 2);
  // a pauses; its lease expires; b gets the lock. a, still believing it holds the lock,
  // writes through the fencing txn: refused. b's own fenced write applies.
  await f.leases.revoke(la);
  const bHeld = await b;
  const fenced = (key: Uint8Array, rev: bigint, value: string) =>
    f.kv.txn(
      create(TxnRequestSchema, {
        compare: [createRevisionIs(key, rev)],
        success: [
          { request: { case: "requestPut", value: { key: bytes("data"), value: bytes(value) } } },
        ],
      }),
    );
  assert.equal((await fenced(a.key, a.createRevision, "from a")).succeeded, false);
  assert.equal((await fenced(bHeld.key, bHeld.createRevision, "from b")).succeeded, true);
  // Once b released it, a locking again (a new lease) gets a new token; the old one stays
  // refused.
  await unlock(f.b, bHeld.key, {});
  const a2 = await lock(f.b, NAME, await f.leases.grant(0xa2n), {});
  assert.ok(a2.createRevision > bHeld.createRevision);
  assert.equal((await fenced(a.key, a.createRevision, "from a")).succeeded, false);
  assert.equal((await fenced(a2.key, a2.createRevision, "from a2")).succeeded, true);
});

test("lock: lease 0 takes a session lease of 60 s; without a lease service it fails as an unknown lease", async (t) => {
  const none = await startRecipes(t, false);
  await assert.rejects(lock(none.b, NAME, 0n, {}), {
    message: "etcdserver: requested lease not found",
  });
  await assert.rejects(lock(none.b, NAME, 0x77n, {}), (err) => isRequestError(err));
  const f = await startRecipes(t);
  const held = await lock(f.b, NAME, 0n, {});
  assert.notEqual(held.lease, 0n);
  assert.equal(text(held.key), `job/${held.lease.toString(16)}`);
  assert.equal(await f.leases.grantedTtl(held.lease), 60);
});

async function waitKeys(f: { keys(p: string): Promise<string[]> }, n: number): Promise<void> {
  await waitFor(async () => (await f.keys("job/")).length >= n, "the keys");
}
