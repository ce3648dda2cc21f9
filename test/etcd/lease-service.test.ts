/**
 * etcd's Lease service on a single node (LocalEtcdBackend behind the lean transport), with
 * an injected monotonic clock: a lease expires when the clock passes its TTL and not
 * before, keep-alives push it back, and the keep-alive stream carries several leases,
 * answers TTL 0 for a lease that does not exist, and ends when the client ends its side.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import {
  LeaseKeepAliveRequestSchema,
  type LeaseKeepAliveResponse,
  LeaseKeepAliveResponseSchema,
} from "../../src/proto/gen/etcd/api/etcdserverpb/rpc_pb.js";
import { grpcJsMethod } from "../../src/proto/kv-service-definition.js";
import { EtcdGrpcClient } from "../support/etcd-grpc-client.js";
import { startEtcdTestServer } from "../support/etcd-test-server.js";
import { waitFor } from "../support/wait-for.js";

const b = (s: string) => Buffer.from(s);

async function withServer() {
  const clock = { now: 0 };
  const server = await startEtcdTestServer({ lessor: { now: () => clock.now } });
  const client = new EtcdGrpcClient(server.address);
  return {
    clock,
    server,
    client,
    /** Moves the clock to `to` in steps below the Tick cap, letting the Ticks run. */
    async advance(to: number) {
      while (clock.now < to) {
        clock.now = Math.min(to, clock.now + 250);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async stop() {
      client.close();
      await server.stop();
    },
  };
}

/** Sends `ids` on one keep-alive stream, ends it, resolves with the answers and the end. */
function keepAlive(address: string, ids: bigint[]): Promise<LeaseKeepAliveResponse[]> {
  const client = new Client(address, credentials.createInsecure());
  const m = grpcJsMethod(
    "etcdserverpb.Lease",
    "LeaseKeepAlive",
    LeaseKeepAliveRequestSchema,
    LeaseKeepAliveResponseSchema,
    true,
  );
  return new Promise((resolve, reject) => {
    const out: LeaseKeepAliveResponse[] = [];
    const call = client.makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      new Metadata(),
      {},
    );
    call.on("data", (r: LeaseKeepAliveResponse) => out.push(r));
    call.on("error", (err) => {
      client.close();
      reject(err);
    });
    call.on("end", () => {
      client.close();
      resolve(out);
    });
    for (const ID of ids) call.write({ $typeName: "etcdserverpb.LeaseKeepAliveRequest", ID });
    call.end();
  });
}

async function exists(client: EtcdGrpcClient, key: string): Promise<boolean> {
  return (await client.range({ key: b(key) })).kvs.length > 0;
}

test("a lease expires when the primary's clock passes its TTL, not before; keep-alives push it back", async (t) => {
  const s = await withServer();
  t.after(() => s.stop());
  const g = await s.client.leaseGrant({ ID: 0n, TTL: 1n });
  assert.equal(g.TTL, 2n, "raised to etcd's minimum (2 s)");
  await s.client.put({ key: b("x"), value: b("1"), lease: g.ID });
  await s.advance(1900);
  assert.ok(await exists(s.client, "x"), "alive before its TTL");
  const [ka] = await keepAlive(s.server.address, [g.ID]);
  assert.equal(ka?.TTL, 2n);
  await s.advance(3800); // 1.9 s after the keep-alive
  assert.ok(await exists(s.client, "x"), "the keep-alive renewed it");
  const ttl = await s.client.leaseTimeToLive({ ID: g.ID, keys: true });
  assert.ok(ttl.TTL <= 1n, String(ttl.TTL));
  assert.equal(ttl.grantedTTL, 2n);
  assert.deepEqual(
    ttl.keys.map((k) => Buffer.from(k).toString()),
    ["x"],
  );
  await s.advance(6500);
  await waitFor(async () => !(await exists(s.client, "x")), "the key deleted at expiry");
  assert.equal((await s.client.leaseTimeToLive({ ID: g.ID })).TTL, -1n);
  const [late] = await keepAlive(s.server.address, [g.ID]);
  assert.equal(late?.TTL, 0n, "a keep-alive of an expired lease answers TTL 0");
});

test("the keep-alive stream: several leases, TTL 0 for an unknown one, ends with the client's side", async (t) => {
  const s = await withServer();
  t.after(() => s.stop());
  const a = await s.client.leaseGrant({ ID: 10n, TTL: 30n });
  const c = await s.client.leaseGrant({ ID: 11n, TTL: 60n });
  const answers = await keepAlive(s.server.address, [a.ID, 99n, c.ID]);
  assert.deepEqual(
    answers.map((r) => [r.ID, r.TTL]).sort((x, y) => Number(x[0]! - y[0]!)),
    [
      [10n, 30n],
      [11n, 60n],
      [99n, 0n],
    ],
  );
  assert.ok(answers.every((r) => r.header !== undefined && r.header.memberId !== 0n));
  const list = await s.client.leaseLeases();
  assert.deepEqual(
    list.leases.map((l) => l.ID),
    [10n, 11n],
  );
});
