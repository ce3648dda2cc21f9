/**
 * The cluster-specific commands of issue 31, point 3, against a 3-member kv-engine
 * cluster (`kv-engine serve` processes): `endpoint status|hashkv --cluster` over every
 * member, and `cluster add --learner` / `cluster promote` (a learner that stays one until
 * promoted, refused while it has not caught up). The steps share the cluster, in order.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { EtcdClient } from "../../src/client/index.js";
import { joinArgs } from "../support/cluster-membership.js";
import { freePort, ProcessCluster } from "../support/cluster-processes.js";
import { runCli } from "../support/server-process.js";
import { waitFor } from "../support/wait-for.js";

const NAMES = ["n1", "n2", "n3"];
let cluster: ProcessCluster;
let all: string;

async function jsonLines(args: string[]): Promise<Record<string, unknown>[]> {
  const r = await runCli([...args, "--json"]);
  assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}${r.stdout}`);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

before(async () => {
  cluster = await ProcessCluster.start(NAMES);
  all = NAMES.map((n) => cluster.member(n).clientAddress).join(",");
});

after(async () => {
  await cluster?.stop();
});

test("endpoint status --cluster reports every member, one leader; hashkv agrees", async () => {
  const first = cluster.member("n1").clientAddress;
  let s: Record<string, unknown>[] = [];
  await waitFor(async () => {
    const r = await runCli(["endpoint", "status", "--cluster", "--addr", first, "--json"]);
    if (r.code !== 0) return false;
    s = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return s.length === 3 && s.filter((x) => x.isLeader === true).length === 1;
  }, "every member reporting, one leader");
  assert.deepEqual(
    s.map((x) => x.endpoint).sort(),
    NAMES.map((n) => cluster.member(n).clientAddress).sort(),
  );
  assert.deepEqual(
    s.map((x) => x.memberId).sort(),
    NAMES.map((n) => cluster.member(n).memberId).sort(),
  );
  assert.equal(new Set(s.map((x) => x.leader)).size, 1, "one leader for all");
  assert.equal(new Set(s.map((x) => x.clusterId)).size, 1);
  const text = await runCli(["endpoint", "status", "--addr", all]);
  assert.equal(text.code, 0, text.stderr);
  assert.equal(text.stdout.trim().split("\n").length, 2 + 3, "header, rule, 3 rows");

  const etcd = new EtcdClient(all, { timeoutMs: 5000 });
  const rev = (await etcd.put("h", "1")).header.revision;
  etcd.close();
  let hashes: Record<string, unknown>[] = [];
  await waitFor(async () => {
    const r = await runCli(["endpoint", "hashkv", "--rev", String(rev), "--addr", all, "--json"]);
    if (r.code !== 0) return false; // a member that has not applied `rev` yet
    hashes = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return true;
  }, "every member applied the put");
  assert.equal(hashes.length, 3);
  assert.equal(new Set(hashes.map((h) => h.hash)).size, 1, JSON.stringify(hashes));
});

test("cluster add --learner: a learner until cluster promote, refused while it has not caught up", async () => {
  const peerPort = await freePort();
  const clientPort = await freePort();
  const [added] = await jsonLines([
    "cluster",
    "add",
    "n4",
    "--peer-address",
    `127.0.0.1:${peerPort}`,
    "--learner",
    "--addr",
    all,
  ]);
  const member = added!.member as { id: string; learner: boolean };
  assert.equal(member.learner, true);
  assert.equal(added!.initialClusterState, "existing");
  assert.match(added!.initialCluster as string, new RegExp(`n4=127\\.0\\.0\\.1:${peerPort}`));
  // Not started: promoting it is refused, in our words.
  const early = await runCli(["cluster", "promote", member.id, "--addr", all]);
  assert.equal(early.code, 1);
  assert.match(
    early.stderr,
    /has not caught up with the leader yet \(or has not started\): promote it later/,
  );
  assert.doesNotMatch(early.stderr, /etcdserver/);
  // A second learner is refused while it is one.
  const second = await runCli([
    "cluster",
    "add",
    "n5",
    "--peer-address",
    `127.0.0.1:${await freePort()}`,
    "--learner",
    "--addr",
    all,
  ]);
  assert.equal(second.code, 1);
  assert.match(second.stderr, /has a learner already/);

  const members = (added!.initialCluster as string).split(",").map((x) => {
    const [name, peerAddress] = x.split("=") as [string, string];
    return { name, peerAddress };
  });
  await cluster.startMember(
    "n4",
    `127.0.0.1:${clientPort}`,
    `127.0.0.1:${peerPort}`,
    joinArgs("n4", clientPort, members, []),
  );
  // It catches up and stays a learner until promoted; promote is retried until it is in sync.
  let promoted: Record<string, unknown> | undefined;
  await waitFor(
    async () => {
      const r = await runCli(["cluster", "promote", "n4", "--addr", all, "--json"]);
      if (r.code === 0) promoted = JSON.parse(r.stdout) as Record<string, unknown>;
      return r.code === 0;
    },
    "n4 promoted",
    30_000,
  );
  assert.equal(promoted!.promoted, member.id);
  assert.equal(promoted!.voters, 4);
  const list = await jsonLines(["cluster", "list", "--addr", all]);
  assert.equal(list.find((m) => m.name === "n4")?.learner, false);
  const again = await runCli(["cluster", "promote", "n4", "--addr", all]);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /that member is a voter already/);
});
