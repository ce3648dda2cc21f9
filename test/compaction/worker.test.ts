import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import {
  CompactionAbortedError,
  type CompactionJob,
  runCompaction,
} from "../../src/compaction/compaction-job.js";
import { compactionJob, outputNumbersNeeded, planRange } from "../../src/compaction/picker.js";
import { CompactionWorker } from "../../src/compaction/worker-pool.js";
import { deserializeError, serializeError } from "../../src/compaction/worker-protocol.js";
import { isKvError, KvError } from "../../src/errors.js";
import type { FileMetadata } from "../../src/version/file-metadata.js";
import { tableFilePath } from "../../src/version/file-names.js";
import { Version } from "../../src/version/version.js";
import { RealFileSystem } from "../../src/vfs/real-file-system.js";
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
      await assert.rejects(worker.run(missing), (err) => {
        assert.ok(isKvError(err, "IO_ERROR"), String(err));
        assert.match(err.message, /nowhere/);
        return true;
      });
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
    assert.match(other.message, /boom/);
  });
});
