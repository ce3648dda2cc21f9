/**
 * Faults injected in the worker thread's flushes and compactions (compactionMode "worker"
 * on a fault-injecting in-memory file system, reached through the lockstep proxy) are
 * caught and reported exactly as the same fault of an inline flush or compaction: the same
 * background-error or compaction-failed event, the same KvError (code, message naming the
 * file) from later calls, the same stats. Each case runs the same seeded workload in both
 * modes, fails the same operation (the first of its kind on a table file after the
 * workload arms the injector), and compares what the store reported; in worker mode the
 * failed operation must have been the worker's.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  type KvStore,
  MemoryFileSystem,
  open,
  type StoreEvent,
} from "../../src/index.js";
import type { FileOp, FileOpKind } from "../../src/vfs/fault-injecting-file-system.js";
import { describeOp } from "../support/crash-points.js";
import { issuedByWorker } from "../support/worker-ops.js";

type Mode = "inline" | "worker";

/** What a run reported: events (without timings), errors, stats. */
interface Report {
  failedOp: string | undefined;
  byWorker: boolean;
  events: unknown[];
  errors: string[];
  backgroundError: string | undefined;
  compactionFailures: number;
  lastError: string | undefined;
}

const keyOf = (i: number) => `key${String(i).padStart(5, "0")}`;

/** A store whose file system fails the first `kind` operation on a table once armed. */
async function faultyStore(
  mode: Mode,
  kind: FileOpKind,
): Promise<{ db: KvStore; arm: () => void; report: Report }> {
  let armed = false;
  const report: Report = {
    failedOp: undefined,
    byWorker: false,
    events: [],
    errors: [],
    backgroundError: undefined,
    compactionFailures: 0,
    lastError: undefined,
  };
  const fs = new FaultInjectingFileSystem(new MemoryFileSystem(), {
    injector: (op: FileOp) => {
      if (!armed || op.kind !== kind || !op.path.endsWith(".sst")) return false;
      armed = false;
      report.failedOp = describeOp(op);
      report.byWorker = issuedByWorker();
      return true;
    },
  });
  const db = await open("/db", {
    fs,
    compactionMode: mode,
    // Large enough that only flush() and compactRange() flush: the fault lands at the same
    // point of the workload in both modes.
    writeBufferSize: 256 * 1024,
    blockSize: 256,
    targetFileSize: 2048,
    // Compactions only when asked (compactRange), so that the armed fault hits the job meant.
    l0CompactionTrigger: 100,
    l0SlowdownTrigger: 100,
    l0StopTrigger: 100,
    onEvent: (e: StoreEvent) => {
      if (e.type === "background-error" || e.type === "compaction-failed") report.events.push(e);
    },
  });
  return {
    db,
    arm: () => {
      armed = true;
    },
    report,
  };
}

function describeError(err: unknown): string {
  assert.ok(isKvError(err), `not a KvError: ${String(err)}`);
  return `${err.code}: ${err.message}${err.file === undefined ? "" : ` (file ${err.file})`}`;
}

/** Writes `n` keys (a batch of 20 at a time) from `start`. */
async function fill(db: KvStore, start: number, n: number): Promise<void> {
  for (let i = start; i < start + n; i += 20) {
    const batch = db.batch();
    for (let j = i; j < i + 20; j++) batch.put(keyOf(j), `value ${j} ${"x".repeat(60)}`);
    await db.write(batch);
  }
}

/**
 * Runs `workload` on a faulty store (see faultyStore) and returns what the store reported;
 * `record` notes an error a call rejected with.
 */
async function reported(
  mode: Mode,
  kind: FileOpKind,
  workload: (db: KvStore, arm: () => void, record: (err: unknown) => void) => Promise<void>,
): Promise<Report> {
  const { db, arm, report } = await faultyStore(mode, kind);
  try {
    await workload(db, arm, (err) => report.errors.push(describeError(err)));
    const s = db.stats();
    report.backgroundError = s.backgroundError;
    report.lastError = s.compaction.lastError;
    report.compactionFailures = s.compaction.failures;
  } finally {
    await db.close().catch(() => {});
  }
  return report;
}

/** A flush whose `kind` operation fails: the store refuses writes with the flush's error. */
function failedFlush(mode: Mode, kind: FileOpKind): Promise<Report> {
  return reported(mode, kind, async (db, arm, record) => {
    await fill(db, 0, 200);
    await db.flush();
    await fill(db, 200, 100);
    arm();
    await db.flush().catch(record);
    await db.put("after", "x").catch(record);
  });
}

/** A manual compaction whose `kind` operation fails: compactRange rejects with its error. */
function failedCompaction(mode: Mode, kind: FileOpKind): Promise<Report> {
  return reported(mode, kind, async (db, arm, record) => {
    for (let f = 0; f < 4; f++) {
      await fill(db, f * 37, 120);
      await db.flush();
    }
    arm();
    await db.compactRange().catch(record);
    // The store goes on: the next compaction (nothing armed) succeeds, the data reads back.
    await db.compactRange();
    const last = 37 * 3 + 119;
    assert.equal(String(await db.get(keyOf(last))), `value ${last} ${"x".repeat(60)}`);
  });
}

function checkSame(inline: Report, worker: Report, what: string): void {
  assert.ok(inline.failedOp !== undefined, `${what}: the fault was never injected`);
  assert.equal(inline.byWorker, false, `${what}: inline, the fault hit the main thread`);
  assert.equal(worker.byWorker, true, `${what}: worker mode, the fault hit the worker's operation`);
  const { byWorker: _a, ...a } = inline;
  const { byWorker: _b, ...b } = worker;
  assert.deepEqual(b, a, `${what}: worker mode reports what inline mode reports`);
}

describe("faults in the worker thread", () => {
  for (const kind of ["createWritable", "append", "sync", "close"] as const) {
    test(`a failed ${kind} of a worker flush's table is reported as inline: background error, writes refused`, async () => {
      const inline = await failedFlush("inline", kind);
      const worker = await failedFlush("worker", kind);
      checkSame(inline, worker, `flush ${kind}`);
      assert.equal(inline.events.length, 1);
      assert.match(inline.backgroundError ?? "", /^flush failed/);
      assert.ok(
        inline.backgroundError!.includes(".sst"),
        `the message names the table: ${inline.backgroundError}`,
      );
      assert.ok(inline.errors.length >= 2, inline.errors.join("\n"));
      assert.ok(
        inline.errors.every((e) => e.includes(".sst")),
        inline.errors.join("\n"),
      );
    });
  }

  for (const kind of ["openReadable", "read", "createWritable", "append", "sync"] as const) {
    test(`a failed ${kind} in a worker compaction is reported as inline: compaction-failed, compactRange rejects, the store goes on`, async () => {
      const inline = await failedCompaction("inline", kind);
      const worker = await failedCompaction("worker", kind);
      checkSame(inline, worker, `compaction ${kind}`);
      assert.equal(inline.compactionFailures, 1);
      assert.equal(inline.backgroundError, undefined);
      assert.equal(inline.errors.length, 1);
      assert.match(inline.errors[0]!, /^IO_ERROR: /);
      assert.ok(inline.errors[0]!.includes(".sst"), `names the table: ${inline.errors[0]}`);
    });
  }
});
