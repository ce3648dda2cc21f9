import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  type FileOp,
  InjectedFaultError,
} from "../../src/vfs/fault-injecting-file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";

const enc = new TextEncoder();
const dec = new TextDecoder();

async function setup(
  options: ConstructorParameters<typeof FaultInjectingFileSystem>[1] = {},
): Promise<{ mem: MemoryFileSystem; fs: FaultInjectingFileSystem }> {
  const mem = new MemoryFileSystem();
  await mem.mkdir("db");
  await mem.syncDir(".");
  return { mem, fs: new FaultInjectingFileSystem(mem, options) };
}

function isEio(err: unknown): boolean {
  return err instanceof InjectedFaultError && err.code === "EIO";
}

const isAppend = (op: FileOp): boolean => op.kind === "append";

describe("FaultInjectingFileSystem", () => {
  test("failNth fails exactly the nth matching operation and no other", async () => {
    const { mem, fs } = await setup({ injector: FaultInjectingFileSystem.failNth(1, isAppend) });
    const w = await fs.createWritable("db/a");
    w.append(enc.encode("one,"));
    assert.throws(() => w.append(enc.encode("two,")), isEio);
    w.append(enc.encode("three"));
    w.append(enc.encode("!"));
    assert.equal(dec.decode(mem.readFile("db/a")), "one,three!");
  });

  test("a failed append writes nothing and leaves the size unchanged", async () => {
    const { mem, fs } = await setup({ injector: FaultInjectingFileSystem.failWhere(isAppend) });
    const w = await fs.createWritable("db/a");
    assert.throws(
      () => w.append(enc.encode("data")),
      (err: unknown) => {
        assert.ok(isEio(err));
        assert.match((err as Error).message, /append/);
        assert.match((err as Error).message, /db\/a/);
        return true;
      },
    );
    assert.equal(w.size, 0);
    assert.equal(mem.readFile("db/a").length, 0);
  });

  test("asynchronous operations reject and are not performed", async () => {
    const { mem, fs } = await setup({
      injector: FaultInjectingFileSystem.failWhere((op) => op.kind === "rename"),
    });
    mem.writeFile("db/a", enc.encode("x"));
    await assert.rejects(fs.rename("db/a", "db/b"), isEio);
    assert.deepEqual(await mem.list("db"), ["a"]);
  });

  test("an injector returning an Error fails the operation with that error", async () => {
    const custom = Object.assign(new Error("disk full"), { code: "ENOSPC" });
    const { fs } = await setup({
      injector: (op) => (op.kind === "createWritable" ? custom : undefined),
    });
    await assert.rejects(fs.createWritable("db/a"), (err: unknown) => err === custom);
    assert.equal(await fs.exists("db/a"), false);
  });

  test("setInjector replaces and clears the injector at runtime", async () => {
    const { fs } = await setup();
    const w = await fs.createWritable("db/a");
    fs.setInjector(FaultInjectingFileSystem.failWhere(isAppend));
    assert.throws(() => w.append(enc.encode("x")), isEio);
    assert.throws(() => w.append(enc.encode("x")), isEio);
    fs.setInjector(undefined);
    w.append(enc.encode("x"));
    assert.equal(w.size, 1);
  });

  test("counts every operation per kind and in total, failed ones included", async () => {
    const { fs } = await setup({ injector: FaultInjectingFileSystem.failNth(0, isAppend) });
    const w = await fs.createWritable("db/a");
    assert.throws(() => w.append(enc.encode("x")));
    w.append(enc.encode("y"));
    w.preallocate(100);
    await w.datasync();
    await w.close();
    await fs.syncDir("db");
    const r = await fs.openReadable("db/a");
    r.read(new Uint8Array(1), 0);
    await r.close();
    assert.equal(fs.count("append"), 2);
    assert.equal(fs.counts.close, 2);
    assert.equal(fs.count("createWritable"), 1);
    assert.equal(fs.count("datasync"), 1);
    assert.equal(fs.count("preallocate"), 1);
    assert.equal(fs.count("syncDir"), 1);
    assert.equal(fs.count("openReadable"), 1);
    assert.equal(fs.count("read"), 1);
    assert.equal(fs.count("sync"), 0);
    assert.equal(fs.opCount, 10);
  });

  test("onOp sees every operation in order with its index", async () => {
    const seen: Array<[number, FileOp]> = [];
    const { fs } = await setup({ onOp: (op, index) => seen.push([index, op]), keepLog: true });
    const w = await fs.createWritable("db/a");
    w.append(enc.encode("abc"));
    w.append(enc.encode("de"));
    await w.datasync();
    await fs.rename("db/a", "db/b");
    assert.deepEqual(seen, [
      [0, { kind: "createWritable", path: "db/a" }],
      [1, { kind: "append", path: "db/a", offset: 0, length: 3 }],
      [2, { kind: "append", path: "db/a", offset: 3, length: 2 }],
      [3, { kind: "datasync", path: "db/a" }],
      [4, { kind: "rename", path: "db/a", to: "db/b" }],
    ]);
    assert.deepEqual(
      fs.log,
      seen.map(([, op]) => op),
    );
  });

  test("onOp can crash-clone the wrapped file system exactly before an operation", async () => {
    let beforeSync: MemoryFileSystem | undefined;
    const { mem, fs } = await setup({
      onOp: (op) => {
        if (op.kind === "datasync") beforeSync = mem.crashClone({ unsyncedRetention: 0 });
      },
    });
    const w = await fs.createWritable("db/log");
    await fs.syncDir("db");
    w.append(enc.encode("record"));
    await w.datasync();
    assert.ok(beforeSync !== undefined);
    assert.equal(beforeSync.readFile("db/log").length, 0);
    assert.equal(dec.decode(mem.crashClone({ unsyncedRetention: 0 }).readFile("db/log")), "record");
  });

  test("a failed datasync drops the file's unsynced writes when configured", async () => {
    const { mem, fs } = await setup({
      injector: FaultInjectingFileSystem.failWhere((op) => op.kind === "datasync"),
      dropUnsyncedOnSyncFailure: true,
    });
    mem.writeFile("db/log", enc.encode("durable"));
    const w = await fs.openWritable("db/log");
    w.append(enc.encode("+dirty"));
    await assert.rejects(w.datasync(), isEio);
    assert.equal(dec.decode(mem.readFile("db/log")), "durable");
  });

  test("a failed datasync keeps unsynced writes by default", async () => {
    const { mem, fs } = await setup({
      injector: FaultInjectingFileSystem.failWhere((op) => op.kind === "sync"),
    });
    mem.writeFile("db/log", enc.encode("durable"));
    const w = await fs.openWritable("db/log");
    w.append(enc.encode("+dirty"));
    await assert.rejects(w.sync(), isEio);
    assert.equal(dec.decode(mem.readFile("db/log")), "durable+dirty");
    assert.equal(
      dec.decode(mem.crashClone({ unsyncedRetention: 0 }).readFile("db/log")),
      "durable",
    );
  });

  test("failed reads throw synchronously and do not fill the buffer", async () => {
    const { mem, fs } = await setup({
      injector: FaultInjectingFileSystem.failNth(0, (op) => op.kind === "read"),
    });
    mem.writeFile("db/a", enc.encode("abc"));
    const r = await fs.openReadable("db/a");
    const dst = new Uint8Array(3);
    assert.throws(() => r.read(dst, 0), isEio);
    assert.deepEqual(dst, new Uint8Array(3));
    assert.equal(r.read(dst, 0), 3);
    assert.equal(dec.decode(dst), "abc");
  });
});
