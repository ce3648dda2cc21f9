/**
 * Debian's etcdctl (etcd 3.4's), unchanged, against `kv-engine serve` processes (a single
 * node and a 3-member cluster): member list/add (--learner)/promote/remove, endpoint
 * status/health/hashkv (-w json and table), alarm list/disarm, defrag, move-leader,
 * snapshot save restored with `kv-engine restore` (a single node) and `serve
 * --initial-snapshot` (a new cluster); HashKV equal on every member after a workload; the
 * space quota (--quota-backend-bytes) refusing puts with etcd's error until disarm.
 * Skipped when etcdctl is not on PATH, except in CI (test/support/etcd-process.ts).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ProcessCluster } from "../support/cluster-processes.js";
import { requireBinary } from "../support/etcd-process.js";
import { runCli, type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function etcdctl(binary: string, endpoints: readonly string[], args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      binary,
      ["--endpoints", endpoints.join(","), "--command-timeout", "20s", ...args],
      { env: { ...process.env, ETCDCTL_API: "3" }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function ok(binary: string, endpoints: readonly string[], args: string[]): Promise<string> {
  const r = await etcdctl(binary, endpoints, args);
  assert.equal(r.code, 0, `etcdctl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** etcdctl's JSON output: IDs as JSON numbers that do not fit a double, read as text. */
function json<T>(text: string): T {
  return JSON.parse(text.replace(/:\s*(\d{16,})/g, ':"$1"')) as T;
}

interface MemberJson {
  ID: string | number;
  name?: string;
  peerURLs?: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

interface StatusJson {
  Endpoint: string;
  Status: {
    header: { member_id: string | number };
    version: string;
    dbSize: number;
    leader: string | number;
    raftIndex: number;
    raftTerm: number;
    raftAppliedIndex?: number;
    errors?: string[];
  };
}

interface HashJson {
  Endpoint: string;
  HashKV: { header: { revision: number }; hash: number; compact_revision?: number };
}

const hex = (id: string | number) => BigInt(id).toString(16);

describe("etcdctl against a single node", () => {
  let dir: ReturnType<typeof tempDir>;
  let server: ServerProcess;
  before(async () => {
    dir = tempDir("kv-etcdctl-maint-");
    server = await startServer(join(dir.path, "data"));
  });
  after(async () => {
    await server.stop();
    dir.remove();
  });

  test("member list, endpoint status/health/hashkv, alarm list, defrag, move-leader", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    const e = [server.address];
    await ok(bin, e, ["put", "k", "v"]);
    const list = json<{ members: MemberJson[] }>(
      await ok(bin, e, ["member", "list", "-w", "json"]),
    );
    assert.equal(list.members.length, 1);
    assert.deepEqual(list.members[0]!.clientURLs, [`http://${server.address}`]);
    assert.equal(list.members[0]!.name, "default");
    const status = json<StatusJson[]>(await ok(bin, e, ["endpoint", "status", "-w", "json"]));
    assert.equal(status[0]!.Status.version, "3.4.0");
    assert.ok(status[0]!.Status.dbSize > 0);
    assert.match(await ok(bin, e, ["endpoint", "status", "-w", "table"]), /\|\s+true\s+\|/);
    const health = await etcdctl(bin, e, ["endpoint", "health"]);
    assert.equal(health.code, 0);
    assert.match(health.stderr + health.stdout, /is healthy/);
    const h1 = json<HashJson[]>(await ok(bin, e, ["endpoint", "hashkv", "-w", "json"]));
    await ok(bin, e, ["put", "k", "v2"]);
    const h2 = json<HashJson[]>(await ok(bin, e, ["endpoint", "hashkv", "-w", "json"]));
    assert.notEqual(h1[0]!.HashKV.hash, h2[0]!.HashKV.hash);
    assert.equal(await ok(bin, e, ["alarm", "list"]), "");
    assert.match(await ok(bin, e, ["defrag"]), /Finished defragmenting/);
    const moved = await etcdctl(bin, e, ["move-leader", "5"]);
    assert.notEqual(moved.code, 0);
    assert.match(moved.stderr, /bad leader transferee/);
    const added = await etcdctl(bin, e, [
      "member",
      "add",
      "x",
      "--peer-urls",
      "http://127.0.0.1:1",
    ]);
    assert.notEqual(added.code, 0);
    assert.match(added.stderr, /single node/);
  });

  test("snapshot save, then kv-engine restore serves the keys", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    const e = [server.address];
    for (let i = 0; i < 20; i++) await ok(bin, e, ["put", `snap/${i}`, `v${i}`]);
    // Some 2 MB more, so that the stream runs through many window updates: etcdctl (grpc-go)
    // sends a BDP PING with each, which the server must not count as abuse while it sends.
    const big = "b".repeat(100_000);
    for (let i = 0; i < 20; i++) await ok(bin, e, ["put", `big/${i}`, big]);
    const file = join(dir.path, "snap.db");
    assert.match((await etcdctl(bin, e, ["snapshot", "save", file])).stdout, /Snapshot saved/);
    const restored = join(dir.path, "restored");
    const r = await runCli(["restore", "--snapshot", file, "--data-dir", restored]);
    assert.equal(r.code, 0, r.stderr);
    // Not over an existing directory; not from a file that is not a snapshot.
    assert.notEqual(
      (await runCli(["restore", "--snapshot", file, "--data-dir", restored])).code,
      0,
    );
    const bad = await runCli([
      "restore",
      "--snapshot",
      join(dir.path, "data", "CURRENT"),
      "--data-dir",
      join(dir.path, "x"),
    ]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /not a kv-engine snapshot/);
    const copy = await startServer(restored);
    try {
      const got = json<{ kvs: { key: string; value: string }[] }>(
        await ok(bin, [copy.address], ["get", "snap/", "--prefix", "-w", "json"]),
      );
      assert.equal(got.kvs.length, 20);
      assert.equal(Buffer.from(got.kvs[0]!.value, "base64").toString(), "v0");
    } finally {
      await copy.stop();
    }
  });
});

describe("etcdctl and the space quota", () => {
  test("puts refused with etcd's error past --quota-backend-bytes; disarm after freeing space", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    const dir = tempDir("kv-etcdctl-quota-");
    const server = await startServer(join(dir.path, "data"), ["--quota-backend-bytes", "100000"]);
    try {
      const e = [server.address];
      const value = "x".repeat(10_000);
      let refused: Run | undefined;
      for (let i = 0; i < 40 && refused === undefined; i++) {
        const r = await etcdctl(bin, e, ["put", `q/${i}`, value]);
        if (r.code !== 0) refused = r;
      }
      assert.ok(refused !== undefined, "never refused");
      assert.match(refused.stderr, /etcdserver: mvcc: database space exceeded/);
      assert.equal((await ok(bin, e, ["alarm", "list"])).trim(), "alarm:NOSPACE");
      assert.match(await ok(bin, e, ["endpoint", "status", "-w", "table"]), /alarm:NOSPACE/);
      assert.match(await ok(bin, e, ["get", "q/0", "--print-value-only"]), /^x+/);
      const rev = json<{ header: { revision: number } }>(
        await ok(bin, e, ["del", "q/", "--prefix", "-w", "json"]),
      ).header.revision;
      await ok(bin, e, ["compact", String(rev), "--physical"]);
      await ok(bin, e, ["defrag"]);
      assert.notEqual((await etcdctl(bin, e, ["put", "a", "b"])).code, 0, "refused until disarm");
      await ok(bin, e, ["alarm", "disarm"]);
      await ok(bin, e, ["put", "a", "b"]);
      assert.equal(await ok(bin, e, ["alarm", "list"]), "");
    } finally {
      await server.stop();
      dir.remove();
    }
  });
});

describe("etcdctl against a 3-member cluster", () => {
  let c: ProcessCluster;
  let endpoints: string[];
  before(async () => {
    c = await ProcessCluster.start(["n1", "n2", "n3"]);
    endpoints = [...c.members.values()].map((m) => m.clientAddress);
  });
  after(() => c.stop());

  /**
   * Resolves once every member applied everything committed: a membership change is
   * accepted only once the previous one is applied, and one proposed through a follower
   * while the leader has not would wait out its proposal timeout.
   */
  async function settled(bin: string): Promise<void> {
    await waitFor(async () => {
      const st = await statuses(bin);
      const commit = Math.max(...st.map((s) => s.Status.raftIndex));
      return st.every((s) => (s.Status.raftAppliedIndex ?? 0) >= commit);
    }, "every member applied the commit index");
  }

  /** The endpoints' statuses (every member answering). */
  async function statuses(bin: string): Promise<StatusJson[]> {
    return json<StatusJson[]>(await ok(bin, endpoints, ["endpoint", "status", "-w", "json"]));
  }

  test("member list, endpoint status and health", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    // etcdctl may ask any member: the list checked is one that shows every client URL (a
    // member that has not applied the last publish yet would show one missing).
    let published: { members: MemberJson[] } | undefined;
    await waitFor(async () => {
      const l = json<{ members: MemberJson[] }>(
        await ok(bin, endpoints, ["member", "list", "-w", "json"]),
      );
      if (!l.members.every((m) => (m.clientURLs ?? []).length === 1)) return false;
      published = l;
      return true;
    }, "client URLs published");
    const list = published!;
    assert.equal(list.members.length, 3);
    for (const m of c.members.values()) {
      const x = list.members.find((y) => hex(y.ID) === m.memberId);
      assert.ok(x !== undefined, `member ${m.name} listed`);
      assert.equal(x.name, m.name);
      assert.deepEqual(x.peerURLs, [`http://${m.peerAddress}`]);
      assert.deepEqual(x.clientURLs, [`http://${m.clientAddress}`]);
    }
    assert.match(await ok(bin, endpoints, ["member", "list", "-w", "table"]), /started/);
    const st = await statuses(bin);
    assert.equal(st.length, 3);
    const leaders = new Set(st.map((s) => hex(s.Status.leader)));
    assert.equal(leaders.size, 1);
    assert.ok(st.some((s) => hex(s.Status.header.member_id) === [...leaders][0]));
    const health = await etcdctl(bin, endpoints, ["endpoint", "health", "--cluster"]);
    assert.equal(health.code, 0);
    const lines = `${health.stdout}${health.stderr}`.split("\n");
    assert.equal(lines.filter((l) => /is healthy/.test(l)).length, 3);
  });

  test("HashKV is equal on every member after a workload", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    for (let i = 0; i < 30; i++) {
      const at = [endpoints[i % 3]!];
      if (i % 5 === 4) await ok(bin, at, ["del", `w/${i - 2}`]);
      else await ok(bin, at, ["put", `w/${i % 7}`, `v${i}`]);
    }
    const rev = json<{ header: { revision: number } }>(
      await ok(bin, [endpoints[0]!], ["get", "w/0", "-w", "json"]),
    ).header.revision;
    let hashes: HashJson[] = [];
    await waitFor(async () => {
      const r = await etcdctl(bin, endpoints, [
        "endpoint",
        "hashkv",
        "--rev",
        String(rev),
        "-w",
        "json",
      ]);
      if (r.code !== 0) return false;
      hashes = json<HashJson[]>(r.stdout);
      return hashes.length === 3;
    }, "every member hashed the revision");
    for (const h of hashes) assert.equal(h.HashKV.hash, hashes[0]!.HashKV.hash);
  });

  test("alarm list, defrag --cluster, move-leader", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    assert.equal(await ok(bin, endpoints, ["alarm", "list"]), "");
    assert.equal(
      (await ok(bin, endpoints, ["defrag", "--cluster"]))
        .split("\n")
        .filter((l) => /Finished/.test(l)).length,
      3,
    );
    const st = await statuses(bin);
    const leader = hex(st[0]!.Status.leader);
    const target = st.find((s) => hex(s.Status.header.member_id) !== leader)!;
    const targetId = hex(target.Status.header.member_id);
    assert.match(await ok(bin, endpoints, ["move-leader", targetId]), /Leadership transferred/);
    const after = await statuses(bin);
    assert.ok(after.every((s) => hex(s.Status.leader) === targetId));
    // Asked of a follower only: etcdctl finds no leader among the endpoints.
    const follower = after.find((s) => hex(s.Status.header.member_id) !== targetId)!;
    const r = await etcdctl(bin, [follower.Endpoint], ["move-leader", leader]);
    assert.notEqual(r.code, 0);
  });

  test("member add --learner, promote refused while it is not in sync, remove; member add", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    await settled(bin);
    const out = await ok(bin, endpoints, [
      "member",
      "add",
      "n4",
      "--peer-urls",
      "http://127.0.0.1:9",
      "--learner",
    ]);
    const id = /Member\s+([0-9a-f]+) added/.exec(out)?.[1];
    assert.ok(id !== undefined, out);
    assert.match(out, /ETCD_INITIAL_CLUSTER=".*n4=http:\/\/127\.0\.0\.1:9/);
    const table = await ok(bin, endpoints, ["member", "list"]);
    assert.match(table, new RegExp(`${id}, unstarted, , http://127.0.0.1:9, , true`));
    const again = await etcdctl(bin, endpoints, [
      "member",
      "add",
      "n5",
      "--peer-urls",
      "http://127.0.0.1:10",
      "--learner",
    ]);
    assert.match(again.stderr, /too many learner members in cluster/);
    const promote = await etcdctl(bin, endpoints, ["member", "promote", id]);
    assert.notEqual(promote.code, 0);
    assert.match(
      promote.stderr,
      /can only promote a learner member which is in sync with leader|can only promote/,
    );
    await settled(bin);
    assert.match(await ok(bin, endpoints, ["member", "remove", id]), /removed from cluster/);
    const gone = await etcdctl(bin, endpoints, ["member", "remove", id]);
    assert.match(gone.stderr, /member not found/);
    await settled(bin);
    const voter = await ok(bin, endpoints, [
      "member",
      "add",
      "n6",
      "--peer-urls",
      "http://127.0.0.1:11",
    ]);
    const id6 = /Member\s+([0-9a-f]+) added/.exec(voter)?.[1];
    assert.ok(id6 !== undefined);
    await settled(bin);
    assert.match(await ok(bin, endpoints, ["member", "remove", id6]), /removed/);
    assert.equal(
      json<{ members: MemberJson[] }>(await ok(bin, endpoints, ["member", "list", "-w", "json"]))
        .members.length,
      3,
    );
  });

  test("snapshot save from the cluster starts a new cluster (serve --initial-snapshot)", async (t) => {
    const bin = requireBinary(t, "etcdctl");
    if (bin === undefined) return;
    for (let i = 0; i < 10; i++) await ok(bin, endpoints, ["put", `s/${i}`, `v${i}`]);
    const dir = tempDir("kv-etcdctl-restore-");
    let restored: ProcessCluster | undefined;
    try {
      const file = join(dir.path, "snap.db");
      // etcdctl asks one endpoint for a snapshot: a follower here.
      const st = await statuses(bin);
      const follower = st.find((x) => hex(x.Status.leader) !== hex(x.Status.header.member_id))!;
      await waitFor(async () => {
        const r = await ok(
          bin,
          [follower.Endpoint],
          ["get", "s/", "--prefix", "--consistency", "s", "-w", "json"],
        );
        return json<{ count?: number }>(r).count === 10;
      }, "the follower applied the puts");
      await ok(bin, [follower.Endpoint], ["snapshot", "save", file]);
      const rev = json<{ header: { revision: number } }>(
        await ok(bin, endpoints, ["get", "s/0", "-w", "json"]),
      ).header.revision;
      restored = await ProcessCluster.start(["r1", "r2", "r3"], {
        extraArgs: ["--initial-snapshot", file],
      });
      const e2 = [...restored.members.values()].map((m) => m.clientAddress);
      const got = json<{ header: { revision: number }; kvs: unknown[] }>(
        await ok(bin, e2, ["get", "s/", "--prefix", "-w", "json"]),
      );
      assert.equal(got.kvs.length, 10);
      assert.equal(got.header.revision, rev, "the restored cluster continues the revisions");
      const put = json<{ header: { revision: number } }>(
        await ok(bin, e2, ["put", "new", "1", "-w", "json"]),
      );
      assert.equal(put.header.revision, rev + 1);
      await waitFor(async () => {
        const r = await etcdctl(bin, e2, [
          "endpoint",
          "hashkv",
          "--rev",
          String(rev + 1),
          "-w",
          "json",
        ]);
        if (r.code !== 0) return false;
        const h = json<HashJson[]>(r.stdout);
        return h.length === 3 && h.every((x) => x.HashKV.hash === h[0]!.HashKV.hash);
      }, "the restored members agree");
    } finally {
      await restored?.stop();
      dir.remove();
    }
  });
});
