import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LockHeldError } from "../../src/vfs/file-system.js";
import { MemoryFileSystem, SECTOR_SIZE } from "../../src/vfs/memory-file-system.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

function bytes(text: string): Uint8Array {
  return enc.encode(text);
}

function text(fs: MemoryFileSystem, path: string): string {
  return dec.decode(fs.readFile(path));
}

/** A file system with directory "db" durably created. */
async function withDb(): Promise<MemoryFileSystem> {
  const fs = new MemoryFileSystem();
  await fs.mkdir("db");
  await fs.syncDir(".");
  return fs;
}

function errorCode(code: string): (err: unknown) => boolean {
  return (err) => (err as NodeJS.ErrnoException).code === code;
}

describe("MemoryFileSystem basics", () => {
  test("appended bytes read back, and a read at the end returns fewer bytes", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/a");
    w.append(bytes("hello "));
    w.append(bytes("world"));
    assert.equal(w.size, 11);
    await w.close();
    const r = await fs.openReadable("db/a");
    assert.equal(r.size, 11);
    const dst = new Uint8Array(8);
    assert.equal(r.read(dst, 0), 8);
    assert.equal(dec.decode(dst), "hello wo");
    assert.equal(r.read(dst, 8), 3);
    assert.equal(dec.decode(dst.subarray(0, 3)), "rld");
    assert.equal(r.read(dst, 11), 0);
    await r.close();
  });

  test("append copies the caller's buffer", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/a");
    const data = bytes("abc");
    w.append(data);
    data[0] = 0x7a;
    assert.equal(text(fs, "db/a"), "abc");
  });

  test("preallocate keeps the logical size but extends the file with zeros", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    w.append(bytes("abc"));
    w.preallocate(1000);
    assert.equal(w.size, 3);
    assert.equal(await fs.fileSize("db/log"), 1000);
    assert.deepEqual(fs.readFile("db/log").subarray(3), new Uint8Array(997));
    w.append(bytes("de"));
    assert.equal(w.size, 5);
    assert.equal(await fs.fileSize("db/log"), 1000);
    assert.equal(dec.decode(fs.readFile("db/log").subarray(0, 5)), "abcde");
    w.preallocate(10);
    assert.equal(await fs.fileSize("db/log"), 1000);
  });

  test("openWritable with a length appends there and leaves later bytes in place", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("0123456789"));
    const w = await fs.openWritable("db/a", 4);
    assert.equal(w.size, 4);
    w.append(bytes("xy"));
    assert.equal(text(fs, "db/a"), "0123xy6789");
    const tail = await fs.openWritable("db/a");
    assert.equal(tail.size, 10);
  });

  test("truncate cuts the file and sets the size", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/a");
    w.append(bytes("0123456789"));
    w.preallocate(100);
    await w.truncate(4);
    assert.equal(w.size, 4);
    assert.equal(await fs.fileSize("db/a"), 4);
    w.append(bytes("z"));
    assert.equal(text(fs, "db/a"), "0123z");
  });

  test("createWritable on an existing file truncates it", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("old content"));
    const w = await fs.createWritable("db/a");
    assert.equal(w.size, 0);
    assert.equal(await fs.fileSize("db/a"), 0);
  });

  test("rename replaces an existing destination", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("new"));
    fs.writeFile("db/b", bytes("old"));
    await fs.rename("db/a", "db/b");
    assert.equal(await fs.exists("db/a"), false);
    assert.equal(text(fs, "db/b"), "new");
  });

  test("link gives a file a second name; removing one name keeps the other", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("shared"));
    await fs.mkdir("db/copy");
    await fs.link("db/a", "db/copy/a");
    assert.equal(text(fs, "db/copy/a"), "shared");
    await fs.remove("db/a");
    assert.equal(text(fs, "db/copy/a"), "shared");
    fs.writeFile("db/b", bytes("b"));
    await assert.rejects(fs.link("db/b", "db/copy/a"), errorCode("EEXIST"));
    await assert.rejects(fs.link("db/missing", "db/c"), errorCode("ENOENT"));
  });

  test("a link's name survives a crash only after its directory is synced", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("data"));
    await fs.link("db/a", "db/b");
    assert.equal(await fs.crashClone({ unsyncedRetention: 1 }).exists("db/b"), false);
    await fs.syncDir("db");
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    assert.equal(text(crashed, "db/b"), "data");
  });

  test("list returns the sorted names of a directory", async () => {
    const fs = await withDb();
    for (const name of ["c", "a", "B", "b"]) fs.writeFile(`db/${name}`, bytes(name));
    await fs.mkdir("db/sub");
    assert.deepEqual(await fs.list("db"), ["B", "a", "b", "c", "sub"]);
  });

  test("operations inside a missing directory fail with ENOENT", async () => {
    const fs = new MemoryFileSystem();
    await assert.rejects(fs.createWritable("nope/a"), errorCode("ENOENT"));
    await assert.rejects(fs.openReadable("nope/a"), errorCode("ENOENT"));
    await assert.rejects(fs.list("nope"), errorCode("ENOENT"));
    await assert.rejects(fs.syncDir("nope"), errorCode("ENOENT"));
    await assert.rejects(fs.remove("a"), (err: unknown) => {
      assert.equal((err as NodeJS.ErrnoException).code, "ENOENT");
      assert.match((err as Error).message, /'a'/);
      return true;
    });
    assert.equal(await fs.exists("nope/a"), false);
  });

  test("mkdir creates parents, and a file in the way is an error", async () => {
    const fs = new MemoryFileSystem();
    await fs.mkdir("a/b/c");
    await fs.mkdir("a/b/c");
    assert.equal(await fs.exists("a/b/c"), true);
    fs.writeFile("a/f", bytes("x"));
    await assert.rejects(fs.mkdir("a/f"), errorCode("EEXIST"));
    await assert.rejects(fs.mkdir("a/f/g"), errorCode("ENOTDIR"));
    await assert.rejects(fs.list("a/f"), errorCode("ENOTDIR"));
  });

  test("removeDir removes an empty directory only; the removal is durable after syncDir", async () => {
    const fs = await withDb();
    await fs.mkdir("db/sub");
    fs.writeFile("db/sub/f", bytes("x"));
    await fs.syncDir("db");
    await assert.rejects(fs.removeDir("db/sub"), errorCode("ENOTEMPTY"));
    await assert.rejects(fs.removeDir("db/sub/f"), errorCode("ENOTDIR"));
    await assert.rejects(fs.removeDir("db/none"), errorCode("ENOENT"));
    await fs.remove("db/sub/f");
    await fs.removeDir("db/sub");
    assert.equal(await fs.exists("db/sub"), false);
    assert.deepEqual(await fs.crashClone({ unsyncedRetention: 1 }).list("db"), ["sub"]);
    await fs.syncDir("db");
    assert.deepEqual(await fs.crashClone({ unsyncedRetention: 1 }).list("db"), []);
  });

  test("a closed file refuses appends, and closing twice is harmless", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/a");
    await w.close();
    await w.close();
    assert.throws(() => w.append(bytes("x")), errorCode("EBADF"));
    await assert.rejects(w.datasync(), errorCode("EBADF"));
    const r = await fs.openReadable("db/a");
    await r.close();
    await r.close();
    assert.throws(() => r.read(new Uint8Array(1), 0), errorCode("EBADF"));
  });

  test("a readable file sees the content at read time", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/a");
    w.append(bytes("ab"));
    const r = await fs.openReadable("db/a");
    w.append(bytes("cd"));
    const dst = new Uint8Array(4);
    assert.equal(r.read(dst, 0), 4);
    assert.equal(dec.decode(dst), "abcd");
  });

  test("a second lock on the same path fails until the first is released", async () => {
    const fs = await withDb();
    const lock = await fs.lock("db/LOCK");
    assert.equal(await fs.exists("db/LOCK"), true);
    await assert.rejects(fs.lock("db/LOCK"), (err: unknown) => {
      assert.ok(err instanceof LockHeldError);
      assert.equal(err.code, "ELOCKED");
      return true;
    });
    await lock.release();
    await lock.release();
    const again = await fs.lock("db/LOCK");
    await again.release();
  });
});

describe("MemoryFileSystem crash clones", () => {
  test("with retention 0 only synced data survives", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    w.append(bytes("synced"));
    await w.datasync();
    w.append(bytes("+lost"));
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    assert.equal(text(crashed, "db/log"), "synced");
    assert.equal(text(fs, "db/log"), "synced+lost");
  });

  test("with retention 1 every unsynced write survives", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    w.append(bytes("a".repeat(2000)));
    w.append(bytes("b".repeat(3000)));
    const crashed = fs.crashClone({ unsyncedRetention: 1, seed: 7 });
    assert.deepEqual(crashed.readFile("db/log"), fs.readFile("db/log"));
  });

  test("names created after the last syncDir are gone after a crash", async () => {
    const fs = await withDb();
    fs.writeFile("db/old", bytes("x"));
    const w = await fs.createWritable("db/new");
    w.append(bytes("data"));
    await w.sync();
    await fs.mkdir("db/subdir");
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    assert.deepEqual(await crashed.list("db"), ["old"]);
  });

  test("a directory created but not synced in its parent is gone after a crash", async () => {
    const fs = new MemoryFileSystem();
    await fs.mkdir("db");
    fs.writeFile("db/a", bytes("x"));
    await fs.syncDir("db");
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    assert.equal(await crashed.exists("db"), false);
  });

  test("a rename not followed by syncDir is reverted by a crash", async () => {
    const fs = await withDb();
    fs.writeFile("db/CURRENT", bytes("v1"));
    fs.writeFile("db/CURRENT.tmp", bytes("v2"));
    await fs.rename("db/CURRENT.tmp", "db/CURRENT");
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    assert.equal(text(crashed, "db/CURRENT"), "v1");
    assert.equal(text(crashed, "db/CURRENT.tmp"), "v2");
    await fs.syncDir("db");
    const after = fs.crashClone({ unsyncedRetention: 1 });
    assert.deepEqual(await after.list("db"), ["CURRENT"]);
    assert.equal(text(after, "db/CURRENT"), "v2");
  });

  test("a removed file whose directory was not synced comes back after a crash", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("keep me"));
    await fs.remove("db/a");
    assert.equal(await fs.exists("db/a"), false);
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    assert.equal(text(crashed, "db/a"), "keep me");
    await fs.syncDir("db");
    assert.equal(await fs.crashClone({ unsyncedRetention: 0 }).exists("db/a"), false);
  });

  test("datasynced data of a file whose name was dir-synced survives a crash", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/000001.log");
    await fs.syncDir("db");
    w.append(bytes("record-1"));
    await w.datasync();
    w.append(bytes("record-2"));
    await w.datasync();
    const crashed = fs.crashClone({ unsyncedRetention: 0, seed: 3 });
    assert.equal(text(crashed, "db/000001.log"), "record-1record-2");
  });

  test("datasynced data of a file whose name was never dir-synced is lost", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/000001.log");
    w.append(bytes("record-1"));
    await w.datasync();
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    assert.equal(await crashed.exists("db/000001.log"), false);
  });

  test("an unsynced truncation is reverted with retention 0 and kept with retention 1", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("0123456789"));
    const w = await fs.openWritable("db/a");
    await w.truncate(3);
    assert.equal(text(fs.crashClone({ unsyncedRetention: 0 }), "db/a"), "0123456789");
    assert.equal(text(fs.crashClone({ unsyncedRetention: 1 }), "db/a"), "012");
  });

  test("unsynced preallocation is lost with retention 0", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    w.append(bytes("abc"));
    await w.datasync();
    w.preallocate(4096);
    assert.equal(await fs.crashClone({ unsyncedRetention: 0 }).fileSize("db/log"), 3);
    assert.equal(await fs.crashClone({ unsyncedRetention: 1 }).fileSize("db/log"), 4096);
  });

  test("the clone is independent of the original", async () => {
    const fs = await withDb();
    fs.writeFile("db/a", bytes("original"));
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    const w = await crashed.openWritable("db/a");
    w.append(bytes("+clone"));
    await crashed.rename("db/a", "db/b");
    fs.writeFile("db/c", bytes("only in original"));
    assert.equal(text(fs, "db/a"), "original");
    assert.deepEqual(await fs.list("db"), ["a", "c"]);
    assert.equal(text(crashed, "db/b"), "original+clone");
    assert.deepEqual(await crashed.list("db"), ["b"]);
  });

  test("locks are not carried into a clone", async () => {
    const fs = await withDb();
    await fs.lock("db/LOCK");
    await fs.syncDir("db");
    const crashed = fs.crashClone({ unsyncedRetention: 1 });
    const lock = await crashed.lock("db/LOCK");
    await lock.release();
  });

  test("with retention 0.5 the same seed gives the same crash state", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    for (let i = 0; i < 64; i++) w.append(new Uint8Array(700).fill(i + 1));
    const outcomes = new Set<string>();
    for (let seed = 0; seed < 8; seed++) {
      const a = fs.crashClone({ unsyncedRetention: 0.5, seed }).readFile("db/log");
      const b = fs.crashClone({ unsyncedRetention: 0.5, seed }).readFile("db/log");
      assert.deepEqual(a, b);
      outcomes.add(Buffer.from(a).toString("base64"));
    }
    assert.ok(outcomes.size > 1, "different seeds should give different outcomes");
  });

  test("a torn write keeps only a prefix ending at a sector boundary", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    const data = new Uint8Array(8 * SECTOR_SIZE).map((_, i) => (i % 251) + 1);
    w.append(data);
    let torn = 0;
    for (let seed = 0; seed < 32; seed++) {
      const crashed = fs.crashClone({ unsyncedRetention: 0.5, seed, tornWriteProbability: 1 });
      const got = crashed.readFile("db/log");
      if (got.length === 0) continue;
      assert.equal(got.length % SECTOR_SIZE, 0);
      assert.ok(got.length < data.length);
      assert.deepEqual(got, data.subarray(0, got.length));
      torn++;
    }
    assert.ok(torn > 0);
  });

  test("with appendsSurviveAsPrefix unsynced appends survive as a prefix", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    w.append(new Uint8Array(100).fill(0xff));
    await w.datasync();
    for (let i = 0; i < 64; i++) w.append(new Uint8Array(700).fill(i + 1));
    const live = fs.readFile("db/log");
    const lengths = new Set<number>();
    for (let seed = 0; seed < 32; seed++) {
      const got = fs
        .crashClone({ unsyncedRetention: 0.9, seed, appendsSurviveAsPrefix: true })
        .readFile("db/log");
      assert.ok(got.length >= 100);
      assert.deepEqual(got, live.subarray(0, got.length));
      lengths.add(got.length);
    }
    assert.ok(lengths.size > 1);
  });

  test("without appendsSurviveAsPrefix a later append can survive a lost earlier one", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    for (let i = 0; i < 16; i++) w.append(new Uint8Array(SECTOR_SIZE).fill(i + 1));
    const live = fs.readFile("db/log");
    let holes = 0;
    for (let seed = 0; seed < 16; seed++) {
      const got = fs.crashClone({ unsyncedRetention: 0.5, seed }).readFile("db/log");
      if (!Buffer.from(got).equals(Buffer.from(live.subarray(0, got.length)))) holes++;
    }
    assert.ok(holes > 0);
  });

  test("dropUnsyncedWrites reverts a file to its synced content", async () => {
    const fs = await withDb();
    const w = await fs.createWritable("db/log");
    w.append(bytes("durable"));
    await w.datasync();
    w.append(bytes("+dirty"));
    fs.dropUnsyncedWrites(w);
    assert.equal(text(fs, "db/log"), "durable");
    w.append(bytes("x"));
    await w.datasync();
    fs.dropUnsyncedWrites("db/log");
    assert.equal(await fs.fileSize("db/log"), "durable+dirty".length + 1);
  });

  test("writeFile fixtures are durable and snapshotFiles lists every file", async () => {
    const fs = await withDb();
    await fs.mkdir("db/sub");
    await fs.syncDir("db");
    fs.writeFile("db/a", bytes("A"));
    fs.writeFile("db/sub/b", bytes("B"));
    const crashed = fs.crashClone({ unsyncedRetention: 0 });
    const files = crashed.snapshotFiles();
    assert.deepEqual([...files.keys()], ["db/a", "db/sub/b"]);
    assert.equal(dec.decode(files.get("db/sub/b")), "B");
  });
});
