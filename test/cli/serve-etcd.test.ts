/**
 * `kv-engine serve` on a single node (a real child process): kv.v1 and etcd's KV API over
 * the same keys and revisions, which survive a restart; a store written before revisions
 * keeps serving kv.v1, refuses etcd's API naming `kv-engine upgrade`, and the upgraded
 * copy serves both; --auto-compaction-retention compacts by itself.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { status } from "@grpc/grpc-js";
import { KvClient } from "../../src/client/index.js";
import { open } from "../../src/index.js";
import { EtcdGrpcClient, isServiceError } from "../support/etcd-grpc-client.js";
import { runCli, startServer } from "../support/server-process.js";
import { waitFor } from "../support/wait-for.js";

const b = (s: string) => Buffer.from(s);

function tempDir(t: { after(fn: () => void): void }): string {
  const root = mkdtempSync(join(tmpdir(), "kv-serve-etcd-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

test("a new single-node store serves kv.v1 and etcd's API over the same keys and revisions, across a restart", async (t) => {
  const dir = join(tempDir(t), "db");
  let server = await startServer(dir);
  t.after(() => server.stop());
  let kv = new KvClient(server.address, { timeoutMs: 5000 });
  let etcd = new EtcdGrpcClient(server.address);
  await kv.put("a", "1");
  const put = await etcd.put({ key: b("b"), value: b("2") });
  assert.equal(put.header?.revision, 3n, "a fresh store is at 1; kv.v1's put took 2");
  await kv.put("a", "3");
  assert.equal((await kv.get("b"))?.toString(), "2", "kv.v1 reads etcd's put");
  const all = await etcd.range({ key: b("a"), rangeEnd: b("c") });
  assert.deepEqual(
    all.kvs.map((x) => [
      Buffer.from(x.key).toString(),
      Buffer.from(x.value).toString(),
      x.createRevision,
      x.modRevision,
      x.version,
    ]),
    [
      ["a", "3", 2n, 4n, 2n],
      ["b", "2", 3n, 3n, 1n],
    ],
  );
  const old = await etcd.range({ key: b("a"), revision: 2n });
  assert.equal(Buffer.from(old.kvs[0]!.value).toString(), "1", "a read at an old revision");
  kv.close();
  etcd.close();
  await server.stop();

  server = await startServer(dir);
  kv = new KvClient(server.address, { timeoutMs: 5000 });
  etcd = new EtcdGrpcClient(server.address);
  t.after(() => {
    kv.close();
    etcd.close();
  });
  const again = await etcd.range({ key: b("a") });
  assert.deepEqual([again.header?.revision, again.kvs[0]?.modRevision], [4n, 4n]);
  await kv.delete("a");
  assert.equal((await etcd.range({ key: b("a") })).kvs.length, 0);
  assert.equal((await etcd.range({ key: b("a"), revision: 4n })).kvs.length, 1);
});

test("a store written before revisions serves kv.v1, refuses etcd's API, and its upgraded copy serves both", async (t) => {
  const root = tempDir(t);
  const dir = join(root, "old");
  const plain = await open(dir);
  await plain.put("k1", "v1");
  await plain.put("k2", "v2");
  await plain.close();

  const server = await startServer(dir);
  t.after(() => server.stop());
  const kv = new KvClient(server.address, { timeoutMs: 5000 });
  const etcd = new EtcdGrpcClient(server.address);
  t.after(() => {
    kv.close();
    etcd.close();
  });
  assert.equal((await kv.get("k1"))?.toString(), "v1");
  await assert.rejects(etcd.range({ key: b("k1") }), (err) => {
    assert.ok(isServiceError(err));
    assert.equal(err.code, status.FAILED_PRECONDITION);
    assert.match(err.details, /before kv-engine kept revisions.*kv-engine upgrade --data-dir/);
    return true;
  });
  await kv.put("k3", "v3");
  await server.stop();

  const to = join(root, "new");
  const up = await runCli(["upgrade", "--data-dir", dir, "--to", to]);
  assert.equal(up.code, 0, up.stderr);
  assert.match(up.stdout, /3 keys at revision 1/);
  const again = await runCli(["upgrade", "--data-dir", dir, "--to", to]);
  assert.equal(again.code, 1, "the target exists");
  assert.match(again.stderr, /exists/);

  const upgraded = await startServer(to);
  t.after(() => upgraded.stop());
  const e2 = new EtcdGrpcClient(upgraded.address);
  t.after(() => e2.close());
  const r = await e2.range({ key: b("k"), rangeEnd: b("l") });
  assert.deepEqual(
    r.kvs.map((x) => [Buffer.from(x.key).toString(), x.createRevision, x.modRevision, x.version]),
    [
      ["k1", 1n, 1n, 1n],
      ["k2", 1n, 1n, 1n],
      ["k3", 1n, 1n, 1n],
    ],
  );
  assert.equal((await e2.put({ key: b("k1"), value: b("x") })).header?.revision, 2n);
  await upgraded.stop();
  const refused = await runCli(["upgrade", "--data-dir", to, "--to", join(root, "again")]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /has revisions already/);
});

test("--auto-compaction-retention compacts the history by itself", async (t) => {
  const dir = join(tempDir(t), "db");
  const server = await startServer(dir, ["--auto-compaction-retention", "1s"]);
  t.after(() => server.stop());
  const etcd = new EtcdGrpcClient(server.address);
  t.after(() => etcd.close());
  for (let i = 0; i < 5; i++) await etcd.put({ key: b("k"), value: b(`v${i}`) });
  await waitFor(
    async () => {
      try {
        await etcd.range({ key: b("k"), revision: 2n });
        return false;
      } catch (err) {
        return isServiceError(err) && /has been compacted/.test(err.details);
      }
    },
    "a read at revision 2 compacted",
    10_000,
  );
  const bad = await runCli(["serve", "--data-dir", dir, "--auto-compaction-mode", "hourly"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--auto-compaction-mode "hourly": expected "periodic" or "revision"/);
});
