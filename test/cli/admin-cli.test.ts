/**
 * `kv-engine backup|compact|stats --addr` against a real `kv-engine serve` process (with
 * --backup-dir and a token): each runs on the server through its admin service and prints
 * the report of its offline form; a path outside the backup directory and a missing token
 * fail with exit 1 and the status; --addr with --data-dir is a usage error (exit 2).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KvClient } from "../../src/client/index.js";
import { open } from "../../src/index.js";
import { MvccStore } from "../../src/mvcc/mvcc-store.js";
import { runCli, type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";

describe("kv-engine backup|compact|stats --addr", () => {
  let dir: ReturnType<typeof tempDir>;
  let server: ServerProcess;
  let backups: string;
  let tokenFile: string;
  const auth = () => ["--auth-token-file", tokenFile];

  before(async () => {
    dir = tempDir();
    backups = join(dir.path, "backups");
    mkdirSync(backups);
    tokenFile = join(dir.path, "token");
    writeFileSync(tokenFile, "cli-admin-token\n");
    server = await startServer(join(dir.path, "data"), [
      "--backup-dir",
      backups,
      "--auth-token-file",
      tokenFile,
    ]);
    const client = new KvClient(server.address, { authToken: "cli-admin-token" });
    try {
      for (let round = 0; round < 2; round++) {
        const batch = [];
        for (let i = 0; i < 500; i++) {
          batch.push({ type: "put" as const, key: `k${i}`, value: `v${round}-${i}` });
        }
        await client.write(batch);
      }
    } finally {
      client.close();
    }
  });

  after(async () => {
    await server.stop();
    dir.remove();
  });

  test("stats --addr prints the server's store stats (table, or --json)", async () => {
    const text = await runCli(["stats", "--addr", server.address, ...auth()]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Level/);
    const json = await runCli(["stats", "--addr", server.address, "--json", ...auth()]);
    assert.equal(json.code, 0, json.stderr);
    const stats = JSON.parse(json.stdout) as { levelFiles: number[]; memtableEntries: number };
    assert.ok(Array.isArray(stats.levelFiles));
    assert.ok(stats.memtableEntries > 0);
  });

  test("backup --addr --to NAME writes a checkpoint under --backup-dir that opens as a store with the revisions", async () => {
    const r = await runCli(["backup", "--addr", server.address, "--to", "b1", ...auth()]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(`written to ${join(backups, "b1")}`), r.stdout);
    const copy = await open(join(backups, "b1"), { createIfMissing: false });
    const mvcc = await MvccStore.open(copy);
    try {
      const k499 = await mvcc.latest(Buffer.from("k499"));
      assert.equal(Buffer.from(k499!.value).toString(), "v1-499");
      assert.ok(k499!.modRevision > 1 && mvcc.revision >= k499!.modRevision);
    } finally {
      await mvcc.close();
      await copy.close();
    }
    const outside = await runCli(["backup", "--addr", server.address, "--to", "../b2", ...auth()]);
    assert.equal(outside.code, 1, outside.stdout);
    assert.match(outside.stderr, /INVALID_ARGUMENT.*checkpoint refused/);
    assert.ok(!existsSync(join(dir.path, "b2")));
  });

  test("compact --addr compacts on the server with progress on stderr and the report on stdout", async () => {
    const r = await runCli(["compact", "--addr", server.address, ...auth()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^compact: compacting all keys on 127\.0\.0\.1:\d+ down to level \d/m);
    assert.match(r.stderr, /compact: +\d+% step 1: level 0 -> /);
    assert.match(r.stderr, /compact: 100% done: \d+ steps?/);
    assert.match(r.stdout, /^compacted all keys on 127\.0\.0\.1:\d+ down to level \d: \d+ steps?/);
    assert.match(r.stdout, /Files before/);
    const json = await runCli(["stats", "--addr", server.address, "--json", ...auth()]);
    const stats = JSON.parse(json.stdout) as { levelFiles: number[] };
    assert.equal(stats.levelFiles[0], 0);
  });

  test("without the token: exit 1, UNAUTHENTICATED; --addr with --data-dir: exit 2", async () => {
    const r = await runCli(["stats", "--addr", server.address]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /UNAUTHENTICATED/);
    const both = await runCli(["stats", "--addr", server.address, "--data-dir", dir.path]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /not both/);
  });
});
