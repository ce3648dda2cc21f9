import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import * as nodeFs from "node:fs";
import * as os from "node:os";
import * as nodePath from "node:path";
import { describe, test } from "node:test";
import { LockHeldError } from "../../src/vfs/file-system.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A fresh temporary directory, removed after the test. */
function tempDir(t: { after(fn: () => void): void }): string {
  const dir = nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "kv-vfs-"));
  t.after(() => nodeFs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function readAll(path: string): Uint8Array {
  return new Uint8Array(nodeFs.readFileSync(path));
}

function isLockHeld(err: unknown): boolean {
  return err instanceof LockHeldError && err.code === "ELOCKED";
}

describe("RealFileSystem", () => {
  const fs = new RealFileSystem();

  test("appended bytes read back, and a read at the end returns fewer bytes", async (t) => {
    const path = `${tempDir(t)}/a`;
    const w = await fs.createWritable(path);
    w.append(enc.encode("hello "));
    w.append(enc.encode("world"));
    assert.equal(w.size, 11);
    await w.datasync();
    await w.close();
    const r = await fs.openReadable(path);
    assert.equal(r.size, 11);
    const dst = new Uint8Array(16);
    assert.equal(r.read(dst, 0), 11);
    assert.equal(dec.decode(dst.subarray(0, 11)), "hello world");
    assert.equal(r.read(dst, 6), 5);
    assert.equal(r.read(dst, 11), 0);
    await r.close();
  });

  test("a large append and read transfer every byte", async (t) => {
    const path = `${tempDir(t)}/big`;
    const data = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => i % 253);
    const w = await fs.createWritable(path);
    w.append(data);
    await w.sync();
    await w.close();
    const r = await fs.openReadable(path);
    const dst = new Uint8Array(data.length);
    assert.equal(r.read(dst, 0), data.length);
    assert.deepEqual(dst, data);
    await r.close();
  });

  test("preallocate keeps the logical size but extends the file with zeros", async (t) => {
    const path = `${tempDir(t)}/log`;
    const w = await fs.createWritable(path);
    w.append(enc.encode("abc"));
    const target = 2 * 1024 * 1024 + 5;
    w.preallocate(target);
    assert.equal(w.size, 3);
    assert.equal(await fs.fileSize(path), target);
    w.append(enc.encode("de"));
    assert.equal(w.size, 5);
    assert.equal(await fs.fileSize(path), target);
    w.preallocate(100);
    assert.equal(await fs.fileSize(path), target);
    await w.close();
    const content = readAll(path);
    assert.equal(dec.decode(content.subarray(0, 5)), "abcde");
    assert.ok(content.subarray(5).every((b) => b === 0));
  });

  test("openWritable with a length appends there and leaves later bytes in place", async (t) => {
    const path = `${tempDir(t)}/a`;
    nodeFs.writeFileSync(path, "0123456789");
    const w = await fs.openWritable(path, 4);
    assert.equal(w.size, 4);
    w.append(enc.encode("xy"));
    assert.equal(w.size, 6);
    await w.close();
    assert.equal(nodeFs.readFileSync(path, "utf8"), "0123xy6789");
    const tail = await fs.openWritable(path);
    assert.equal(tail.size, 10);
    tail.append(enc.encode("!"));
    await tail.close();
    assert.equal(nodeFs.readFileSync(path, "utf8"), "0123xy6789!");
  });

  test("removeDir removes an empty directory and refuses a full one", async (t) => {
    const dir = `${tempDir(t)}/sub`;
    await fs.mkdir(dir);
    await (await fs.createWritable(`${dir}/f`)).close();
    await assert.rejects(
      fs.removeDir(dir),
      (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOTEMPTY",
    );
    await fs.remove(`${dir}/f`);
    await fs.removeDir(dir);
    assert.equal(await fs.exists(dir), false);
  });

  test("openWritable of a missing file fails with ENOENT", async (t) => {
    await assert.rejects(
      fs.openWritable(`${tempDir(t)}/missing`),
      (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT",
    );
  });

  test("truncate cuts the file and sets the size", async (t) => {
    const path = `${tempDir(t)}/a`;
    const w = await fs.createWritable(path);
    w.append(enc.encode("0123456789"));
    w.preallocate(4096);
    await w.truncate(4);
    assert.equal(w.size, 4);
    assert.equal(await fs.fileSize(path), 4);
    w.append(enc.encode("z"));
    w.preallocate(8);
    assert.equal(await fs.fileSize(path), 8);
    await w.close();
    assert.deepEqual(readAll(path), new Uint8Array([48, 49, 50, 51, 122, 0, 0, 0]));
  });

  test("rename replaces an existing destination", async (t) => {
    const dir = tempDir(t);
    nodeFs.writeFileSync(`${dir}/a`, "new");
    nodeFs.writeFileSync(`${dir}/b`, "old");
    await fs.rename(`${dir}/a`, `${dir}/b`);
    await fs.syncDir(dir);
    assert.equal(await fs.exists(`${dir}/a`), false);
    assert.equal(nodeFs.readFileSync(`${dir}/b`, "utf8"), "new");
  });

  test("list returns sorted names, and remove deletes a file", async (t) => {
    const dir = tempDir(t);
    for (const name of ["c", "a", "B", "b"]) nodeFs.writeFileSync(`${dir}/${name}`, name);
    assert.deepEqual(await fs.list(dir), ["B", "a", "b", "c"]);
    await fs.remove(`${dir}/a`);
    assert.deepEqual(await fs.list(dir), ["B", "b", "c"]);
    await assert.rejects(
      fs.remove(`${dir}/a`),
      (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT",
    );
  });

  test("exists and fileSize report files and directories", async (t) => {
    const dir = tempDir(t);
    nodeFs.writeFileSync(`${dir}/f`, "12345");
    assert.equal(await fs.exists(dir), true);
    assert.equal(await fs.exists(`${dir}/f`), true);
    assert.equal(await fs.exists(`${dir}/nope`), false);
    assert.equal(await fs.exists(`${dir}/f/below-a-file`), false);
    assert.equal(await fs.fileSize(`${dir}/f`), 5);
  });

  test("files are created with mode 0600 and directories with mode 0700", async (t) => {
    const dir = tempDir(t);
    await fs.mkdir(`${dir}/x/y`);
    await fs.mkdir(`${dir}/x/y`);
    const w = await fs.createWritable(`${dir}/x/y/f`);
    await w.close();
    const lock = await fs.lock(`${dir}/x/LOCK`);
    await lock.release();
    assert.equal(nodeFs.statSync(`${dir}/x`).mode & 0o777, 0o700);
    assert.equal(nodeFs.statSync(`${dir}/x/y`).mode & 0o777, 0o700);
    assert.equal(nodeFs.statSync(`${dir}/x/y/f`).mode & 0o777, 0o600);
    assert.equal(nodeFs.statSync(`${dir}/x/LOCK`).mode & 0o777, 0o600);
  });

  test("closing twice is harmless and a closed file refuses appends", async (t) => {
    const path = `${tempDir(t)}/a`;
    const w = await fs.createWritable(path);
    await w.close();
    await w.close();
    assert.throws(
      () => w.append(enc.encode("x")),
      (err: unknown) => (err as NodeJS.ErrnoException).code === "EBADF",
    );
    const r = await fs.openReadable(path);
    await r.close();
    await r.close();
  });

  test("a second lock in the same process fails until the first is released", async (t) => {
    const path = `${tempDir(t)}/LOCK`;
    const lock = await fs.lock(path);
    await assert.rejects(fs.lock(path), isLockHeld);
    await lock.release();
    await lock.release();
    const again = await fs.lock(path);
    await again.release();
  });

  for (const viaPackage of [false, true]) {
    const how = viaPackage ? "the package's entry point" : "the prebuilt addon";
    test(`a lock held by a child process (through ${how}) blocks the parent until the child is killed`, async (t) => {
      const path = `${tempDir(t)}/LOCK`;
      const moduleUrl = new URL("../../src/vfs/real-file-system.js", import.meta.url).href;
      const script = [
        `const { RealFileSystem } = await import(${JSON.stringify(moduleUrl)});`,
        `await new RealFileSystem().lock(${JSON.stringify(path)});`,
        `console.log("locked");`,
        "setInterval(() => {}, 60_000);",
      ].join("\n");
      const env = { ...process.env };
      if (viaPackage) env["KV_LOCK_VIA_PACKAGE"] = "1";
      else delete env["KV_LOCK_VIA_PACKAGE"];
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
        stdio: ["ignore", "pipe", "pipe"],
        env,
      });
      const exited = once(child, "exit");
      t.after(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      });
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
      });
      let stdout = "";
      await new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
          stdout += chunk;
          if (stdout.includes("locked")) resolve();
        });
        child.on("exit", (code) => reject(new Error(`child exited (${code}): ${stderr}`)));
      });

      await assert.rejects(fs.lock(path), isLockHeld);
      child.kill("SIGKILL");
      await exited;
      const lock = await fs.lock(path);
      await lock.release();
    });
  }
});
