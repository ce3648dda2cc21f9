/**
 * Debian's etcdctl (etcd 3.4's, API v3), unchanged, against kv-engine's etcd KV service:
 * put/get with --prefix, --from-key, --rev, --limit, --sort-by/--order, --keys-only and
 * JSON output; del with --prefix and --prev-kv; txn in etcdctl's interactive syntax, both
 * branches; compaction and the compacted error; leases (grant, put --lease, timetolive
 * --keys, keep-alive --once, list, revoke, expiry deleting the keys). Skipped when etcdctl is not on PATH, except
 * in CI (test/support/etcd-process.ts).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { requireBinary } from "../support/etcd-process.js";
import { ETCD_TARGETS, type EtcdTarget, startEtcdTarget } from "../support/etcd-targets.js";
import { waitFor } from "../support/wait-for.js";

for (const kind of ETCD_TARGETS) {
  describe(`against a ${kind}`, () => {
    let server: EtcdTarget;
    before(async () => {
      server = await startEtcdTarget(kind);
    });
    after(() => server.stop());

    interface Run {
      code: number;
      stdout: string;
      stderr: string;
    }

    function etcdctl(binary: string, args: string[], input?: string): Promise<Run> {
      return new Promise((resolve) => {
        const child = execFile(
          binary,
          ["--endpoints", server.endpoints.join(","), "--command-timeout", "20s", ...args],
          { env: { ...process.env, ETCDCTL_API: "3" }, timeout: 30_000 },
          (err, stdout, stderr) => {
            const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
            resolve({ code, stdout, stderr });
          },
        );
        child.stdin?.end(input ?? "");
      });
    }

    /** Runs etcdctl and asserts it succeeded; returns its output lines. */
    async function ok(binary: string, args: string[], input?: string): Promise<string[]> {
      const r = await etcdctl(binary, args, input);
      assert.equal(r.code, 0, `etcdctl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout.split("\n").filter((l) => l !== "");
    }

    const b64 = (s: string) => Buffer.from(s).toString("base64");

    interface JsonGet {
      header: { revision: number; cluster_id: number; member_id: number };
      kvs?: {
        key: string;
        value?: string;
        create_revision: number;
        mod_revision: number;
        version: number;
      }[];
      count?: number;
      more?: boolean;
    }

    test("etcdctl put and get: prefix, from-key, rev, limit, sort, keys-only, JSON", async (t) => {
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return;
      assert.deepEqual(await ok(ctl, ["put", "get/a", "1"]), ["OK"]);
      await ok(ctl, ["put", "get/b", "2"]);
      await ok(ctl, ["put", "get/c", "3"]);
      await ok(ctl, ["put", "get/a", "4"]);
      await ok(ctl, ["put", "geu", "outside"]);
      assert.deepEqual(await ok(ctl, ["get", "get/", "--prefix"]), [
        "get/a",
        "4",
        "get/b",
        "2",
        "get/c",
        "3",
      ]);
      assert.deepEqual(await ok(ctl, ["get", "get/b", "--from-key", "--keys-only"]), [
        "get/b",
        "get/c",
        "geu",
      ]);
      assert.deepEqual(await ok(ctl, ["get", "get/", "--prefix", "--limit", "2"]), [
        "get/a",
        "4",
        "get/b",
        "2",
      ]);
      assert.deepEqual(
        await ok(ctl, ["get", "get/", "--prefix", "--sort-by", "MODIFY", "--order", "DESCEND"]),
        ["get/a", "4", "get/c", "3", "get/b", "2"],
      );
      assert.deepEqual(
        await ok(ctl, [
          "get",
          "get/",
          "--prefix",
          "--sort-by",
          "VALUE",
          "--order",
          "ASCEND",
          "--print-value-only",
        ]),
        ["2", "3", "4"],
      );

      const json = JSON.parse(
        (await ok(ctl, ["get", "get/", "--prefix", "--limit", "1", "-w", "json"])).join(""),
      ) as JsonGet;
      const rev = json.header.revision;
      assert.equal(json.header.cluster_id, server.clusterId);
      assert.ok(server.memberIds.includes(json.header.member_id), String(json.header.member_id));
      assert.equal(json.count, 3);
      assert.equal(json.more, true);
      const a = json.kvs?.[0];
      assert.ok(a !== undefined);
      assert.deepEqual(
        [a.key, a.value, a.version, a.mod_revision - a.create_revision],
        [b64("get/a"), b64("4"), 2, 3],
      );
      assert.equal(a.mod_revision, rev - 1, "get/a was the last write but one");
      // --rev: get/a as of its first version.
      const old = JSON.parse(
        (await ok(ctl, ["get", "get/a", "--rev", String(a.create_revision), "-w", "json"])).join(
          "",
        ),
      ) as JsonGet;
      assert.equal(old.kvs?.[0]?.value, b64("1"));
      assert.equal(old.kvs?.[0]?.mod_revision, a.create_revision);
      assert.equal(old.header.revision, rev, "the header has the store's revision");
    });

    test("etcdctl del: prefix, prev-kv, the count deleted", async (t) => {
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return;
      for (const k of ["del/a", "del/b", "del/c"]) await ok(ctl, ["put", k, `v-${k}`]);
      assert.deepEqual(await ok(ctl, ["del", "del/a", "--prev-kv"]), ["1", "del/a", "v-del/a"]);
      assert.deepEqual(await ok(ctl, ["del", "del/", "--prefix"]), ["2"]);
      assert.deepEqual(await ok(ctl, ["del", "del/", "--prefix"]), ["0"]);
      assert.deepEqual(await ok(ctl, ["get", "del/", "--prefix"]), []);
    });

    test("etcdctl txn (interactive syntax): the success and the failure branch", async (t) => {
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return;
      await ok(ctl, ["put", "txn/k", "v1"]);
      const success = await ok(
        ctl,
        ["txn"],
        'value("txn/k") = "v1"\nversion("txn/none") = "0"\n\nput txn/k v2\nget txn/k\n\nput txn/failed yes\n\n',
      );
      assert.deepEqual(success, ["SUCCESS", "OK", "txn/k", "v2"]);
      const failure = await ok(
        ctl,
        ["txn"],
        'mod("txn/k") < "2"\n\nput txn/k never\n\nput txn/failed yes\ndel txn/k\n\n',
      );
      assert.deepEqual(failure, ["FAILURE", "OK", "1"]);
      assert.deepEqual(await ok(ctl, ["get", "txn/", "--prefix"]), ["txn/failed", "yes"]);
    });

    test("etcdctl compaction, and a read below it: etcd's compacted error", async (t) => {
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return;
      await ok(ctl, ["put", "cmp/k", "1"]);
      await ok(ctl, ["put", "cmp/k", "2"]);
      const json = JSON.parse((await ok(ctl, ["get", "cmp/k", "-w", "json"])).join("")) as JsonGet;
      const rev = json.header.revision;
      assert.deepEqual(await ok(ctl, ["compaction", String(rev), "--physical"]), [
        `compacted revision ${rev}`,
      ]);
      const below = await etcdctl(ctl, ["get", "cmp/k", "--rev", String(rev - 1)]);
      assert.equal(below.code, 1);
      assert.match(below.stderr, /Error: etcdserver: mvcc: required revision has been compacted/);
      assert.deepEqual(
        await ok(ctl, ["get", "cmp/k", "--rev", String(rev), "--print-value-only"]),
        ["2"],
      );
      const again = await etcdctl(ctl, ["compaction", String(rev)]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /etcdserver: mvcc: required revision has been compacted/);
      const future = await etcdctl(ctl, ["get", "cmp/k", "--rev", String(rev + 100)]);
      assert.match(future.stderr, /etcdserver: mvcc: required revision is a future revision/);
    });

    test("etcdctl lease: grant, put --lease, timetolive, keep-alive, list, revoke, expiry", async (t) => {
      const ctl = requireBinary(t, "etcdctl");
      if (ctl === undefined) return;
      const granted = (await ok(ctl, ["lease", "grant", "60"]))[0]!;
      const m = /^lease ([0-9a-f]+) granted with TTL\(60s\)$/.exec(granted);
      assert.ok(m, granted);
      const id = m[1]!;
      await ok(ctl, ["put", "--lease", id, "lease/b", "2"]);
      await ok(ctl, ["put", "--lease", id, "lease/a", "1"]);
      const bad = await etcdctl(ctl, ["put", "--lease", "abc", "lease/c", "3"]);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /etcdserver: requested lease not found/);
      assert.deepEqual(await ok(ctl, ["lease", "timetolive", "--keys", id]), [
        `lease ${id} granted with TTL(60s), remaining(59s), attached keys([lease/a lease/b])`,
      ]);
      assert.deepEqual(await ok(ctl, ["lease", "keep-alive", "--once", id]), [
        `lease ${id} keepalived with TTL(60)`,
      ]);
      assert.ok((await ok(ctl, ["lease", "list"])).includes(id));
      assert.deepEqual(await ok(ctl, ["lease", "timetolive", "abc"]), [
        "lease 0000000000000abc already expired",
      ]);
      assert.deepEqual(await ok(ctl, ["lease", "revoke", id]), [`lease ${id} revoked`]);
      assert.deepEqual(await ok(ctl, ["get", "lease/", "--prefix"]), []);
      const again = await etcdctl(ctl, ["lease", "revoke", id]);
      assert.match(again.stderr, /etcdserver: requested lease not found/);

      // The shortest lease (etcd's minimum: 2 s on a single node) expires and takes its key.
      const short = /^lease ([0-9a-f]+) granted/.exec(
        (await ok(ctl, ["lease", "grant", "1"]))[0]!,
      )![1]!;
      await ok(ctl, ["put", "--lease", short, "lease/short", "x"]);
      assert.deepEqual(await ok(ctl, ["get", "lease/short"]), ["lease/short", "x"]);
      await waitFor(
        async () => (await ok(ctl, ["get", "lease/short"])).length === 0,
        "the expired lease's key deleted",
        15_000,
      );
      assert.deepEqual(await ok(ctl, ["lease", "timetolive", short]), [
        `lease ${short} already expired`,
      ]);
    });
  });
}
