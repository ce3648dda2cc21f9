/**
 * ClusterNode in process (one member, on an in-memory file system): the cluster service
 * sits behind the bearer token like the KV service, while health stays open; a
 * single-member cluster elects itself and serves KV calls, CAS and Status; the admin
 * service acts on the member (on the real file system: checkpoints are checked by path).
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { Client, credentials, type ServiceError } from "@grpc/grpc-js";
import { AdminClient, isKvClientError, KvClient, status } from "../../src/client/index.js";
import { ClusterNode } from "../../src/cluster/cluster-node.js";
import { open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
} from "../../src/proto/gen/grpc/health/v1/health_pb.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { freePort } from "../support/cluster-processes.js";
import { waitFor } from "../support/wait-for.js";

const TOKEN = "s3cret-token";

/** The health status of `service` at `address`, asked without a token. */
function health(address: string, service: string): Promise<string> {
  const client = new Client(address, credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (r: { service: string }) =>
        Buffer.from(
          toBinary(HealthCheckRequestSchema, {
            $typeName: "grpc.health.v1.HealthCheckRequest",
            service: r.service,
          }),
        ),
      (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
      { service },
      { deadline: Date.now() + 2000 },
      (err: ServiceError | null, res) => {
        client.close();
        if (err !== null || res === undefined) resolve(`error: ${err?.details ?? "none"}`);
        else resolve(["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"][res.status] ?? "?");
      },
    );
  });
}

test("the cluster service is behind the token, health is open; one member leads itself", async (t) => {
  const [port, peerPort] = [await freePort(), await freePort()];
  const node = await ClusterNode.start({
    dataDir: "/member",
    fs: new MemoryFileSystem(),
    name: "n1",
    initialCluster: `n1=127.0.0.1:${peerPort}`,
    server: { host: "127.0.0.1", port, authToken: TOKEN },
    tickMs: 20,
    electionTicks: 5,
    seed: 7,
  });
  t.after(() => node.stop(0));
  const address = `127.0.0.1:${port}`;
  await waitFor(async () => (await health(address, "")) === "SERVING", "n1 SERVING");
  assert.equal(await health(address, "kv.v1.ClusterService"), "SERVING");

  const anonymous = new KvClient(address, { timeoutMs: 3000 });
  t.after(() => anonymous.close());
  for (const call of [
    () => anonymous.memberList(),
    () => anonymous.status(),
    () => anonymous.transferLeadership(0),
    () => anonymous.memberAdd({ name: "n2", peerAddress: "127.0.0.1:1" }),
    () => anonymous.get("k"),
  ]) {
    await assert.rejects(call(), (err) => isKvClientError(err, status.UNAUTHENTICATED));
  }
  const wrong = new KvClient(address, { timeoutMs: 3000, authToken: "nope" });
  t.after(() => wrong.close());
  await assert.rejects(wrong.memberList(), (err) => isKvClientError(err, status.UNAUTHENTICATED));

  const client = new KvClient(address, { timeoutMs: 5000, authToken: TOKEN });
  t.after(() => client.close());
  // The member publishes its client address through the log once it knows a leader (the
  // entry may apply a tick after health turned SERVING).
  await waitFor(
    async () => (await client.memberList()).members[0]?.clientAddress === address,
    "n1's client address published",
  );
  const list = await client.memberList();
  assert.equal(list.members.length, 1, "the refused memberAdd changed nothing");
  assert.equal(list.members[0]?.name, "n1");
  assert.equal(list.leaderId, node.store.memberId);
  assert.equal(list.members[0]?.clientAddress, address);
  await client.put("k", "v1");
  assert.equal((await client.get("k"))?.toString(), "v1");
  const cas = await client.compareAndSwap("k", "v1", "v2");
  assert.deepEqual([cas.applied, cas.current?.toString()], [true, "v2"]);
  const s = await client.status();
  assert.equal(s.role, "leader");
  assert.ok(s.appliedIndex > 0 && s.appliedIndex <= s.commitIndex, JSON.stringify(s));
});

test("the admin service acts on the member it is sent to: flush, stats, compactRange over user keys, a checkpoint that opens as a plain store", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "kv-member-admin-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const backups = join(root, "backups");
  mkdirSync(backups);
  const [port, peerPort] = [await freePort(), await freePort()];
  const node = await ClusterNode.start({
    dataDir: join(root, "member"),
    name: "n1",
    initialCluster: `n1=127.0.0.1:${peerPort}`,
    server: { host: "127.0.0.1", port, authToken: TOKEN, backupDir: backups },
    tickMs: 20,
    electionTicks: 5,
    seed: 7,
  });
  t.after(() => node.stop(0));
  const address = `127.0.0.1:${port}`;
  const client = new KvClient(address, { timeoutMs: 5000, authToken: TOKEN });
  t.after(() => client.close());
  await waitFor(async () => (await health(address, "")) === "SERVING", "n1 SERVING");
  for (let i = 0; i < 200; i++) await client.put(`k${String(i).padStart(3, "0")}`, `v${i}`);
  for (let i = 0; i < 100; i++) await client.delete(`k${String(i).padStart(3, "0")}`);

  const admin = new AdminClient(address, { timeoutMs: 10_000, authToken: TOKEN });
  t.after(() => admin.close());
  await admin.flush();
  const progress = [];
  for await (const p of admin.compactRange()) progress.push(p);
  assert.ok(progress.length > 0, "compactRange reports progress");
  const stats = await admin.stats();
  assert.ok(typeof stats === "object" && stats !== null);

  const made = await admin.checkpoint("b1");
  assert.equal(made.path, join(backups, "b1"));
  await assert.rejects(admin.checkpoint("b1"), (err) =>
    isKvClientError(err, status.ALREADY_EXISTS),
  );
  // The checkpoint is a single-node store with the member's revisions and no internal
  // keys of the member (no applied index, no membership).
  const copy = await open(made.path);
  t.after(() => copy.close());
  assert.equal(await copy.get(Buffer.from("\0applied")), undefined);
  assert.equal(await copy.get(Buffer.from("\0members")), undefined);
  const mvcc = await MvccStore.open(copy);
  t.after(() => mvcc.close());
  const scan = mvcc.latestScan();
  const rows = await scan.nextBatch(1000);
  assert.equal(rows.length, 100);
  assert.equal(rows[0]?.key.toString(), "k100");
  assert.equal(Buffer.from(rows[0]!.value).toString(), "v100");
  assert.equal(rows.at(-1)?.key.toString(), "k199");
  // k100 was put at revision 102 (the store starts at 1; 100 puts before it), after the
  // deletes of k000..k099 (revisions 202..301) the store is at 301.
  assert.deepEqual([rows[0]?.createRevision, rows[0]?.version, mvcc.revision], [102, 1, 301]);
});
