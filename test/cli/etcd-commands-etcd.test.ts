/**
 * The read-only commands of issue 31, point 3, against etcd 3.4 itself (a child process,
 * test/support/etcd-process.ts): the CLI speaks etcd's API, so `get --rev`, `watch`,
 * `lease ttl|list`, `txn`, `endpoint status|health|hashkv`, `alarm list` and `cluster add
 * --learner` / `promote` work with etcd too. Skipped when etcd is not installed (failed in CI).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { EtcdClient } from "../../src/client/index.js";
import { CliChild } from "../support/cli-child.js";
import { requireBinary, startEtcd } from "../support/etcd-process.js";
import { runCli } from "../support/server-process.js";

test("get --rev, watch, lease ttl/list, txn, endpoint and alarm against etcd 3.4", async (t) => {
  const binary = requireBinary(t, "etcd");
  if (binary === undefined) return;
  const server = await startEtcd(binary);
  const etcd = new EtcdClient(server.address, { timeoutMs: 5000 });
  t.after(async () => {
    await CliChild.stopAll();
    etcd.close();
    await server.stop();
  });
  const addr = ["--addr", server.address];
  const ok = async (args: string[]) => {
    const r = await runCli([...args, ...addr]);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };

  const first = (await etcd.put("k", "one")).header.revision;
  await etcd.put("k", "two");
  assert.equal(await ok(["get", "k", "--rev", String(first)]), "one\n");
  const j = JSON.parse(await ok(["get", "k", "--rev", String(first), "--json"])) as Record<
    string,
    unknown
  >;
  assert.equal(j.modRevision, first);
  assert.equal(j.version, 1);

  const watch = new CliChild(["watch", "k", "--rev", String(first), "--json", ...addr]);
  await etcd.delete("k");
  const events = (await watch.waitLines(3)).map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    events.map((e) => [e.revision, e.type, e.value]),
    [
      [first, "put", "one"],
      [first + 1, "put", "two"],
      [first + 2, "delete", undefined],
    ],
  );
  assert.equal(await watch.stop("SIGINT"), 0, watch.stderr);

  const lease = await etcd.lease(30);
  await etcd.put("lk", "v", { lease });
  const id = lease.id.toString(16);
  const ttl = JSON.parse(await ok(["lease", "ttl", id, "--keys", "--json"])) as Record<
    string,
    unknown
  >;
  assert.equal(ttl.grantedTtl, 30);
  assert.deepEqual(ttl.keys, [{ key: "lk" }]);
  assert.ok(
    (JSON.parse(await ok(["lease", "list", "--json"])) as { leases: string[] }).leases.includes(id),
  );
  await lease.revoke();

  assert.equal(
    await ok(["txn", "--if", "version(lk) = 0", "--then", "get lk", "--else", "put lk no"]),
    "then\nget (none)\n",
  );

  const s = JSON.parse(await ok(["endpoint", "status", "--json"])) as Record<string, unknown>;
  assert.match(s.version as string, /^3\.4\./);
  assert.equal(s.isLeader, true);
  assert.match(await ok(["endpoint", "health"]), /is healthy/);
  const h = JSON.parse(await ok(["endpoint", "hashkv", "--json"])) as Record<string, unknown>;
  assert.equal(typeof h.hash, "number");
  assert.deepEqual(JSON.parse(await ok(["alarm", "list", "--json"])), { alarms: [] });

  // Membership over etcd's Cluster API: a learner added, its promotion refused (not started).
  const added = JSON.parse(
    await ok(["cluster", "add", "l1", "--peer-address", "127.0.0.1:1", "--learner", "--json"]),
  ) as { member: { id: string; learner: boolean } };
  assert.equal(added.member.learner, true);
  const promote = await runCli(["cluster", "promote", added.member.id, ...addr]);
  assert.equal(promote.code, 1);
  assert.match(
    promote.stderr,
    /^kv-engine cluster: .*the learner has not caught up with the leader yet/,
  );
});
