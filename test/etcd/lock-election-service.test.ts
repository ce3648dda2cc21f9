/**
 * v3lockpb.Lock and v3electionpb.Election over gRPC: one scenario (lock, queue, release,
 * cancel, unknown lease, campaign, proclaim, observe, resign, leader, and their errors)
 * run against kv-engine's test server and against Debian's etcd 3.4, whose
 * transcripts must be the same, revisions included; the one known difference (a lease
 * lost while waiting: etcd 3.4 answers the lock as held, 11456) checked on each side. And
 * the services on a 3-member cluster, through a follower (no leases needed: a Proclaim
 * at revision 0 creates its key).
 */
import assert from "node:assert/strict";
import { type TestContext, test } from "node:test";
import type { ServiceError } from "@grpc/grpc-js";
import { RECIPE_ERRORS } from "../../src/etcd/recipes/recipe-backend.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { EtcdLockClient } from "../support/etcd-lock-client.js";
import { requireBinary, startEtcd } from "../support/etcd-process.js";
import { startEtcdTestCluster } from "../support/etcd-test-cluster.js";
import { startEtcdTestServer } from "../support/etcd-test-server.js";
import { waitFor } from "../support/wait-for.js";

const b = (s: string) => Buffer.from(s);
const str = (u: Uint8Array | undefined) => Buffer.from(u ?? []).toString();

interface Target {
  readonly address: string;
  grant(): Promise<bigint>;
  revoke(id: bigint): Promise<void>;
}

/** "ERR <code> <message>" for a failed call. */
function failure(err: unknown): string {
  const e = err as ServiceError;
  return `ERR ${e.code} ${e.details}`;
}

async function outcome(p: Promise<string>): Promise<string> {
  try {
    return await p;
  } catch (err) {
    return failure(err);
  }
}

/** The scenario's transcript: each step and its answer, lease IDs shown by name. */
async function scenario(target: Target): Promise<string[]> {
  const c = new EtcdLockClient(target.address);
  const kv = new EtcdGrpcClient(target.address);
  const names = new Map<string, string>();
  const leases: bigint[] = [];
  for (let i = 1; i <= 4; i++) {
    const id = await target.grant();
    leases.push(id);
    names.set(id.toString(16), `<l${i}>`);
  }
  const [l1, l2, l3] = leases as [bigint, bigint, bigint, bigint];
  const named = (u: Uint8Array | undefined) =>
    str(u).replace(/[0-9a-f]+$/, (hex) => names.get(hex) ?? hex);
  const out: string[] = [];
  const step = async (what: string, p: Promise<string>) =>
    out.push(`${what} -> ${await outcome(p)}`);
  const keys = async (prefix: string) => {
    const end = b(prefix);
    end[end.length - 1]! += 1;
    const r = await kv.range({ key: b(prefix), rangeEnd: end });
    return r.kvs.map((k) => named(k.key)).join(",");
  };
  try {
    await step(
      "leader of none",
      c.leader("e").then(() => "OK"),
    );
    let held: Uint8Array = new Uint8Array();
    await step(
      "lock l1",
      c.lock({ name: b("L"), lease: l1 }).then((r) => {
        held = r.key;
        return `${named(r.key)} @${r.header?.revision}`;
      }),
    );
    await step(
      "lock l1 again",
      c.lock({ name: b("L"), lease: l1 }).then((r) => `${named(r.key)} @${r.header?.revision}`),
    );
    await step(
      "lock unknown lease",
      c.lock({ name: b("L"), lease: 0x1234n }).then(() => "OK"),
    );
    const waiter = outcome(
      c.lock({ name: b("L"), lease: l2 }).then((r) => `${named(r.key)} @${r.header?.revision}`),
    );
    await waitFor(async () => (await keys("L/")).split(",").length === 2, "l2 queued");
    await step(
      "lock l3, deadline 300 ms",
      c.lock({ name: b("L"), lease: l3 }, { deadlineMs: 300 }).then(() => "OK"),
    );
    await waitFor(async () => !(await keys("L/")).includes("<l3>"), "l3's key deleted");
    await step("keys after the cancelled waiter", keys("L/"));
    await step(
      "unlock l1",
      c.unlock(held).then((r) => `@${r.header?.revision}`),
    );
    out.push(`lock l2 (waited) -> ${await waiter}`);
    await step(
      "unlock empty key",
      c.unlock(new Uint8Array()).then(() => "OK"),
    );
    await step(
      "unlock absent key",
      c.unlock("nope").then((r) => `@${r.header?.revision}`),
    );

    const observer = c.observe("e");
    let leader1 = { name: b("e"), key: new Uint8Array() as Uint8Array, rev: 0n, lease: l1 };
    await step(
      "campaign l1",
      c.campaign({ name: b("e"), lease: l1, value: b("a") }).then((r) => {
        leader1 = { ...leader1, key: r.leader?.key ?? leader1.key, rev: r.leader?.rev ?? 0n };
        return `${named(r.leader?.key)} rev ${r.leader?.rev} lease ${named(b(r.leader?.lease.toString(16) ?? ""))} @${r.header?.revision}`;
      }),
    );
    await observer.next(1);
    await step(
      "proclaim a2",
      c.proclaim({ leader: leader1, value: b("a2") }).then((r) => `@${r.header?.revision}`),
    );
    await step(
      "proclaim, wrong rev",
      c.proclaim({ leader: { ...leader1, rev: 1n }, value: b("x") }).then(() => "OK"),
    );
    await step(
      "proclaim without leader",
      c.proclaim({ value: b("x") }).then(() => "OK"),
    );
    await step(
      "resign without leader",
      c.resign({}).then(() => "OK"),
    );
    const second = outcome(
      c
        .campaign({ name: b("e"), lease: l2, value: b("b") })
        .then((r) => `${named(r.leader?.key)} rev ${r.leader?.rev} @${r.header?.revision}`),
    );
    await waitFor(async () => (await keys("e/")).split(",").length === 2, "l2 campaigning");
    await step(
      "leader",
      c.leader("e").then((r) => `${named(r.kv?.key)}=${str(r.kv?.value)}`),
    );
    await step(
      "resign l1",
      c.resign({ leader: leader1 }).then((r) => `@${r.header?.revision}`),
    );
    out.push(`campaign l2 (waited) -> ${await second}`);
    await step(
      "resign l1 again",
      c.resign({ leader: leader1 }).then((r) => `@${r.header?.revision}`),
    );
    await step(
      "leader",
      c.leader("e").then((r) => `${named(r.kv?.key)}=${str(r.kv?.value)}`),
    );
    const seen = await observer.next(3);
    for (const r of seen)
      out.push(`observed ${named(r.kv?.key)}=${str(r.kv?.value)} @${r.header?.revision}`);
    observer.cancel();
    await step(
      "lock lease 0",
      c
        .lock({ name: b("Z") })
        .then((r) => (str(r.key).startsWith("Z/") ? "Z/<granted>" : str(r.key))),
    );
    return out;
  } finally {
    c.close();
    kv.close();
  }
}

/** A lock waiter whose lease is revoked while it waits, once the holder unlocks. */
async function lostWhileWaiting(target: Target): Promise<string> {
  const c = new EtcdLockClient(target.address);
  try {
    const [l1, l2] = [await target.grant(), await target.grant()];
    const held = await c.lock({ name: b("X"), lease: l1 });
    const waiter = outcome(c.lock({ name: b("X"), lease: l2 }).then(() => "OK"));
    await new Promise((r) => setTimeout(r, 200));
    await target.revoke(l2);
    await c.unlock(held.key);
    return await waiter;
  } finally {
    c.close();
  }
}

/** A target at `address`, leases granted and revoked through its Lease service. */
function target(t: TestContext, address: string): Target {
  const c = new EtcdGrpcClient(address);
  t.after(() => c.close());
  return {
    address,
    grant: async () => (await c.leaseGrant({ TTL: 60n })).ID,
    revoke: async (id) => {
      await c.leaseRevoke({ ID: id });
    },
  };
}

async function kvEngine(t: TestContext): Promise<Target> {
  const s = await startEtcdTestServer();
  t.after(() => s.stop());
  return target(t, s.address);
}

async function realEtcd(t: TestContext, binary: string): Promise<Target> {
  const e = await startEtcd(binary);
  t.after(() => e.stop());
  return target(t, e.address);
}

const EXPECTED = [
  "leader of none -> ERR 2 election: no leader",
  "lock l1 -> L/<l1> @2",
  "lock l1 again -> L/<l1> @2",
  "lock unknown lease -> ERR 2 etcdserver: requested lease not found",
  "lock l3, deadline 300 ms -> ERR deadline exceeded",
  "keys after the cancelled waiter -> L/<l1>,L/<l2>",
  "unlock l1 -> @6",
  "lock l2 (waited) -> L/<l2> @6",
  "unlock empty key -> ERR 2 etcdserver: key is not provided",
  "unlock absent key -> @6",
  "campaign l1 -> e/<l1> rev 7 lease <l1> @7",
  "proclaim a2 -> @8",
  "proclaim, wrong rev -> ERR 2 election: not leader",
  'proclaim without leader -> ERR 2 "leader" field must be provided',
  'resign without leader -> ERR 2 "leader" field must be provided',
  "leader -> e/<l1>=a2",
  "resign l1 -> @10",
  "campaign l2 (waited) -> e/<l2> rev 9 @9",
  "resign l1 again -> @10",
  "leader -> e/<l2>=b",
  "observed e/<l1>=a @7",
  "observed e/<l1>=a2 @8",
  "observed e/<l2>=b @10",
  "lock lease 0 -> Z/<granted>",
];

/**
 * The transcript with a passed deadline said one way: grpc-js's own (4 "Deadline exceeded
 * after ...") or, when the server's answer wins the race, etcd's (2 "context deadline
 * exceeded").
 */
function normalized(lines: string[]): string[] {
  return lines.map((l) =>
    l.replace(/ERR (4 Deadline exceeded.*|2 context deadline exceeded)$/, "ERR deadline exceeded"),
  );
}

test("lock and election services: the scenario's answers (kv-engine)", async (t) => {
  const target = await kvEngine(t);
  assert.deepEqual(normalized(await scenario(target)), EXPECTED);
  assert.equal(await lostWhileWaiting(target), `ERR 2 ${RECIPE_ERRORS.SESSION_EXPIRED}`);
});

test("lock and election services: the same answers from etcd 3.4", async (t) => {
  const binary = requireBinary(t, "etcd");
  if (binary === undefined) return;
  const target = await realEtcd(t, binary);
  assert.deepEqual(normalized(await scenario(target)), EXPECTED);
  // etcd 3.4 answers the lock as held though the waiter's key is gone (etcd 11456).
  assert.equal(await lostWhileWaiting(target), "OK");
});

test("lock and election services on a 3-member cluster, through a follower", async (t) => {
  const cluster = await startEtcdTestCluster(3);
  t.after(() => cluster.stop());
  const c = new EtcdLockClient(cluster.followerAddress());
  const other = new EtcdLockClient(cluster.leaderAddress());
  t.after(() => {
    c.close();
    other.close();
  });
  await assert.rejects(c.leader("e"), { details: RECIPE_ERRORS.NO_LEADER });
  // Without leases, a Proclaim at revision 0 of an absent key creates it (as in etcd).
  const observer = other.observe("e");
  const leader = { name: b("e"), key: b("e/1"), rev: 0n, lease: 0n };
  await c.proclaim({ leader, value: b("v1") });
  const now = await c.leader("e");
  assert.equal(str(now.kv?.value), "v1");
  const rev = now.kv?.createRevision ?? 0n;
  await c.proclaim({ leader: { ...leader, rev }, value: b("v2") });
  await assert.rejects(c.proclaim({ leader, value: b("v3") }), {
    details: RECIPE_ERRORS.NOT_LEADER,
  });
  const seen = await observer.next(2);
  assert.deepEqual(
    seen.map((r) => str(r.kv?.value)),
    ["v1", "v2"],
  );
  await c.resign({ leader: { ...leader, rev } });
  await assert.rejects(other.leader("e"), { details: RECIPE_ERRORS.NO_LEADER });
  await assert.rejects(c.lock({ name: b("L"), lease: 5n }), {
    details: "etcdserver: requested lease not found",
  });
  observer.cancel();
});

test("lock and election services: hasleader without a leader fails UNAVAILABLE before the recipe", async (t) => {
  const s = await startEtcdTestServer();
  t.after(() => s.stop());
  s.backend.hasLeader = () => false;
  const c = new EtcdLockClient(s.address);
  t.after(() => c.close());
  const required = { metadata: { hasleader: "true" } };
  const noLeader = { code: 14, details: "etcdserver: no leader" };
  await assert.rejects(c.lock({ name: b("L"), lease: 1n }, required), noLeader);
  await assert.rejects(c.unlock("L/1", required), noLeader);
  await assert.rejects(c.leader("e", required), noLeader);
  // Without the metadata the call runs (and finds no leader of the election).
  await assert.rejects(c.leader("e"), { code: 2, details: RECIPE_ERRORS.NO_LEADER });
});
