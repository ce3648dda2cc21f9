import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import {
  CompactionAbortedError,
  type CompactionJob,
  runCompaction,
} from "../../src/compaction/compaction-job.js";
import { writeLevel0Table } from "../../src/compaction/level0-table.js";
import { compactionJob, outputNumbersNeeded, planRange } from "../../src/compaction/picker.js";
import { CompactionWorker } from "../../src/compaction/worker-pool.js";
import { deserializeError, serializeError } from "../../src/compaction/worker-protocol.js";
import { KvError } from "../../src/errors.js";
import { Memtable } from "../../src/memtable/memtable.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { tableFilePath } from "../../src/version/file-names.js";
import { Version } from "../../src/version/version.js";
import { FaultInjectingFileSystem } from "../../src/vfs/fault-injecting-file-system.js";
import type { FileSystem } from "../../src/vfs/file-system.js";
import { MemoryFileSystem } from "../../src/vfs/memory-file-system.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";
import { describeOp } from "../support/crash-points.js";
import { rejectsWithCode } from "../support/errors.js";
import { tempDir } from "../support/temp-dir.js";
import { del, type Entry, put, rng, writeTable } from "./helpers.js";

const fs = new RealFileSystem();
const dirs: Array<{ remove: () => void }> = [];
after(() => {
  for (const d of dirs) d.remove();
});

const key = (i: number) => `key${String(i).padStart(7, "0")}`;

/** Level-0 tables of `perFile` random entries each in a fresh temp dir; the job compacting them. */
async function setup(files: number, perFile: number, seed = 1) {
  const dir = tempDir("kv-compaction-");
  dirs.push(dir);
  const r = rng(seed);
  const l0: FileMetadata[] = [];
  let seq = 1;
  for (let f = 0; f < files; f++) {
    const entries: Entry[] = [];
    for (let i = 0; i < perFile; i++) {
      const k = key(Math.floor(r() * perFile * 2));
      entries.push(r() < 0.1 ? del(k, seq++) : put(k, seq++, `value-${seq}-${"x".repeat(20)}`));
    }
    l0.unshift(await writeTable(fs, dir.path, f + 1, entries));
  }
  const levels: FileMetadata[][] = [l0, [], [], [], [], [], []];
  const version = new Version(levels);
  const plan = planRange(version, 0, undefined, undefined, { targetFileSize: 64 * 1024 })!;
  const job: CompactionJob = compactionJob(plan, {
    dir: dir.path,
    snapshots: [Math.floor(seq / 2)],
    outputNumbers: Array.from(
      { length: outputNumbersNeeded(plan, { targetFileSize: 64 * 1024 }) },
      (_, i) => 1000 + i,
    ),
    tableOptions: {},
    verifyChecksums: true,
    options: { targetFileSize: 64 * 1024 },
  });
  return { dir: dir.path, job };
}

describe("CompactionWorker", () => {
  test("runs a job on the real file system with the same result as inline", async () => {
    const a = await setup(4, 5000);
    const b = await setup(4, 5000);
    const inline = await runCompaction(fs, a.job);
    const worker = new CompactionWorker();
    try {
      const threaded = await worker.run(b.job);
      assert.deepEqual(threaded, inline);
      assert.ok(threaded.outputs.length > 1);
      for (const f of inline.outputs) {
        assert.deepEqual(
          readFileSync(tableFilePath(b.dir, f.number)),
          readFileSync(tableFilePath(a.dir, f.number)),
        );
      }
      // The thread is reused, and errors come back as KvErrors.
      const missing = { ...b.job, dir: `${b.dir}/nowhere` };
      await rejectsWithCode(worker.run(missing), "IO_ERROR", { message: /nowhere/ });
    } finally {
      await worker.terminate();
    }
  });

  test("terminate during a job rejects it with ABORTED", async () => {
    const { dir, job } = await setup(4, 40000, 2);
    const inputs = readdirSync(dir).sort();
    const worker = new CompactionWorker({ abortGraceMillis: 5000 });
    const running = worker.run(job);
    const outcome = running.then(
      () => undefined,
      (err: unknown) => err,
    );
    // Wait until the job has written an output.
    while (readdirSync(dir).length === inputs.length) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(worker.running, 1);
    await worker.terminate();
    const err = await outcome;
    assert.ok(err instanceof CompactionAbortedError, String(err));
    assert.equal(err.code, "ABORTED");
    assert.equal(worker.running, 0);
    // Within the grace period the job stopped itself and removed its outputs.
    assert.deepEqual(readdirSync(dir).sort(), inputs);
    // A later run starts a new thread.
    const again = await worker.run({
      ...job,
      outputNumbers: job.outputNumbers.map((n) => n + 5000),
    });
    assert.ok(again.outputs.length > 0);
    await worker.terminate();
  });

  test("a thread that dies fails its jobs with IO_ERROR (proxied file system)", async () => {
    const mem = new MemoryFileSystem();
    await mem.mkdir("/db");
    const worker = new CompactionWorker({
      fs: mem,
      workerUrl: new URL("../fixtures/crashing-compaction-worker.js", import.meta.url),
    });
    try {
      const job = await memoryJob(mem, 1);
      await rejectsWithCode(worker.run(job), "IO_ERROR", {
        message: /compaction worker (failed|exited)/,
      });
      assert.equal(worker.running, 0);
    } finally {
      await worker.terminate();
    }
  });

  test("errors cross the thread boundary with their code", () => {
    const kv = deserializeError(
      serializeError(new KvError("CORRUPTION", "bad block", { file: "/x" })),
    );
    assert.ok(kv instanceof KvError);
    assert.equal(kv.code, "CORRUPTION");
    assert.equal(kv.file, "/x");
    assert.ok(
      deserializeError(serializeError(new CompactionAbortedError())) instanceof
        CompactionAbortedError,
    );
    const other = deserializeError(
      serializeError(Object.assign(new Error("boom"), { code: "EIO" })),
    );
    assert.equal((other as Error & { code?: string }).code, "EIO");
    // Name and message as they were: a worker's failure reads like an inline one.
    assert.equal(other.message, "boom");
    assert.equal(other.name, "Error");
  });
});

/** Level-0 tables of random entries on `fs` in /db (two levels deep), and the job compacting them. */
async function memoryJob(fs: FileSystem, seed: number): Promise<CompactionJob> {
  const r = rng(seed);
  const l0: FileMetadata[] = [];
  let seq = 1;
  for (let f = 0; f < 3; f++) {
    const entries: Entry[] = [];
    for (let i = 0; i < 600; i++) {
      const k = key(Math.floor(r() * 900));
      entries.push(r() < 0.15 ? del(k, seq++) : put(k, seq++, `value-${seq}-${"x".repeat(30)}`));
    }
    l0.unshift(await writeTable(fs, "/db", f + 1, entries, { blockSize: 512 }));
  }
  const l1 = [await writeTable(fs, "/db", 4, [put(key(5), 0), put(key(800), 0)])];
  const version = new Version([l0, l1, [], [], [], [], []]);
  const options = { targetFileSize: 8 * 1024 };
  const plan = planRange(version, 0, undefined, undefined, options)!;
  return compactionJob(plan, {
    dir: "/db",
    snapshots: [Math.floor(seq / 3)],
    outputNumbers: Array.from({ length: outputNumbersNeeded(plan, options) }, (_, i) => 100 + i),
    tableOptions: { blockSize: 512 },
    verifyChecksums: true,
    options,
  });
}

/** A fresh in-memory store directory holding the job's inputs (the same bytes each time). */
async function memoryStore(seed: number): Promise<{ mem: MemoryFileSystem; job: CompactionJob }> {
  const mem = new MemoryFileSystem();
  await mem.mkdir("/db");
  return { mem, job: await memoryJob(mem, seed) };
}

/** What a rejected job threw: its class name, name, code, message and file. */
function failure(err: unknown): Record<string, unknown> {
  const e = err as Error & { code?: unknown; file?: unknown };
  return { name: e.name, code: e.code, message: e.message, file: e.file };
}

describe("CompactionWorker on a proxied file system", () => {
  test("a job and a flush give the inline result, byte for byte", async () => {
    const a = await memoryStore(3);
    const inline = await runCompaction(a.mem, a.job);
    const b = await memoryStore(3);
    const worker = new CompactionWorker({ fs: b.mem });
    try {
      const threaded = await worker.run(b.job);
      assert.deepEqual(threaded, inline);
      assert.ok(threaded.outputs.length > 1);
      assert.deepEqual(b.mem.snapshotFiles(), a.mem.snapshotFiles());
      // A flush too.
      const table = new Memtable();
      for (let i = 0; i < 300; i++) table.add(i + 1, 1, Buffer.from(key(i)), Buffer.from("v"));
      const flushOptions = { dir: "/db", path: "/db/000200.sst", number: 200, options: {} };
      const expected = await writeLevel0Table(
        a.mem,
        "/db",
        flushOptions.path,
        200,
        table.image(),
        {},
      );
      const meta = await worker.flush({ ...flushOptions, image: table.image() });
      assert.deepEqual(meta, expected);
      assert.deepEqual(b.mem.readFile(flushOptions.path), a.mem.readFile(flushOptions.path));
    } finally {
      await worker.terminate();
    }
  });

  test("a fault at any file operation of a job rejects it as the inline job, nothing left", async () => {
    const clean = await memoryStore(4);
    const counting = new FaultInjectingFileSystem(clean.mem, { keepLog: true });
    await runCompaction(counting, clean.job);
    const ops = counting.log.map(describeOp);
    assert.ok(ops.length > 20, `${ops.length} operations`);
    let checked = 0;
    for (let n = 0; n < ops.length; n += 6) {
      // The same operation fails in both modes: the k-th with this description (the two
      // modes may order a job's background syncs differently against its merge).
      const target = ops[n]!;
      const k = ops.slice(0, n).filter((d) => d === target).length;
      const results: unknown[] = [];
      for (const threaded of [false, true]) {
        const { mem, job } = await memoryStore(4);
        const before = mem.snapshotFiles();
        let seen = 0;
        const fs = new FaultInjectingFileSystem(mem, {
          injector: (op) => describeOp(op) === target && seen++ === k,
        });
        const w = threaded ? new CompactionWorker({ fs }) : undefined;
        try {
          const outcome = await (w === undefined ? runCompaction(fs, job) : w.run(job)).then(
            () => assert.fail(`${target} #${k}: the job succeeded`),
            failure,
          );
          results.push(outcome);
          assert.deepEqual(mem.snapshotFiles(), before, `${target} #${k}: outputs left behind`);
        } finally {
          await w?.terminate();
        }
      }
      assert.deepEqual(results[1], results[0], `${target} #${k}`);
      checked++;
    }
    assert.ok(checked >= 5);
  });

  test("terminate during a job aborts it; the job removes its outputs", async () => {
    const { mem, job } = await memoryStore(5);
    const before = mem.snapshotFiles();
    let worker: CompactionWorker | undefined;
    let terminated: Promise<void> | undefined;
    // Terminate from inside the job's second output create, served on this thread.
    let creates = 0;
    const fs = new FaultInjectingFileSystem(mem, {
      onOp: (op) => {
        if (op.kind === "createWritable" && ++creates === 2) terminated = worker!.terminate();
      },
    });
    worker = new CompactionWorker({ fs, abortGraceMillis: 10_000 });
    const outcome = await worker.run(job).then(() => undefined, failure);
    await terminated;
    assert.equal((outcome as { code?: unknown }).code, "ABORTED");
    assert.deepEqual(mem.snapshotFiles(), before, "the aborted job removed its outputs");
    // A later job runs on a new thread.
    const again = await worker.run({ ...job, outputNumbers: job.outputNumbers.map((n) => n + 50) });
    assert.ok(again.outputs.length > 1);
    await worker.terminate();
  });
});
