/**
 * The commands over etcd's v3 API (issue 31, point 3) against one `kv-engine serve` child
 * process shared by the file: get --rev, txn (flags and JSON on stdin), compaction, watch
 * (events as lines, SIGINT exits 0, a compacted start exits 1), lease grant/ttl/list/
 * keep-alive/revoke, lock (a second holder waits for the first; a command run under the
 * lock), elect and --listen, endpoint status/health/hashkv, alarm list/disarm, snapshot
 * save/restore, and their one-line errors in our words.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { EtcdClient } from "../../src/client/index.js";
import { CliChild } from "../support/cli-child.js";
import { runCli, type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

const dir = tempDir("kv-cli-etcd-");
let server: ServerProcess;
let etcd: EtcdClient;
let addr: string[];

async function ok(args: string[], what = args.join(" ")): Promise<string> {
  const r = await runCli([...args, ...addr]);
  assert.equal(r.code, 0, `${what}: exit ${r.code}\n${r.stderr}`);
  assert.equal(r.stderr, "", what);
  return r.stdout;
}

async function json(args: string[]): Promise<Record<string, unknown>> {
  return JSON.parse(await ok([...args, "--json"])) as Record<string, unknown>;
}

/** Runs a command that must fail with `code`; returns its one-line stderr. */
async function fails(args: string[], code = 1): Promise<string> {
  const r = await runCli([...args, ...addr]);
  assert.equal(r.code, code, `${args.join(" ")}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  if (code === 1) assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
  assert.doesNotMatch(r.stderr, /etcdserver:|grpc|Error:|at .*\.js/, r.stderr);
  return r.stderr;
}

before(async () => {
  server = await startServer(join(dir.path, "db"), ["--no-sync"]);
  addr = ["--addr", server.address];
  etcd = new EtcdClient(server.address, { timeoutMs: 5000 });
});

after(async () => {
  await CliChild.stopAll();
  etcd?.close();
  await server?.stop();
  dir.remove();
});

describe("KV: get --rev, txn, compaction", () => {
  test("get --rev reads a past value; --json carries the revisions", async () => {
    const first = (await etcd.put("r", "one")).header.revision;
    await etcd.put("r", "two");
    assert.equal(await ok(["get", "r", "--rev", String(first)]), "one\n");
    assert.equal(await ok(["get", "r"]), "two\n");
    const j = await json(["get", "r", "--rev", String(first)]);
    assert.deepEqual(j, {
      found: true,
      key: "r",
      value: "one",
      createRevision: first,
      modRevision: first,
      version: 1,
      lease: "0",
      revision: first,
    });
    const before = await runCli(["get", "r", "--rev", String(first - 1), ...addr]);
    assert.equal(before.code, 1, "absent at a revision before its creation");
    assert.match(before.stderr, /not found at revision/);
    assert.match(
      await fails(["get", "r", "--rev", "999999"]),
      /OUT_OF_RANGE: .*that revision is past the store's current revision/,
    );
  });

  test("txn from flags: compares choose the branch; ops answer in order", async () => {
    const mod = (await etcd.put("t", "v1")).header.revision;
    const text = await ok([
      "txn",
      "--if",
      `mod(t) = ${mod}`,
      "--if",
      "value(t) = v1",
      "--then",
      "put t v2",
      "--then",
      'put "t s" "a b"',
      "--then",
      "get t prefix",
      "--else",
      "get t",
    ]);
    assert.equal(
      text,
      "then\nput (revision " +
        (mod + 1) +
        ")\nput (revision " +
        (mod + 1) +
        ")\nget t\tv2\nget t s\ta b\n",
    );
    const again = await json([
      "txn",
      "--if",
      `mod(t) = ${mod}`,
      "--then",
      "del t",
      "--else",
      "get t",
    ]);
    assert.equal(again.succeeded, false);
    assert.equal(again.branch, "else");
    assert.deepEqual(again.responses, [
      {
        type: "get",
        kvs: [
          {
            key: "t",
            value: "v2",
            createRevision: mod,
            modRevision: mod + 1,
            version: 2,
            lease: "0",
          },
        ],
        count: 1,
        more: false,
      },
    ]);
    assert.equal((await etcd.get("t"))?.value.toString(), "v2", "the else branch wrote nothing");
    assert.match(
      await fails(["txn", "--if", "mod(t) ~ 3"], 2),
      /--if 'mod\(t\) ~ 3': write TARGET\(KEY\) OP OPERAND/,
    );
    assert.match(await fails(["txn", "--then", "put a"], 2), /put needs KEY and VALUE/);
    assert.match(
      await fails(["txn", "--then", "put d 1", "--then", "put d 2"]),
      /INVALID_ARGUMENT: .*writes the same key twice .*nothing was done/,
    );
  });

  test("txn from JSON on stdin: objects, hex fields and text ops", async () => {
    await etcd.put("j", "x");
    await etcd.put("j2", "y");
    const doc = `{
      "if": [{"key": "j", "target": "value", "op": "=", "value": "x"}, "version(j) > 0"],
      "then": [{"put": {"key": "j", "valueHex": "ff00"}}, {"get": {"keyHex": "6a"}}, "del j2"],
      "else": []
    }`;
    const c = new CliChild(["txn", "--json", ...addr], doc);
    assert.equal(await c.exit(), 0, c.stderr);
    const r = JSON.parse(c.stdout) as { succeeded: boolean; responses: Record<string, unknown>[] };
    assert.equal(r.succeeded, true);
    assert.equal(r.responses[0]!.type, "put");
    assert.equal((r.responses[1]!.kvs as Record<string, unknown>[])[0]!.valueHex, "ff00");
    assert.deepEqual(r.responses[2], { type: "del", deleted: 1 });
    const bad = new CliChild(["txn", ...addr], '{"if": [], "when": []}');
    assert.equal(await bad.exit(), 2);
    assert.match(bad.stderr, /stdin: unknown field 'when'/);
  });

  test("compaction REV: older revisions then fail, in our words", async () => {
    const rev = (await etcd.put("c", "1")).header.revision;
    await etcd.put("c", "2");
    assert.equal(
      await ok(["compaction", String(rev)]),
      `compacted the history below revision ${rev}\n`,
    );
    assert.match(
      await fails(["get", "c", "--rev", String(rev - 1)]),
      /OUT_OF_RANGE: .*that revision was compacted/,
    );
    assert.equal(await ok(["get", "c", "--rev", String(rev)]), "1\n");
    assert.match(await fails(["compaction", "x"], 2), /REV must be a revision/);
  });
});

describe("watch", () => {
  test("prints one line per event until SIGINT, then exits 0; --json and --prev-kv", async () => {
    const from = (await etcd.range("w")).header.revision + 1;
    const text = new CliChild([
      "watch",
      "w/",
      "--prefix",
      "--prev-kv",
      "--rev",
      String(from),
      ...addr,
    ]);
    const js = new CliChild(["watch", "w/a", "--json", "--rev", String(from), ...addr]);
    const p1 = (await etcd.put("w/a", "1")).header.revision;
    await etcd.put("w/b", "x\ty");
    await etcd.put("w/a", "2");
    await etcd.delete("w/a");
    await etcd.put("other", "no");
    assert.deepEqual(await text.waitLines(4), [
      `${p1}\tPUT\tw/a\t1\t(absent)`,
      `${p1 + 1}\tPUT\tw/b\tx\\ty\t(absent)`,
      `${p1 + 2}\tPUT\tw/a\t2\t1`,
      `${p1 + 3}\tDELETE\tw/a\t2`,
    ]);
    const events = (await js.waitLines(3)).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      events.map((e) => [e.revision, e.type, e.key, e.value, e.version]),
      [
        [p1, "put", "w/a", "1", 1],
        [p1 + 2, "put", "w/a", "2", 2],
        [p1 + 3, "delete", "w/a", undefined, 0],
      ],
    );
    assert.equal(await text.stop("SIGINT"), 0, text.stderr);
    assert.equal(await js.stop("SIGTERM"), 0, js.stderr);
    assert.equal(text.stderr, "");
  });

  test("a start revision that was compacted ends it with one line and exit 1", async () => {
    const rev = (await etcd.put("wc", "1")).header.revision;
    await etcd.put("wc", "2");
    await etcd.compact(rev + 1);
    const w = new CliChild(["watch", "wc", "--rev", String(rev), ...addr]);
    assert.equal(await w.exit(), 1);
    assert.match(
      w.stderr,
      new RegExp(
        `^kv-engine watch: the revision to watch from was compacted \\(the history kept starts at revision ${rev + 1}\\): watch again with --rev ${rev + 1} or later\\n$`,
      ),
    );
  });
});

describe("lease", () => {
  test("grant, ttl --keys, list, keep-alive until SIGINT, revoke; a lost lease ends keep-alive", async () => {
    const granted = await json(["lease", "grant", "5"]);
    const grantedAt = Date.now();
    const id = granted.id as string;
    assert.match(id, /^[0-9a-f]+$/);
    assert.equal(granted.ttl, 5);
    // Kept alive from now on, while the other actions run.
    const keep = new CliChild(["lease", "keep-alive", id, ...addr]);
    await etcd.put("lk", "v", { lease: BigInt(`0x${id}`) });
    const ttl = await json(["lease", "ttl", id, "--keys"]);
    assert.equal(ttl.id, id);
    assert.equal(ttl.grantedTtl, 5);
    assert.deepEqual(ttl.keys, [{ key: "lk" }]);
    assert.ok(((await json(["lease", "list"])).leases as string[]).includes(id));
    // Renewed past its TTL: still alive 5.5 s after the grant.
    await keep.waitLines(2, 8000);
    await new Promise((r) => setTimeout(r, Math.max(0, grantedAt + 5500 - Date.now())));
    assert.ok((await etcd.timeToLive(BigInt(`0x${id}`))).ttl > 0, "kept alive past its TTL");
    assert.match(keep.lines[0]!, new RegExp(`^lease ${id} renewed \\(TTL 5 s\\)$`));
    assert.equal(await keep.stop("SIGINT"), 0, keep.stderr);
    // Keep it alive again, and revoke it meanwhile: the keep-alive ends with exit 1.
    const keep2 = new CliChild(["lease", "keep-alive", id, "--json", ...addr]);
    await keep2.waitLines(1);
    assert.equal(await ok(["lease", "revoke", id]), `lease ${id} revoked\n`);
    assert.equal(await keep2.exit(), 1);
    assert.match(
      keep2.stderr,
      new RegExp(`^kv-engine lease: lease ${id} was lost: it expired or was revoked\\n$`),
    );
    assert.equal(await etcd.get("lk"), undefined, "its key went with it");
    assert.equal(await ok(["lease", "ttl", id]), `lease ${id} is gone (expired or revoked)\n`);
    assert.match(
      await fails(["lease", "revoke", id]),
      /NOT_FOUND: .*no such lease \(it expired or was revoked\); nothing was done/,
    );
    assert.match(await fails(["lease", "keep-alive", "xyz"], 2), /ID must be a lease ID in hex/);
  });
});

describe("lock and elect", () => {
  test("a second lock waits until the first holder exits; fencing revisions grow; a command runs under it", async () => {
    const first = new CliChild(["lock", "L", "--json", ...addr]);
    const held = JSON.parse((await first.waitLines(1))[0]!) as { key: string; revision: number };
    assert.match(held.key, /^L\/[0-9a-f]+$/);
    const second = new CliChild([
      "lock",
      "L",
      ...addr,
      "--",
      process.execPath,
      "-e",
      "console.log('rev', process.env.ETCD_LOCK_REV); process.exit(3)",
    ]);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(second.lines.length, 0, "the second waits while the first holds");
    assert.equal(await first.stop("SIGINT"), 0, first.stderr);
    assert.equal(await second.exit(), 3, `the command's exit code: ${second.stderr}`);
    const [key, locked, ran] = second.lines;
    assert.match(key!, /^L\/[0-9a-f]+$/);
    const rev = Number(/^locked at fencing revision (\d+)$/.exec(locked!)?.[1]);
    assert.ok(rev > held.revision, "the fencing revision grew");
    assert.equal(ran, `rev ${rev}`);
    assert.equal((await etcd.range({ prefix: "L/" })).kvs.length, 0, "both released");
  });

  test("elect campaigns and resigns on SIGTERM; --listen prints each leader's value", async () => {
    const listen = new CliChild(["elect", "E", "--listen", ...addr]);
    const a = new CliChild(["elect", "E", "alpha", "--json", ...addr]);
    const won = JSON.parse((await a.waitLines(1))[0]!) as { key: string; revision: number };
    assert.match(won.key, /^E\/[0-9a-f]+$/);
    const b = new CliChild(["elect", "E", "beta", ...addr]);
    assert.deepEqual(await listen.waitLines(1), ["alpha"]);
    assert.equal(await a.stop("SIGTERM"), 0, a.stderr);
    await b.waitLines(2);
    assert.match(b.lines[1]!, /^leading at revision \d+$/);
    assert.deepEqual(await listen.waitLines(2), ["alpha", "beta"]);
    assert.equal(await b.stop("SIGINT"), 0);
    assert.equal(await listen.stop("SIGINT"), 0);
    assert.match(await fails(["elect", "E"], 2), /give NAME and VALUE/);
  });
});

describe("endpoint, alarm, snapshot", () => {
  test("endpoint status, health and hashkv of a single node", async () => {
    const s = await json(["endpoint", "status"]);
    assert.equal(s.endpoint, server.address);
    assert.equal(s.version, "3.4.0");
    assert.equal(s.isLeader, true);
    assert.equal(s.isLearner, false);
    assert.equal(typeof s.revision, "number");
    const table = await ok(["endpoint", "status"]);
    assert.match(table, /^ENDPOINT +ID +VERSION/);
    assert.match(
      await ok(["endpoint", "health"]),
      new RegExp(`^${server.address} is healthy: a linearizable read took \\d+ ms\\n$`),
    );
    const h = await json(["endpoint", "hashkv"]);
    const h2 = await json(["endpoint", "hashkv", "--rev", String(h.revision)]);
    assert.equal(h2.hash, h.hash, "the same revision hashes the same");
    const down = await runCli(["endpoint", "health", "--addr", `${server.address},127.0.0.1:1`]);
    assert.equal(down.code, 1);
    assert.match(
      down.stdout,
      /127\.0\.0\.1:1 is unhealthy: UNAVAILABLE: 127\.0\.0\.1:1: cannot connect/,
    );
  });

  test("alarm list and disarm (none raised on a fresh node)", async () => {
    assert.deepEqual(await json(["alarm", "list"]), { alarms: [] });
    assert.equal(await ok(["alarm", "disarm"]), "no alarm was raised\n");
  });

  test("snapshot save, then snapshot restore serves the keys", async () => {
    await etcd.put("snap", "shot");
    const file = join(dir.path, "s.db");
    assert.match(
      await ok(["snapshot", "save", file]),
      /^snapshot of .* saved to .*s\.db \(\d+ bytes/,
    );
    assert.ok(!existsSync(`${file}.part`));
    const restored = join(dir.path, "restored");
    const r = await runCli(["snapshot", "restore", file, "--data-dir", restored, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { dataDir: string }).dataDir, restored);
    const copy = await startServer(restored, ["--no-sync"]);
    try {
      const c = new EtcdClient(copy.address, { timeoutMs: 5000 });
      assert.equal((await c.get("snap"))?.value.toString(), "shot");
      c.close();
    } finally {
      await copy.stop();
    }
    assert.ok(readFileSync(file).length > 0);
    const again = await runCli(["snapshot", "restore", file, "--data-dir", restored]);
    assert.equal(again.code, 1, "the directory exists");
  });
});
