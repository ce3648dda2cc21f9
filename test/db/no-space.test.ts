/**
 * A full disk heals without a reopen (src/db/no-space-recovery.ts): on the fault-injecting
 * file system, ENOSPC on a log append, on a log sync, in a flush, in a compaction, in a
 * manifest write and during the recovery itself (the probe and the recovery's flush
 * failing again) makes the store refuse writes with NO_SPACE (stats().backgroundError
 * set, reads served), and once the faults stop it resumes by itself ("resumed" event).
 * Every acknowledged write survives a reopen and a power loss (crash clone keeping no
 * unsynced data), also one taken the instant writes resume; the failed log is never
 * synced again. EIO instead (or during the recovery) is fatal: writes stay refused until
 * the store is reopened.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  FaultInjectingFileSystem,
  isKvError,
  type KvStore,
  MemoryFileSystem,
  type OpenOptions,
  open,
  type StoreEvent,
} from "../../src/index.js";
import type { FileOp } from "../../src/vfs/fault-injecting-file-system.js";
import { text } from "../support/bytes.js";
import { waitFor } from "../support/wait-for.js";

/** An error as the operating system reports a full disk. */
function enospc(op: FileOp): Error {
  return Object.assign(new Error(`ENOSPC: no space left on device, ${op.kind} '${op.path}'`), {
    code: "ENOSPC",
  });
}

function eio(op: FileOp): Error {
  return Object.assign(new Error(`EIO: i/o error, ${op.kind} '${op.path}'`), { code: "EIO" });
}

const WRITES: ReadonlySet<FileOp["kind"]> = new Set(["append", "preallocate", "datasync", "sync"]);

/** A store on a fault-injecting in-memory file system, its events, its acknowledged writes. */
class Rig {
  readonly mem = new MemoryFileSystem();
  readonly fs: FaultInjectingFileSystem;
  readonly events: StoreEvent[] = [];
  /** key -> value of every acknowledged write. */
  readonly acked = new Map<string, string>();
  /** Operations seen, once `recordOps` is on. */
  readonly ops: FileOp[] = [];
  recordOps = false;
  /** Called with each event, before it is recorded. */
  onEvent: ((e: StoreEvent) => void) | undefined;
  db!: KvStore;

  constructor() {
    this.fs = new FaultInjectingFileSystem(this.mem, {
      dropUnsyncedOnSyncFailure: true,
      onOp: (op) => {
        if (this.recordOps) this.ops.push(op);
      },
    });
  }

  async open(options: OpenOptions = {}): Promise<this> {
    this.db = await open("/db", {
      fs: this.fs,
      onEvent: (e) => {
        this.onEvent?.(e);
        this.events.push(e);
      },
      ...options,
    });
    return this;
  }

  /** Fails with `error` every operation that writes and matches `where`. */
  fill(where: (op: FileOp) => boolean, error: (op: FileOp) => Error = enospc): void {
    this.fs.setInjector((op) => (WRITES.has(op.kind) && where(op) ? error(op) : undefined));
  }

  free(): void {
    this.fs.setInjector(undefined);
  }

  async put(key: string, value: string, sync = true): Promise<void> {
    await this.db.put(key, value, { sync });
    this.acked.set(key, value);
  }

  /** Puts that may fail; returns the errors of those that did. */
  async tryPuts(prefix: string, n: number, sync = true): Promise<unknown[]> {
    const results = await Promise.allSettled(
      Array.from({ length: n }, (_, i) => this.put(`${prefix}${i}`, `${prefix}-value-${i}`, sync)),
    );
    return results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
  }

  count(type: StoreEvent["type"]): number {
    return this.events.filter((e) => e.type === type).length;
  }

  async resumed(): Promise<void> {
    await waitFor(() => this.count("resumed") > 0, "writes to resume");
    assert.equal(this.db.stats().backgroundError, undefined);
  }

  /** Every acknowledged write, read from `db`. */
  async checkAcked(db: KvStore, what: string): Promise<void> {
    for (const [k, v] of this.acked) {
      const got = await db.get(k);
      assert.equal(got === undefined ? undefined : text(got), v, `${what}: ${k}`);
    }
  }

  /** Closes, then checks every acknowledged write after a reopen and after a power loss. */
  async closeAndCheck(): Promise<void> {
    await this.db.close();
    const crashed = this.mem.crashClone({ unsyncedRetention: 0 });
    for (const [fs, what] of [
      [this.mem, "reopened"],
      [crashed, "after a power loss"],
    ] as const) {
      const again = await open("/db", { fs });
      await this.checkAcked(again, what);
      await again.put("after-reopen", "ok");
      await again.close();
    }
  }
}

const isLog = (op: FileOp) => op.path.endsWith(".log");
const isTable = (op: FileOp) => op.path.endsWith(".sst");
const isManifest = (op: FileOp) => /MANIFEST-\d+$/.test(op.path);

/** Asserts a write refused while the disk is full: NO_SPACE, saying so. */
function assertNoSpace(err: unknown): void {
  assert.ok(isKvError(err, "NO_SPACE"), String(err));
  assert.match((err as Error).message, /disk is full/);
}

describe("a full disk heals without a reopen", () => {
  test("ENOSPC on a log append: writes refused with NO_SPACE, reads served, then writes resume", async () => {
    const rig = await new Rig().open();
    for (let i = 0; i < 20; i++) await rig.put(`before${i}`, `v${i}`, i % 2 === 0);
    rig.fill(isLog);
    const failed = await rig.tryPuts("doomed", 8);
    assert.equal(failed.length, 8);
    for (const err of failed) assertNoSpace(err);
    assert.match(rig.db.stats().backgroundError ?? "", /disk is full/);
    await assert.rejects(rig.db.put("later", "x"), (e) => {
      assertNoSpace(e);
      return true;
    });
    assert.equal(text((await rig.db.get("before3"))!), "v3");
    assert.equal((await rig.db.scan()).length, 20);
    const logFailed = rig.events.find((e) => e.type === "log-failed");
    assert.ok(
      logFailed?.type === "log-failed" &&
        logFailed.op === "append" &&
        logFailed.code === "NO_SPACE",
    );
    const bg = rig.events.find((e) => e.type === "background-error");
    assert.ok(bg?.type === "background-error" && bg.recoverable);

    rig.free();
    await rig.resumed();
    for (let i = 0; i < 20; i++) await rig.put(`after${i}`, `w${i}`, i % 2 === 0);
    assert.equal(await rig.db.get("doomed0"), undefined);
    assert.equal(rig.db.stats().backgroundError, undefined);
    await rig.closeAndCheck();
  });

  test("ENOSPC on a log sync: the failed log is never synced again; a power loss the instant writes resume keeps every acknowledged write", async () => {
    const rig = await new Rig().open();
    // Unsynced writes: in the memtable and the log's page cache only, which the failed
    // sync drops (dropUnsyncedOnSyncFailure).
    for (let i = 0; i < 50; i++) await rig.put(`unsynced${i}`, `u${i}`, false);
    const failedLog = rig.db.stats().logNumber;
    let atResume: MemoryFileSystem | undefined;
    let immutableAtResume = -1;
    rig.onEvent = (e) => {
      if (e.type !== "resumed") return;
      atResume = rig.mem.crashClone({ unsyncedRetention: 0 });
      immutableAtResume = rig.db.stats().immutableMemtables;
    };
    rig.fill((op) => isLog(op) && (op.kind === "datasync" || op.kind === "sync"));
    const failed = await rig.tryPuts("doomed", 4);
    assert.equal(failed.length, 4);
    for (const err of failed) assertNoSpace(err);
    rig.recordOps = true;
    rig.free();
    await rig.resumed();
    const logPath = `/db/${String(failedLog).padStart(6, "0")}.log`;
    const resyncs = rig.ops.filter(
      (op) => op.path === logPath && (op.kind === "datasync" || op.kind === "sync"),
    );
    assert.deepEqual(resyncs, [], "the log whose sync failed was synced again");
    assert.equal(immutableAtResume, 0, "writes resumed before the memtables were flushed");
    assert.ok(atResume !== undefined);
    const clone = await open("/db", { fs: atResume });
    await rig.checkAcked(clone, "a power loss when writes resumed");
    await clone.close();
    await rig.put("after", "1");
    await rig.closeAndCheck();
  });

  test("ENOSPC in a flush: writes refused until space is freed, then the memtable reaches a table", async () => {
    const rig = await new Rig().open({ writeBufferSize: 16 * 1024 });
    for (let i = 0; i < 40; i++) await rig.put(`k${i}`, "x".repeat(100));
    rig.fill(isTable);
    // Fill the memtable until its flush starts and fails.
    for (let i = 0; i < 400 && rig.db.stats().backgroundError === undefined; i++) {
      await rig.put(`fill${i}`, "y".repeat(100)).catch(() => {});
      await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(() => rig.db.stats().backgroundError !== undefined, "the flush to fail");
    await assert.rejects(rig.put("refused", "x"), (e) => {
      assertNoSpace(e);
      return true;
    });
    assert.equal(text((await rig.db.get("k7"))!), "x".repeat(100));
    assert.equal(rig.count("log-failed"), 0);
    const flushesBefore = rig.db.stats().flushes;
    rig.free();
    await rig.resumed();
    assert.ok(rig.db.stats().flushes > flushesBefore);
    assert.equal(rig.db.stats().immutableMemtables, 0);
    await rig.put("after", "1");
    await rig.closeAndCheck();
  });

  test("ENOSPC in a compaction: writes refused, then compactions run again", async () => {
    const rig = await new Rig().open({ writeBufferSize: 8 * 1024, l0CompactionTrigger: 2 });
    rig.fill((op) => isTable(op) && rig.db.stats().levelFiles[0]! >= 2);
    for (let i = 0; i < 600 && rig.db.stats().backgroundError === undefined; i++) {
      await rig.put(`k${i % 200}`, `${i}`.padEnd(80, "z")).catch(() => {});
    }
    await waitFor(() => rig.db.stats().backgroundError !== undefined, "a compaction to fail");
    assert.ok(rig.count("compaction-failed") > 0);
    const compactions = rig.db.stats().compaction.compactions;
    rig.free();
    await rig.resumed();
    await rig.put("after", "1");
    await waitFor(() => rig.db.stats().compaction.compactions > compactions, "a compaction");
    await rig.closeAndCheck();
  });

  test("ENOSPC in a manifest write: a new manifest is written and writes resume", async () => {
    const rig = await new Rig().open();
    for (let i = 0; i < 30; i++) await rig.put(`k${i}`, `v${i}`);
    rig.fill(isManifest);
    await assert.rejects(rig.db.flush(), (e) => {
      assertNoSpace(e);
      return true;
    });
    await assert.rejects(rig.put("refused", "x"), (e) => {
      assertNoSpace(e);
      return true;
    });
    rig.free();
    await rig.resumed();
    await rig.put("after", "1");
    await rig.db.flush();
    await rig.closeAndCheck();
  });

  test("during the recovery: the probe and then the recovery's flush fail again; it retries until there is space", async () => {
    const rig = await new Rig().open();
    for (let i = 0; i < 20; i++) await rig.put(`k${i}`, `v${i}`, i % 3 === 0);
    rig.fill(() => true);
    const failed = await rig.tryPuts("doomed", 3);
    assert.equal(failed.length, 3);
    await waitFor(() => rig.count("recovery-failed") >= 2, "two failed probes");
    // Space for the probe (a temp file) and the log, not for tables yet.
    rig.fill(isTable);
    await waitFor(() => rig.count("recovery-failed") >= 3, "a failed recovery flush");
    assert.equal(rig.count("resumed"), 0);
    assert.notEqual(rig.db.stats().backgroundError, undefined);
    const retries = rig.events.flatMap((e) => (e.type === "recovery-failed" ? [e] : []));
    assert.ok(retries.at(-1)!.retryInMs > retries[0]!.retryInMs, "the back-off grows");
    rig.free();
    await rig.resumed();
    await rig.put("after", "1");
    await rig.closeAndCheck();
  });

  test("concurrent writers through a full disk: every acknowledged write survives, the refused ones are absent", async () => {
    const rig = await new Rig().open({ writeBufferSize: 32 * 1024 });
    const refused: string[] = [];
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const key = `w${w}-${i}`;
        try {
          await rig.put(key, `${w}:${i}`.padEnd(40, "."), i % 4 !== 0);
        } catch (err) {
          assert.ok(isKvError(err, "NO_SPACE"), String(err));
          refused.push(key);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    };
    const writers = Array.from({ length: 6 }, (_, w) => writer(w));
    await waitFor(() => rig.acked.size > 500, "writes before the disk fills");
    rig.fill(() => true);
    await waitFor(() => refused.length > 20, "refused writes");
    rig.free();
    await rig.resumed();
    const ackedAtResume = rig.acked.size;
    await waitFor(() => rig.acked.size > ackedAtResume + 500, "writes after");
    stop = true;
    await Promise.all(writers);
    for (const k of refused) assert.equal(await rig.db.get(k), undefined, k);
    await rig.closeAndCheck();
  });
});

describe("other write failures are fatal until the store is reopened", () => {
  test("EIO on a log append: READ_ONLY after the fault is gone, no recovery", async () => {
    const rig = await new Rig().open();
    await rig.put("a", "1");
    rig.fill(isLog, eio);
    const failed = await rig.tryPuts("doomed", 3);
    for (const err of failed) assert.ok(isKvError(err, "IO_ERROR"), String(err));
    rig.free();
    await new Promise((resolve) => setTimeout(resolve, 400));
    await assert.rejects(rig.db.put("later", "x"), (e) => isKvError(e, "READ_ONLY"));
    assert.equal(rig.count("resumed"), 0);
    assert.equal(rig.count("recovery-failed"), 0);
    const bg = rig.events.find((e) => e.type === "background-error");
    assert.ok(bg?.type === "background-error" && !bg.recoverable);
    assert.equal(text((await rig.db.get("a"))!), "1");
    await rig.closeAndCheck();
  });

  test("EIO during the recovery from a full disk turns the error fatal", async () => {
    const rig = await new Rig().open();
    await rig.put("a", "1");
    rig.fill(isLog);
    await rig.tryPuts("doomed", 2);
    rig.fill(() => true, eio);
    await waitFor(() => rig.count("background-error") === 2, "the fatal error");
    const last = rig.events.filter((e) => e.type === "background-error").at(-1);
    assert.ok(last?.type === "background-error" && !last.recoverable && last.code === "IO_ERROR");
    rig.free();
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(rig.count("resumed"), 0);
    await assert.rejects(rig.db.put("later", "x"), (e) => isKvError(e, "READ_ONLY"));
    await rig.closeAndCheck();
  });
});
