/**
 * LogWriter.sync runs one fdatasync at a time, in call order: a sync called while another
 * is in flight issues its own once that one completed, and fails if it failed (two
 * fdatasyncs in flight on one file could share one writeback error, reported to only one
 * of them). close waits for a sync in flight, and a blocking sync refuses to run beside one.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { isKvError } from "../../src/errors.js";
import { LogWriter } from "../../src/wal/log-writer.js";
import { ByteWritableFile } from "./byte-files.js";

/** A file whose datasyncs wait until the test settles them, one by one. */
class GatedSyncFile extends ByteWritableFile {
  /** Settlers of the datasyncs issued and not yet settled, oldest first. */
  readonly inFlight: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  override async datasync(): Promise<void> {
    this.datasyncCalls++;
    await new Promise<void>((resolve, reject) => this.inFlight.push({ resolve, reject }));
  }
}

const turns = async (n = 5): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe("log sync order", () => {
  test("a sync called while one is in flight issues its fdatasync after that one completes", async () => {
    const file = new GatedSyncFile();
    const writer = new LogWriter(file, { formatVersion: 2 });
    writer.appendRecord(new Uint8Array(10));
    const first = writer.sync();
    const firstEnd = file.size;
    writer.appendRecord(new Uint8Array(20));
    const second = writer.sync();
    const secondEnd = file.size;
    await turns();
    assert.equal(file.datasyncCalls, 1, "the second fdatasync waits for the first");
    assert.ok(writer.syncing);
    file.inFlight.shift()!.resolve();
    await first;
    assert.equal(writer.syncedEnd, firstEnd);
    await turns();
    assert.equal(file.datasyncCalls, 2);
    file.inFlight.shift()!.resolve();
    await second;
    assert.equal(writer.syncedEnd, secondEnd);
    assert.ok(!writer.syncing);
  });

  test("when the sync in flight fails, the one queued behind it fails too and issues no fdatasync", async () => {
    const file = new GatedSyncFile();
    const writer = new LogWriter(file, { formatVersion: 2 });
    writer.appendRecord(new Uint8Array(10));
    const first = writer.sync();
    writer.appendRecord(new Uint8Array(20));
    const second = writer.sync();
    await turns();
    file.inFlight.shift()!.reject(Object.assign(new Error("EIO"), { code: "EIO" }));
    await assert.rejects(first, (err) => isKvError(err, "IO_ERROR"));
    await assert.rejects(second, (err) => isKvError(err, "READ_ONLY"));
    assert.equal(file.datasyncCalls, 1, "no second fdatasync after a failed one");
    assert.equal(writer.syncedEnd, 0);
  });

  test("close waits for the sync in flight; a blocking sync refuses to run beside one", async () => {
    const file = new GatedSyncFile();
    const writer = new LogWriter(file, { formatVersion: 2 });
    writer.appendRecord(new Uint8Array(10));
    const synced = writer.sync();
    assert.throws(() => writer.syncBlocking(), /a sync is in flight/);
    const closed = writer.close();
    await turns();
    assert.ok(!file.closed, "the file stays open while its fdatasync runs");
    file.inFlight.shift()!.resolve();
    await synced;
    await closed;
    assert.ok(file.closed);
  });
});

describe("preallocateOnceSynced", () => {
  test("a log of unsynced writes and background syncs gets no zeros ahead; the first sync starts preallocation", async () => {
    const file = new ByteWritableFile();
    const preallocateBytes = 64 * 1024;
    const writer = new LogWriter(file, {
      formatVersion: 2,
      preallocateBytes,
      preallocateOnceSynced: true,
    });
    for (let i = 0; i < 50; i++) writer.appendRecord(new Uint8Array(1000));
    const end = file.size;
    await writer.backgroundSync();
    writer.appendRecord(new Uint8Array(1000));
    assert.deepEqual(file.preallocations, [], "no zeros before a sync a writer waits on");
    assert.equal(file.physicalSize, file.size);
    assert.equal(writer.syncedEnd, end, "the background sync counts as a sync");
    await writer.sync();
    writer.appendRecord(new Uint8Array(1000));
    assert.ok(file.preallocations.length > 0, "preallocating after the first sync");
    assert.ok(file.physicalSize >= file.size + preallocateBytes / 2);
  });
});
