/**
 * A worker thread's file operations through the lockstep channel (src/vfs/
 * file-system-host.ts, file-system-proxy.ts, thread-file-system.ts): every operation of the
 * interface gives the worker what it gives the main thread, errors cross with their name,
 * message, code, syscall and path, the main thread's file system sees the same operations
 * in the same order as when the main thread runs them, interleaving with the main
 * thread's own operations is the same in every run, and a worker that dies stops the host.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Worker } from "node:worker_threads";
import { FaultInjectingFileSystem, MemoryFileSystem } from "../../src/index.js";
import type { FileSystem } from "../../src/vfs/file-system.js";
import {
  FileSystemChannelClosedError,
  type FileSystemHost,
} from "../../src/vfs/file-system-host.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";
import { shareFileSystem } from "../../src/vfs/thread-file-system.js";
import { script } from "../fixtures/proxy-fs-script.js";
import { text } from "../support/bytes.js";
import { describeOp } from "../support/crash-points.js";

const WORKER = new URL("../fixtures/proxy-fs-worker.js", import.meta.url);

/** Starts the fixture worker on `fs`; returns its host and the worker. */
function startWorker(
  fs: FileSystem,
  mode: "script" | "throw",
): { host: FileSystemHost; worker: Worker } {
  const shared = shareFileSystem(fs);
  assert.ok(shared.host !== undefined);
  const worker = new Worker(WORKER, {
    workerData: { spec: shared.spec, mode },
    transferList: shared.transfer,
  });
  return { host: shared.host, worker };
}

/** The fixture script on a worker thread over `fs`: its results, or what it threw. */
async function scriptInWorker(fs: FileSystem): Promise<unknown[]> {
  const { host, worker } = startWorker(fs, "script");
  try {
    const message = (await host.nextMessage()) as {
      results?: unknown[];
      error?: { name: string; message: string; code?: string };
    };
    if (message.error !== undefined) {
      throw Object.assign(new Error(message.error.message), message.error);
    }
    return message.results!;
  } finally {
    host.close();
    await worker.terminate();
  }
}

describe("a worker's file system through the lockstep channel", () => {
  test("every operation gives what it gives on the main thread, in the same order", async () => {
    const direct = new FaultInjectingFileSystem(new MemoryFileSystem(), { keepLog: true });
    const expected = await script(direct);
    const proxied = new FaultInjectingFileSystem(new MemoryFileSystem(), { keepLog: true });
    const actual = await scriptInWorker(proxied);
    assert.deepEqual(actual, expected);
    assert.deepEqual(proxied.log.map(describeOp), direct.log.map(describeOp));
    const mem = proxied.inner as MemoryFileSystem;
    assert.equal(text(mem.readFile("/p/a.txt")), "hel");
    // The failures crossed with their fields.
    const failures = (expected as [string, unknown][]).filter(([what]) =>
      ["second lock", "remove missing", "open missing"].includes(what),
    );
    assert.equal(failures.length, 3);
    for (const [, result] of failures) {
      assert.ok((result as { failed?: { code?: string } }).failed?.code !== undefined);
    }
  });

  test("an injected fault reaches the worker's call as the main thread's error", async () => {
    const failAppend = () =>
      new FaultInjectingFileSystem(new MemoryFileSystem(), {
        injector: FaultInjectingFileSystem.failNth(1, (op) => op.kind === "append"),
      });
    const expected = await script(failAppend()).catch((err: unknown) => err);
    const actual = await scriptInWorker(failAppend()).catch((err: unknown) => err);
    // The script does not catch append failures: both runs end with the same error.
    const fields = (e: unknown) => {
      const { name, message, code } = e as NodeJS.ErrnoException;
      return { name, message, code };
    };
    assert.deepEqual(fields(actual), fields(expected));
    assert.deepEqual(fields(expected), {
      name: "InjectedFaultError",
      message: "EIO: injected fault, append '/p/a.txt'",
      code: "EIO",
    });
  });

  test("the main thread's own operations interleave the same way in every run", async () => {
    const run = async (): Promise<string[]> => {
      const fs = new FaultInjectingFileSystem(new MemoryFileSystem(), { keepLog: true });
      await fs.mkdir("/m");
      const { host, worker } = startWorker(fs, "script");
      // A main-thread writer that keeps doing operations while the worker runs.
      let stop = false;
      const mainWriter = (async () => {
        const f = await fs.createWritable("/m/log");
        for (let i = 0; !stop; i++) {
          f.append(new Uint8Array([i & 0xff]));
          await f.datasync();
        }
        await f.close();
      })();
      try {
        await host.nextMessage();
      } finally {
        stop = true;
        host.close();
        await worker.terminate();
      }
      await mainWriter;
      return fs.log.map(describeOp);
    };
    const first = await run();
    // The two threads' operations are interleaved, not one block after the other.
    const worker = first.flatMap((op, i) => (op.includes(" /p/") ? [i] : []));
    const mainBetween = first
      .slice(worker[0], worker.at(-1))
      .filter((op) => op.includes(" /m/log")).length;
    assert.ok(worker.length > 20 && mainBetween > 0, `${mainBetween} main operations in between`);
    for (let i = 0; i < 3; i++) assert.deepEqual(await run(), first, `run ${i + 2}`);
  });

  test("a worker that dies makes the host stop with FileSystemChannelClosedError", async () => {
    const mem = new MemoryFileSystem();
    const { host, worker } = startWorker(mem, "throw");
    worker.on("error", () => {});
    await assert.rejects(host.nextMessage(), FileSystemChannelClosedError);
    assert.ok(await mem.exists("/t"), "the operation before the failure was performed");
    host.close();
    await worker.terminate();
  });

  test("the real file system is rebuilt on the thread, not proxied", () => {
    const shared = shareFileSystem(new RealFileSystem());
    assert.deepEqual(shared.spec, { kind: "real" });
    assert.equal(shared.host, undefined);
    assert.deepEqual(shared.transfer, []);
  });
});
