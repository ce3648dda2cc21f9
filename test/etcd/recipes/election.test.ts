/**
 * The election recipe (src/etcd/recipes/election.ts) on a single node's etcd backend
 * with stub leases: campaign, leader, proclaim, resign and observe in sequence, the
 * errors of a stale leadership and of an election without a leader, a cancelled
 * campaign resigning, a campaign whose lease ended while it waited.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isKvError } from "../../../src/errors.js";
import {
  campaign,
  type Leadership,
  leader,
  observe,
  proclaim,
  resign,
} from "../../../src/etcd/recipes/election.js";
import { RECIPE_ERRORS, type RecipeBackend } from "../../../src/etcd/recipes/recipe-backend.js";
import {
  bytes,
  grantEach,
  settlesWithin,
  startRecipes,
  text,
} from "../../support/etcd-recipe-fixture.js";
import { waitFor } from "../../support/wait-for.js";

const NAME = bytes("svc");

test("election: leader, proclaim, resign and observe in sequence", async (t) => {
  const f = await startRecipes(t);
  const [la, lb] = await grantEach(f.leases, 0xan, 0xbn);
  await assert.rejects(leader(f.b, NAME, {}), { message: RECIPE_ERRORS.NO_LEADER });

  // An observer started before anyone campaigns gets the first leader.
  const { seen, stop, observing } = observer(f.b);

  const a = await campaign(f.b, NAME, la, bytes("a1"), {});
  assert.deepEqual(
    { name: text(a.leader.name), key: text(a.leader.key), lease: a.leader.lease },
    { name: "svc", key: "svc/a", lease: la },
  );
  assert.equal(a.leader.rev, a.header?.revision);
  const b = campaign(f.b, NAME, lb, bytes("b1"), {});
  await waitFor(async () => (await f.keys("svc/")).length === 2, "the keys");
  assert.equal(await settlesWithin(b, 100), false, "b waits behind a");

  const now = await leader(f.b, NAME, {});
  assert.equal(text(now.kv.value), "a1");
  await proclaim(f.b, a.leader, bytes("a2"), {});
  assert.equal(text((await leader(f.b, NAME, {})).kv.value), "a2");

  await resign(f.b, a.leader, {});
  const bWon = await b;
  assert.equal(text(bWon.leader.key), "svc/b");
  assert.equal(text((await leader(f.b, NAME, {})).kv.value), "b1");

  // a's leadership is stale: proclaiming fails, resigning again changes nothing.
  await assert.rejects(proclaim(f.b, a.leader, bytes("a3"), {}), {
    message: RECIPE_ERRORS.NOT_LEADER,
  });
  const before = await f.keys("svc/");
  await resign(f.b, a.leader, {});
  assert.deepEqual(await f.keys("svc/"), before);

  await proclaim(f.b, bWon.leader, bytes("b2"), {});
  await waitFor(async () => seen.length >= 4, "four observed leaders");
  const aRev = a.leader.rev;
  assert.deepEqual(
    seen.map((s) => s.replace(/@\d+$/, "")),
    ["svc/a=a1", "svc/a=a2", "svc/b=b1", "svc/b=b2"],
  );
  assert.equal(seen[0], `svc/a=a1@${aRev}`);
  stop.abort();
  await assert.rejects(observing, (err) => isKvError(err, "ABORTED"));
});

/** Observes election NAME: "key=value@header revision" for each leader or value seen. */
function observer(b: RecipeBackend) {
  const seen: string[] = [];
  const stop = new AbortController();
  const observing = observe(
    b,
    NAME,
    async (h, kv) => {
      seen.push(`${text(kv.key)}=${text(kv.value)}@${h.revision}`);
    },
    { signal: stop.signal },
  );
  observing.catch(() => {});
  return { seen, stop, observing };
}

test("election: an observer started under a leader gets it at once", async (t) => {
  const f = await startRecipes(t);
  const a = await campaign(f.b, NAME, await f.leases.grant(0xan), bytes("v"), {});
  const { seen, stop } = observer(f.b);
  await waitFor(async () => seen.length === 1, "the observed leader");
  assert.deepEqual(seen, [`svc/a=v@${a.leader.rev}`]);
  stop.abort();
});

test("election: campaigning again with the same lease proclaims the new value", async (t) => {
  const f = await startRecipes(t);
  const la = await f.leases.grant(0xan);
  const first = await campaign(f.b, NAME, la, bytes("x"), {});
  const again = await campaign(f.b, NAME, la, bytes("y"), {});
  assert.equal(again.leader.rev, first.leader.rev);
  assert.equal(text((await leader(f.b, NAME, {})).kv.value), "y");
});

test("election: a cancelled campaign resigns; one whose lease ended while waiting is not leader", async (t) => {
  const f = await startRecipes(t);
  const [la, lb, lc] = await grantEach(f.leases, 0xan, 0xbn, 0xcn);
  const a = await campaign(f.b, NAME, la, bytes("a"), {});
  const cancel = new AbortController();
  const b = campaign(f.b, NAME, lb, bytes("b"), { signal: cancel.signal });
  await waitFor(async () => (await f.keys("svc/")).length === 2, "the keys");
  cancel.abort();
  await assert.rejects(b, (err) => isKvError(err, "ABORTED"));
  await waitFor(async () => (await f.keys("svc/")).length === 1, "the keys");

  const c = campaign(f.b, NAME, lc, bytes("c"), {});
  await waitFor(async () => (await f.keys("svc/")).length === 2, "the keys");
  await f.leases.revoke(lc);
  await resign(f.b, a.leader, {});
  await assert.rejects(c, { message: RECIPE_ERRORS.NOT_LEADER });
  await assert.rejects(leader(f.b, NAME, {}), { message: RECIPE_ERRORS.NO_LEADER });
});

test("election: a proclaim with another key's revision is refused", async (t) => {
  const f = await startRecipes(t);
  const a = await campaign(f.b, NAME, await f.leases.grant(0xan), bytes("a"), {});
  const wrong: Leadership = { ...a.leader, rev: a.leader.rev + 1n };
  await assert.rejects(proclaim(f.b, wrong, bytes("z"), {}), { message: RECIPE_ERRORS.NOT_LEADER });
  assert.equal(text((await leader(f.b, NAME, {})).kv.value), "a");
});
