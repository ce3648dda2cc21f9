/**
 * A real full disk and a real read-only remount under a real server process: a 20 MiB
 * tmpfs (needs root: mount(8); skipped with a message otherwise). Filled up by another
 * file, the server keeps serving reads, refuses writes with RESOURCE_EXHAUSTED saying the
 * disk is full and reports NOT_SERVING for kv.v1.KvService; once the file is removed it
 * heals by itself (SERVING, writes accepted) and every acknowledged write is there after a
 * restart. With its write permission withdrawn (the server then runs as nobody: Linux
 * refuses a read-only remount while files are open for writing), writes fail UNAVAILABLE
 * and stay refused once the permission is back, until the server is restarted. About 5 s.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, closeSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Client, credentials, Metadata } from "@grpc/grpc-js";
import { isKvClientError, KvClient, status } from "../../src/client/index.js";
import { openServedStore } from "../support/served-store.js";
import { type ServerProcess, startServer } from "../support/server-process.js";
import { tempDir } from "../support/temp-dir.js";
import { waitFor } from "../support/wait-for.js";

const SERVING = 1;
const NOT_SERVING = 2;

/** Why the test cannot run here, or undefined when it can (root, and tmpfs mounts work). */
function cannotMount(): string | undefined {
  if (process.platform !== "linux") return "needs Linux";
  if (process.getuid?.() !== 0) return "needs root to mount a tmpfs (run the suite as root)";
  return undefined;
}

function healthOf(address: string): Promise<number> {
  const raw = new Client(address, credentials.createInsecure());
  const name = Buffer.from("kv.v1.KvService");
  return new Promise<number>((resolve, reject) => {
    raw.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (b: Buffer) => b,
      (b: Buffer) => b,
      Buffer.concat([Buffer.of(0x0a, name.length), name]),
      new Metadata(),
      {},
      (err, res) => (err !== null || res === undefined ? reject(err) : resolve(res[1] ?? 0)),
    );
  }).finally(() => raw.close());
}

/** Writes zeros to `path` until the file system is full; returns the bytes written. */
function fillUp(path: string): number {
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(256 * 1024);
  let total = 0;
  try {
    for (;;) total += writeSync(fd, chunk);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
  } finally {
    closeSync(fd);
  }
  return total;
}

const reason = cannotMount();

describe("a real 20 MiB tmpfs", { skip: reason }, () => {
  const dir = tempDir("kv-disk-full-");
  const mnt = join(dir.path, "mnt");
  const data = join(mnt, "data");
  const filler = join(mnt, "filler");
  let mounted = false;
  let server: ServerProcess | undefined;
  let client: KvClient | undefined;
  const acked = new Map<string, string>();

  before(() => {
    chmodSync(dir.path, 0o755); // the unprivileged server must reach the mount
    mkdirSync(mnt);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=20m", "tmpfs", mnt]);
    mounted = true;
  });

  after(async () => {
    client?.close();
    await server?.stop("SIGKILL");
    if (mounted) {
      try {
        execFileSync("umount", [mnt]);
      } catch {
        execFileSync("umount", ["-l", mnt]);
      }
    }
    dir.remove();
  });

  const put = async (key: string, value: string): Promise<void> => {
    await client!.put(key, value);
    acked.set(key, value);
  };

  test("full: reads served, writes RESOURCE_EXHAUSTED, NOT_SERVING; heals once space is freed", async () => {
    server = await startServer(data);
    client = new KvClient(server.address);
    for (let i = 0; i < 50; i++) await put(`before${i}`, `v${i}`.repeat(20));
    assert.equal(await healthOf(server.address), SERVING);
    fillUp(filler);
    let refused: unknown;
    // The log's preallocated space (up to walPreallocateBytes, 1 MiB) takes writes after
    // the disk is full; the next extension of the log fails.
    for (let i = 0; i < 600 && refused === undefined; i++) {
      await put(`during${i}`, "x".repeat(4096)).catch((err: unknown) => {
        refused = err;
      });
    }
    assert.ok(isKvClientError(refused), String(refused));
    assert.equal(refused.code, status.RESOURCE_EXHAUSTED, refused.message);
    assert.match(refused.message, /disk is full/);
    await waitFor(async () => (await healthOf(server!.address)) === NOT_SERVING, "NOT_SERVING");
    assert.equal((await client.get("before7"))?.toString(), "v7".repeat(20));
    assert.equal((await client.scanAll("before", "before~")).length, 50);
    await assert.rejects(client.put("refused", "x"), (err) => {
      assert.ok(isKvClientError(err) && err.code === status.RESOURCE_EXHAUSTED, String(err));
      return true;
    });

    unlinkSync(filler);
    await waitFor(async () => (await healthOf(server!.address)) === SERVING, "SERVING again");
    for (let i = 0; i < 50; i++) await put(`after${i}`, `w${i}`);
    assert.match(server.stderr(), /"event":"log-failed"/);
    assert.match(server.stderr(), /"event":"resumed"/);

    client.close();
    client = undefined;
    assert.equal(await server.stop(), 0);
    server = undefined;
    const db = await openServedStore(data);
    try {
      for (const [k, v] of acked) assert.equal(await db.get(k), v, k);
    } finally {
      await db.close();
    }
  });

  test("write permission withdrawn (EACCES): writes UNAVAILABLE and refused until the server is restarted", async () => {
    // Linux refuses `mount -o remount,ro` while a process holds files open for writing
    // (the log, the manifest: EBUSY), so the server runs as nobody and loses write
    // permission on its directory instead (chmod does not stop root).
    const data2 = join(mnt, "data2");
    const nobody = { uid: 65534, gid: 65534 };
    server = await startServer(data2, [], nobody);
    client = new KvClient(server.address);
    const mine = new Map<string, string>();
    await client.put("rw", "1");
    mine.set("rw", "1");
    chmodSync(data2, 0o500);
    // Enough to fill the 4 MiB memtable: its switch must create a new log, and cannot.
    let refused: unknown;
    const value = "p".repeat(64 * 1024);
    for (let i = 0; i < 200 && refused === undefined; i++) {
      await client.put(`big${i}`, value).then(
        () => mine.set(`big${i}`, value),
        (err: unknown) => {
          refused = err;
        },
      );
    }
    assert.ok(isKvClientError(refused), String(refused));
    assert.equal(refused.code, status.UNAVAILABLE, refused.message);
    await waitFor(async () => (await healthOf(server!.address)) === NOT_SERVING, "NOT_SERVING");
    assert.equal((await client.get("rw"))?.toString(), "1");
    chmodSync(data2, 0o700);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(await healthOf(server.address), NOT_SERVING, "no recovery from EACCES");
    await assert.rejects(client.put("still", "x"), (err) => {
      assert.ok(isKvClientError(err) && err.code === status.UNAVAILABLE, String(err));
      return true;
    });
    assert.match(server.stderr(), /"event":"log-failed","op":"switch"/);
    client.close();
    client = undefined;
    await server.stop();
    server = await startServer(data2, [], nobody);
    client = new KvClient(server.address);
    assert.equal(await healthOf(server.address), SERVING);
    await client.put("restarted", "1");
    for (const [k, v] of mine) assert.equal((await client.get(k))?.toString(), v, k);
  });
});

if (reason !== undefined) {
  test(`a real 20 MiB tmpfs: skipped (${reason})`, { skip: reason }, () => {});
}
