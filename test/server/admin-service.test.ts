/**
 * kv.v1.AdminService in process, on both transports, through AdminClient: flush, stats,
 * checkpoints confined to the server's backup directory ("..", absolute paths outside,
 * symbolic links out and existing names refused, nothing written outside), compactRange
 * with its progress stream (sizes before, one message per compaction, a final one; data
 * intact), behind the bearer token, absent unless the server is given an admin backend.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  AdminClient,
  type AdminCompactProgress,
  isKvClientError,
  KvClient,
  status,
} from "../../src/client/index.js";
import { type KvStore, open } from "../../src/index.js";
import { KvServer, TRANSPORTS } from "../../src/server/index.js";
import { tempDir } from "../support/temp-dir.js";

const TOKEN = "admin-test-token";
const keyOf = (i: number) => `key${String(i).padStart(6, "0")}`;

async function rejectsWith(work: Promise<unknown>, code: status, pattern?: RegExp) {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(isKvClientError(err), String(err));
    assert.equal(err.codeName, status[code], err.message);
    if (pattern !== undefined) assert.match(err.message, pattern);
    return true;
  });
}

for (const transport of TRANSPORTS) {
  describe(`admin service over ${transport}`, () => {
    let dir: ReturnType<typeof tempDir>;
    let backups: string;
    let outside: string;
    let db: KvStore;
    let server: KvServer;
    let admin: AdminClient;
    let kv: KvClient;

    before(async () => {
      dir = tempDir();
      backups = join(dir.path, "backups");
      outside = join(dir.path, "outside");
      mkdirSync(backups);
      mkdirSync(outside);
      db = await open(join(dir.path, "data"), { writeBufferSize: 64 << 10 });
      server = await KvServer.start(db, {
        port: 0,
        transport,
        authToken: TOKEN,
        admin: db,
        backupDir: backups,
      });
      admin = new AdminClient(server.address, { authToken: TOKEN });
      kv = new KvClient(server.address, { authToken: TOKEN });
      for (let round = 0; round < 3; round++) {
        const batch = [];
        for (let i = 0; i < 2000; i++) {
          batch.push({ type: "put" as const, key: keyOf(i), value: `r${round}-${"x".repeat(40)}` });
        }
        await kv.write(batch);
      }
    });

    after(async () => {
      admin.close();
      kv.close();
      await server.shutdown(0);
      await db.close();
      dir.remove();
    });

    test("Flush turns the memtable into tables; Stats says so", async () => {
      await kv.put("flush-me", "v");
      assert.ok(db.stats().memtableEntries > 0);
      await admin.flush();
      const stats = await admin.stats();
      assert.equal(stats.memtableEntries, 0);
      // (A background compaction may change the levels meanwhile: only their total is checked.)
      const files = stats.levelFiles as number[];
      assert.ok(files.reduce((a, n) => a + n, 0) > 0, JSON.stringify(files));
      assert.equal(files.length, db.stats().levelFiles.length);
    });

    test("Checkpoint writes a store under the backup directory, by name or by a path inside", async () => {
      await kv.put("in-checkpoint", "yes");
      const r = await admin.checkpoint("first");
      assert.equal(r.path, join(backups, "first"));
      assert.ok(r.linked + r.copied > 0);
      mkdirSync(join(backups, "nightly"));
      const nested = await admin.checkpoint(join(backups, "nightly", "second"));
      assert.equal(nested.path, join(backups, "nightly", "second"));
      for (const path of [r.path, nested.path]) {
        const copy = await open(path, { createIfMissing: false });
        try {
          assert.equal((await copy.get("in-checkpoint"))?.toString(), "yes");
          assert.equal((await copy.get(keyOf(7)))?.toString().slice(0, 3), "r2-");
        } finally {
          await copy.close();
        }
      }
    });

    test("Checkpoint refuses '..', absolute paths outside, symbolic links out, existing names", async () => {
      symlinkSync(outside, join(backups, "link-out"));
      mkdirSync(join(backups, "taken"));
      const refused: Array<[string, status]> = [
        ["../escape", status.INVALID_ARGUMENT],
        ["nightly/../../escape", status.INVALID_ARGUMENT],
        [join(outside, "abs"), status.INVALID_ARGUMENT],
        [join(backups, "..", "outside", "abs2"), status.INVALID_ARGUMENT],
        ["link-out/inside-link", status.INVALID_ARGUMENT],
        ["link-out", status.ALREADY_EXISTS],
        ["taken", status.ALREADY_EXISTS],
        ["missing-parent/x", status.INVALID_ARGUMENT],
        ["", status.INVALID_ARGUMENT],
        [".", status.INVALID_ARGUMENT],
      ];
      for (const [name, code] of refused) {
        await rejectsWith(admin.checkpoint(name), code, /checkpoint refused/);
      }
      assert.deepEqual(readdirSync(outside), [], "something was written outside");
      assert.ok(!existsSync(join(dir.path, "escape")));
    });

    test("CompactRange streams the sizes before, each compaction, and a final message", async () => {
      const messages: AdminCompactProgress[] = [];
      for await (const m of admin.compactRange()) messages.push(m);
      const first = messages[0]!;
      const last = messages.at(-1)!;
      assert.ok(first.before !== undefined && first.targetLevel >= 1, JSON.stringify(first));
      assert.ok((first.before.files[0] ?? 0) > 0, "nothing in level 0 to compact");
      assert.equal(last.done, true);
      const steps = messages.slice(1, -1);
      assert.ok(steps.length >= 1, "no compaction reported");
      assert.deepEqual(
        steps.map((s) => s.step),
        steps.map((_, i) => i + 1),
      );
      assert.ok(steps.some((s) => s.manual));
      assert.equal(last.step, steps.length);
      assert.equal(last.after?.files[0], 0);
      assert.equal((await kv.get(keyOf(1999)))?.toString().slice(0, 3), "r2-");
      // A bounded range, keys inclusive.
      const bounded: AdminCompactProgress[] = [];
      for await (const m of admin.compactRange(keyOf(10), keyOf(20))) bounded.push(m);
      assert.equal(bounded.at(-1)?.done, true);
    });

    test("every admin call needs the token", async () => {
      const anonymous = new AdminClient(server.address);
      try {
        await rejectsWith(anonymous.stats(), status.UNAUTHENTICATED);
        await rejectsWith(anonymous.flush(), status.UNAUTHENTICATED);
        await rejectsWith(anonymous.checkpoint("anon"), status.UNAUTHENTICATED);
        await rejectsWith(
          (async () => {
            for await (const _ of anonymous.compactRange()) {
              // nothing
            }
          })(),
          status.UNAUTHENTICATED,
        );
        assert.ok(!existsSync(join(backups, "anon")));
      } finally {
        anonymous.close();
      }
    });
  });

  describe(`admin service configuration over ${transport}`, () => {
    test("without a backup directory Checkpoint is FAILED_PRECONDITION; without an admin backend the service is absent", async (t) => {
      const dir = tempDir();
      const db = await open(join(dir.path, "data"));
      const withAdmin = await KvServer.start(db, { port: 0, transport, admin: db });
      const c1 = new AdminClient(withAdmin.address);
      const without = await KvServer.start(db, { port: 0, transport });
      const c2 = new AdminClient(without.address);
      t.after(async () => {
        c1.close();
        c2.close();
        await withAdmin.shutdown(0);
        await without.shutdown(0);
        await db.close();
        dir.remove();
      });
      await rejectsWith(c1.checkpoint("x"), status.FAILED_PRECONDITION, /--backup-dir/);
      assert.equal(typeof (await c1.stats()).levelFiles, "object");
      await rejectsWith(c2.stats(), status.UNIMPLEMENTED);
    });
  });
}
